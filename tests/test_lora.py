"""LoRA / QLoRA (burn.nn.lora) and NF4 quantization (burn.nn.quant), checked against
independent numpy references, PyTorch and finite differences."""
import math

import numpy as np
import pytest

import burn
import burn.nn.functional as F
from burn.nn.quant import NF4_CODE, nf4_dequantize, nf4_matmul, nf4_nbytes, quantize_nf4
from burn.optim import ParamGroup

AD = burn.Device.flex().autodiff()


def _mlp(seed=0, dev=AD, sizes=(6, 16, 4)):
    burn.Device.flex().seed(seed)
    return burn.nn.Sequential(burn.nn.Linear(sizes[0], sizes[1], device=dev), burn.nn.ReLU(),
                              burn.nn.Linear(sizes[1], sizes[2], device=dev))


class _ConvNet(burn.nn.Module):
    def __init__(self, dev, seed=0):
        burn.Device.flex().seed(seed)
        self.conv = burn.nn.Conv2d(1, 4, 3, padding=1, device=dev)
        self.fc = burn.nn.ModuleDict({"hidden": burn.nn.Linear(4 * 4 * 4, 8, device=dev),
                                      "out": burn.nn.Linear(8, 3, device=dev)})

    def forward(self, x):
        h = F.relu(self.conv(x)).reshape((x.shape[0], -1))
        return self.fc["out"](F.relu(self.fc["hidden"](h)))


def _snapshot(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


# -- independent numpy reference of NF4 with double quantization -------------------------------

def _ref_levels():
    """NF4 levels from their definition (QLoRA appendix / bitsandbytes create_normal_map)."""
    from scipy.stats import norm
    offset = 0.9677083
    pos = norm.ppf(np.linspace(offset, 0.5, 9)[:-1])
    neg = -norm.ppf(np.linspace(offset, 0.5, 8)[:-1])
    v = np.sort(np.concatenate([pos, [0.0], neg]))
    return v / v.max()


def _ref_quantize(w, bs=64, sb=256):
    levels = np.asarray(NF4_CODE, np.float32)
    flat = w.astype(np.float32).ravel()
    n = flat.size
    nb = math.ceil(n / bs)
    padded = np.concatenate([flat, np.zeros(nb * bs - n, np.float32)])
    codes, absmax = [], []
    for i in range(nb):
        blk = padded[i * bs:(i + 1) * bs]
        a = np.float32(np.max(np.abs(blk)))
        absmax.append(a)
        normed = blk / (a if a > 0 else np.float32(1))
        codes.extend(int(np.argmin(np.abs(levels - v))) for v in normed)
    packed = np.array([(codes[2 * k] << 4) + codes[2 * k + 1] for k in range(len(codes) // 2)], np.uint8)
    absmax = np.array(absmax, np.float32)
    offset = np.float32(absmax.mean())
    qs, steps = [], []
    for j in range(math.ceil(nb / sb)):
        d = absmax[j * sb:(j + 1) * sb] - offset
        step = np.float32(np.max(np.abs(d)) / 127)
        steps.append(step)
        qs.extend(np.round(d / step) if step > 0 else np.zeros_like(d))
    qs, steps = np.array(qs, np.int8), np.array(steps, np.float32)
    # dequantize element by element
    deq_absmax = np.array([qs[i] * steps[i // sb] + offset for i in range(nb)], np.float32)
    deq = np.array([levels[c] * deq_absmax[k // bs] for k, c in enumerate(codes)], np.float32)[:n].reshape(w.shape)
    return packed, qs, steps, offset, absmax, deq_absmax, deq


def test_nf4_code_book_matches_its_definition():
    np.testing.assert_allclose(np.asarray(NF4_CODE), _ref_levels(), atol=2e-7)
    assert len(set(NF4_CODE)) == 16 and NF4_CODE[7] == 0.0


@pytest.mark.parametrize("shape", [(64, 32), (37, 11), (300, 130)])
def test_quantize_matches_numpy_reference(shape, rng):
    w = (rng.standard_normal(shape) * rng.uniform(0.01, 3, size=shape[1])).astype(np.float32)
    q = quantize_nf4(burn.tensor(w))
    packed, qs, steps, offset, _, _, deq = _ref_quantize(w)
    assert (q.codes.numpy() == packed).all()
    assert (q.scale_codes.numpy() == qs).all()
    np.testing.assert_array_equal(q.steps.numpy(), steps)
    assert q.offset.numpy()[0] == offset
    np.testing.assert_allclose(q.dequantize().numpy(), deq, rtol=1e-6, atol=1e-7)
    # the reference definition (burn ops, what backends without a kernel run) agrees with flex's kernel
    ref = nf4_dequantize.reference(*q.tensors, **q.attrs).numpy()
    np.testing.assert_allclose(ref, q.dequantize().numpy(), rtol=1e-6, atol=1e-7)


def test_dequantization_error_bound(rng):
    # heavy-tailed values and blocks of very different scale stress both quantization levels
    w = (rng.standard_t(3, size=(512, 96)) * np.exp(rng.normal(0, 1.5, size=(512, 1)))).astype(np.float32)
    q = quantize_nf4(burn.tensor(w))
    _, _, steps, _, absmax, deq_absmax, _ = _ref_quantize(w)
    levels = np.asarray(NF4_CODE)
    half_gap = np.max(np.diff(levels)) / 2
    assert abs(half_gap - 0.1519) < 1e-3
    err = np.abs(q.dequantize().numpy() - w).ravel()
    n = w.size
    blk = np.arange(n) // 64
    dq_err = np.abs(absmax - deq_absmax)
    assert (dq_err <= np.repeat(steps, 256)[:len(absmax)] / 2 * (1 + 1e-5) + 1e-6).all()
    bound = absmax[blk] * half_gap + dq_err[blk]
    assert (err <= bound * (1 + 1e-5) + 1e-6).all(), float(np.max(err - bound))
    # and the bound is not vacuous: the errors come within a factor of 2 of it
    assert np.max(err / bound) > 0.5


def test_memory_per_parameter(rng):
    w = burn.tensor(rng.standard_normal((256, 512)).astype(np.float32))
    q = quantize_nf4(w)
    n = 256 * 512
    assert q.nbytes == n // 2 + n // 64 + 4 * math.ceil(n / 64 / 256) + 4 == nf4_nbytes(n)
    assert q.bytes_per_element <= 0.52
    print(f"NF4 bytes per parameter: {q.bytes_per_element:.4f} (fp32: 4)")
    m = burn.nn.apply_qlora(burn.nn.Sequential(burn.nn.Linear(256, 512, device=AD)), rank=4)
    s = burn.nn.lora_summary(m)
    assert s.base_params == n and s.base_bytes == q.nbytes and s.base_bytes_per_param <= 0.52
    assert s.base_fp32_bytes == 4 * n
    # the float weight is gone: only the NF4 storage and the bias remain of the base
    held = {k: v.dtype.name for k, v in m.state_dict().items() if ".base." in k}
    assert held == {"layers.0.base.codes": "uint8", "layers.0.base.scale_codes": "int8",
                    "layers.0.base.steps": "float32", "layers.0.base.offset": "float32",
                    "layers.0.base.bias": "float32"}


def test_nf4_matmul_forward_and_gradient(rng):
    w = rng.standard_normal((40, 24)).astype(np.float32)
    q = quantize_nf4(burn.tensor(w))
    wd = q.dequantize().numpy()
    x = rng.standard_normal((2, 5, 40)).astype(np.float32)
    y = nf4_matmul(burn.tensor(x), *q.tensors, **q.attrs)
    assert y.shape == (2, 5, 24)
    np.testing.assert_allclose(y.numpy(), x @ wd, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nf4_matmul.reference(burn.tensor(x), *q.tensors, **q.attrs).numpy(), x @ wd,
                               rtol=1e-5, atol=1e-5)
    assert burn.testing.gradcheck(lambda t: nf4_matmul(t, *q.to_device(t.device).tensors, **q.attrs),
                                  rng.standard_normal((3, 40)))
    # analytic gradient: g @ W_deq.T
    xt = burn.tensor(x, device=AD).require_grad()
    qa = q.to_device(AD)
    g = rng.standard_normal((2, 5, 24)).astype(np.float32)
    grads = (nf4_matmul(xt, *qa.tensors, **qa.attrs) * burn.tensor(g, device=AD)).sum().backward()
    np.testing.assert_allclose(xt.grad(grads).numpy(), g @ wd.T, rtol=1e-5, atol=1e-5)


def test_nf4_errors_name_the_op():
    q = quantize_nf4(burn.ones((8, 8)))
    with pytest.raises(burn.ShapeError, match=r"burn::nf4_matmul.*last axis of x must be d_in"):
        nf4_matmul(burn.ones((2, 7)), *q.tensors, **q.attrs)
    with pytest.raises(burn.DTypeError, match=r"burn::nf4_dequantize: wrong storage dtypes: codes"):
        nf4_dequantize(q.codes.astype(burn.int32), *q.tensors[1:], **q.attrs)
    with pytest.raises(burn.ShapeError, match=r"storage does not match shape=\(9, 8\)"):
        nf4_dequantize(*q.tensors, shape=(9, 8))
    with pytest.raises(burn.BurnError, match="NaN"):
        quantize_nf4(burn.tensor([1.0, float("nan")]))


# -- LoRA -----------------------------------------------------------------------------------

@pytest.mark.parametrize("qlora", [False, True])
def test_output_unchanged_at_start(qlora, rng):
    m = _ConvNet(AD)
    x = burn.tensor(rng.standard_normal((5, 1, 4, 4)).astype(np.float32), device=AD)
    before = m(x).numpy()
    w = {k: (m.fc[k].weight.numpy(), m.fc[k].bias.numpy()) for k in ("hidden", "out")}
    h = F.relu(m.conv(x)).reshape((5, -1)).numpy()
    m = (burn.nn.apply_qlora if qlora else burn.nn.apply_lora)(m, rank=3, alpha=6)
    assert isinstance(m.fc["hidden"], burn.nn.LoRALinear) and isinstance(m.conv, burn.nn.Conv2d)
    assert (m.fc["out"].lora_B.numpy() == 0).all() and m.fc["out"].scale == 2.0
    after = m(x).numpy()
    if qlora:
        # the base itself is quantized: the output is the float network's with NF4-rounded
        # weights (numpy reference), and differs from the unquantized one
        deq = {k: _ref_quantize(w[k][0])[-1] for k in w}
        expect = np.maximum(h @ deq["hidden"] + w["hidden"][1], 0) @ deq["out"] + w["out"][1]
        np.testing.assert_allclose(after, expect, rtol=1e-5, atol=1e-5)
        assert np.abs(after - before).max() > 1e-4
    else:
        assert (after == before).all()


def test_digits_cnn_reading_weight_directly():
    # DigitsCNN reads hidden.weight / hidden.bias into F.linear_relu: the effective weight is used
    from burn.examples.digits import DigitsCNN
    burn.Device.flex().seed(3)
    m = DigitsCNN(AD)
    x = burn.rand((4, 64), device=AD)
    before = m(x).numpy()
    m = burn.nn.apply_lora(m, rank=2)
    np.testing.assert_array_equal(m(x).numpy(), before)
    m.hidden.lora_B.assign_(burn.ones((2, 64)) * 0.1)
    h = m.features(x.reshape((-1, 1, 8, 8)))
    expect = m.head(F.relu(m.hidden(h))).numpy()
    np.testing.assert_allclose(m(x).numpy(), expect, rtol=1e-5, atol=1e-5)
    assert np.abs(expect - before).max() > 1e-3


def test_only_adapters_train_and_base_is_bit_unchanged(rng):
    m = burn.nn.apply_lora(_ConvNet(AD), rank=2, alpha=4)
    base = {k: v for k, v in _snapshot(m).items() if "lora_" not in k}
    adapters = _snapshot(m)
    assert {n for n, p in m.named_parameters() if not p.frozen} == {
        "fc.hidden.lora_A", "fc.hidden.lora_B", "fc.out.lora_A", "fc.out.lora_B"}
    opt = burn.optim.Adam(m, lr=1e-2)
    x = burn.tensor(rng.standard_normal((8, 1, 4, 4)).astype(np.float32), device=AD)
    y = burn.tensor(rng.integers(0, 3, 8), device=AD)
    for i in range(3):
        grads = F.cross_entropy(m(x), y).backward()
        for name, p in m.named_parameters():
            g = p.grad(grads)
            if "lora_" in name:
                # B starts at zero, so A's first gradient is zero; every later one is not
                assert g is not None and (i > 0 or "lora_B" in name or not np.abs(g.numpy()).any())
            else:
                assert g is None, name
        opt.step(grads)
    after = _snapshot(m)
    for k, v in base.items():
        assert after[k].tobytes() == v.tobytes(), k
    for k in ("fc.hidden.lora_A", "fc.hidden.lora_B", "fc.out.lora_A", "fc.out.lora_B"):
        assert not np.array_equal(after[k], adapters[k]), k
    assert set(opt.state) == {"fc.hidden.lora_A", "fc.hidden.lora_B", "fc.out.lora_A", "fc.out.lora_B"}


def test_lora_forward_and_gradients_match_torch(rng):
    torch = pytest.importorskip("torch")
    lin = burn.nn.Linear(7, 5, device=AD)
    lora = burn.nn.LoRALinear(lin, rank=3, alpha=1.5)
    lora.lora_B.assign_(burn.tensor(rng.standard_normal((3, 5)).astype(np.float32), device=AD))
    x = rng.standard_normal((4, 7)).astype(np.float32)
    tw, tb = torch.tensor(lin.weight.numpy()), torch.tensor(lin.bias.numpy())
    ta = torch.tensor(lora.lora_A.numpy(), requires_grad=True)
    tB = torch.tensor(lora.lora_B.numpy(), requires_grad=True)
    tx = torch.tensor(x)
    ty = tx @ tw + tb + (tx @ ta @ tB) * 0.5
    (ty ** 2).sum().backward()
    y = lora(burn.tensor(x, device=AD))
    grads = (y * y).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lora.lora_A.grad(grads).numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(lora.lora_B.grad(grads).numpy(), tB.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_dropout_only_in_training(rng):
    burn.Device.flex().seed(1)
    m = burn.nn.apply_lora(_mlp(), rank=2, dropout=0.5)
    for layer in (m.layers[0], m.layers[2]):
        layer.lora_B.assign_(burn.ones(layer.lora_B.shape) * 0.3)
    x = burn.tensor(rng.standard_normal((64, 6)).astype(np.float32), device=AD)
    m.eval()
    y_eval = m(x).numpy()
    lin0 = m.layers[0]
    direct = lin0.base(x) + x @ lin0.lora_A @ lin0.lora_B * lin0.scale
    np.testing.assert_allclose(m.layers[0](x).numpy(), direct.numpy(), rtol=1e-5, atol=1e-5)
    m.train()
    assert not np.allclose(m(x).numpy(), y_eval)


@pytest.mark.parametrize("qlora", [False, True])
def test_merge_equals_adapted_model(qlora, rng):
    m = (burn.nn.apply_qlora if qlora else burn.nn.apply_lora)(_ConvNet(AD), rank=3, alpha=5)
    for _, layer in [(p, l) for p, l in m.named_modules() if isinstance(l, burn.nn.LoRALinear)]:
        layer.lora_B.assign_(burn.tensor(rng.standard_normal(layer.lora_B.shape).astype(np.float32), device=AD))
    x = burn.tensor(rng.standard_normal((6, 1, 4, 4)).astype(np.float32), device=AD)
    y = m(x).numpy()
    merged = burn.nn.merge_lora(m)
    assert type(merged.fc["hidden"]) is burn.nn.Linear and type(merged.fc["out"]) is burn.nn.Linear
    assert not any("lora_" in n for n, _ in merged.named_parameters())
    np.testing.assert_allclose(merged(x).numpy(), y, rtol=1e-5, atol=1e-5)
    # a bare layer round-trips through the return value
    lin = burn.nn.Linear(3, 2, device=AD)
    assert type(burn.nn.merge_lora(burn.nn.apply_lora(lin, rank=1))) is burn.nn.Linear


def test_adapters_save_load_round_trip(tmp_path, rng):
    a = burn.nn.apply_lora(_ConvNet(AD), rank=2, alpha=3)
    for name, p in burn.nn.lora_state_dict(a).items():
        p.assign_(burn.tensor(rng.standard_normal(p.shape).astype(np.float32), device=AD))
    path = tmp_path / "adapters.safetensors"
    burn.nn.save_lora(a, path)
    saved = burn.nn.load_state_dict(path)
    assert sorted(saved) == ["fc.hidden.lora_A", "fc.hidden.lora_B", "fc.out.lora_A", "fc.out.lora_B"]
    b = _ConvNet(AD)
    b.load_state_dict(_snapshot(_strip(a)))          # same base weights
    b = burn.nn.apply_lora(b, rank=2, alpha=3)
    burn.nn.load_lora(b, path)
    for k, v in burn.nn.lora_state_dict(a).items():
        assert burn.nn.lora_state_dict(b)[k].numpy().tobytes() == v.numpy().tobytes()
    x = burn.tensor(rng.standard_normal((3, 1, 4, 4)).astype(np.float32), device=AD)
    np.testing.assert_array_equal(b(x).numpy(), a(x).numpy())
    assert all(not p.frozen for p in burn.nn.lora_state_dict(b).values())
    # a model adapted differently: every mismatch in one error
    c = burn.nn.apply_lora(_ConvNet(AD), rank=4, alpha=3, targets=ParamGroup.from_paths("fc.hidden"))
    with pytest.raises(burn.BurnError) as e:
        burn.nn.load_lora(c, path)
    msg = str(e.value)
    assert "unexpected: fc.out.lora_A" in msg and "shape of fc.hidden.lora_A" in msg
    d = burn.nn.apply_lora(_ConvNet(AD), rank=2, alpha=7)
    with pytest.raises(burn.BurnError, match="alpha of fc.hidden: file 3.0, model 7.0"):
        burn.nn.load_lora(d, path)


def _strip(m):
    """A plain _ConvNet carrying m's base weights (adapters dropped)."""
    out = _ConvNet(AD)
    out.conv.load_state_dict({"weight": m.conv.weight.numpy(), "bias": m.conv.bias.numpy()})
    for k in ("hidden", "out"):
        out.fc[k].load_state_dict({"weight": m.fc[k].base.weight.numpy(), "bias": m.fc[k].base.bias.numpy()})
    return out


def test_qlora_model_state_round_trip(tmp_path, rng):
    a = burn.nn.apply_qlora(_mlp(sizes=(70, 20, 3)), rank=2)
    a.layers[2].lora_B.assign_(burn.ones((2, 3)))
    p = tmp_path / "qlora.safetensors"
    a.save(p)
    b = burn.nn.apply_qlora(_mlp(seed=5, sizes=(70, 20, 3)), rank=2).load(p)
    x = burn.tensor(rng.standard_normal((4, 70)).astype(np.float32), device=AD)
    np.testing.assert_array_equal(b(x).numpy(), a(x).numpy())


def test_optimizer_groups_select_adapters_by_regex(rng):
    m = burn.nn.apply_lora(_mlp(), rank=2)
    opt = burn.optim.SGD(m, lr=0.0, groups=[(ParamGroup.from_regex(r"\.lora_"), {"lr": 0.5})])
    assert opt.param_groups[0]["paths"] == ["layers.0.lora_A", "layers.0.lora_B", "layers.2.lora_A",
                                            "layers.2.lora_B"]
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[-1]["name"] == "default"
    x = burn.tensor(rng.standard_normal((5, 6)).astype(np.float32), device=AD)
    b0 = m.layers[2].lora_B.numpy().copy()
    grads = (m(x) ** 2).sum().backward()
    g = m.layers[2].lora_B.grad(grads).numpy()
    opt.step(grads)
    np.testing.assert_allclose(m.layers[2].lora_B.numpy(), b0 - 0.5 * g, rtol=1e-6, atol=1e-7)


def test_targets_and_errors():
    m = burn.nn.apply_lora(_ConvNet(AD), rank=2, targets=ParamGroup.from_glob("fc.out.*"))
    assert isinstance(m.fc["out"], burn.nn.LoRALinear) and type(m.fc["hidden"]) is burn.nn.Linear
    assert all(p.frozen for n, p in m.named_parameters() if "lora_" not in n)
    with pytest.raises(burn.BurnError, match="already has LoRA adapters"):
        burn.nn.apply_lora(m, rank=2)
    all_weights = burn.nn.apply_lora(_ConvNet(AD), rank=2, targets=ParamGroup.from_glob("*.weight"))
    assert isinstance(all_weights.conv, burn.nn.LoRAConv)
    with pytest.raises(burn.BurnError, match=r"not weights of Linear, Conv1d, Conv2d or Embedding layers: table"):
        burn.nn.apply_lora(_RawTable(), rank=2, targets=ParamGroup.from_glob("*"))
    with pytest.raises(burn.BurnError, match="no layer weight selected"):
        burn.nn.apply_lora(_ConvNet(AD), rank=2, targets=ParamGroup.from_paths("fc.nothing"))
    with pytest.raises(burn.BurnError, match="rank must be a positive int"):
        burn.nn.apply_lora(_mlp(), rank=0)
    s = burn.nn.lora_summary(burn.nn.apply_lora(_mlp(), rank=2))
    assert s.trainable == 6 * 2 + 2 * 16 + 16 * 2 + 2 * 4 and s.total == s.trainable + 6 * 16 + 16 + 16 * 4 + 4
    assert "trainable" in str(s) and 0 < s.fraction < 1


def test_qlora_fine_tune_improves_accuracy():
    from sklearn.datasets import load_digits
    d = load_digits()
    x, y = (d.data / 16).astype(np.float32), d.target
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    tr, te = slice(0, 1300), slice(1300, None)
    model = _mlp(seed=0, sizes=(64, 64, 10))

    def fit(m, opt, xs, ys, steps, smoothing=0.0):
        r = np.random.default_rng(1)
        for _ in range(steps):
            i = r.integers(0, len(xs), 128)
            opt.step(F.cross_entropy(m(burn.tensor(xs[i], device=AD)), burn.tensor(ys[i], device=AD),
                                     label_smoothing=smoothing).backward())

    def acc(m, xs, ys):
        with burn.no_grad():
            return float((burn.argmax(m(burn.tensor(xs, device=AD)), axis=1).numpy() == ys).mean())

    old = y[tr] < 5
    fit(model, burn.optim.Adam(model, lr=1e-2), x[tr][old], y[tr][old], 150, smoothing=0.1)
    new_te = y[te] >= 5
    model = burn.nn.apply_qlora(model, rank=8, alpha=16)
    before = acc(model, x[te][new_te], y[te][new_te])
    fit(model, burn.optim.Adam(model, lr=1e-2), x[tr][~old], y[tr][~old], 150)
    after = acc(model, x[te][new_te], y[te][new_te])
    assert before < 0.2 and after > 0.85, (before, after)


def test_lora_digits_example_runs():
    from burn.examples import lora_digits
    r = lora_digits.main(["--pretrain-epochs", "8", "--finetune-epochs", "12"])
    assert r["QLoRA"]["bytes_per_param"] <= 0.52 and r["LoRA"]["bytes_per_param"] == 4.0
    assert r["LoRA"]["after"] > r["LoRA"]["before"] + 0.5 and r["QLoRA"]["after"] > r["QLoRA"]["before"] + 0.5


# -- LoRA on convolutions and embeddings (PEFT's layouts) -----------------------------------------

class _RawTable(burn.nn.Module):
    def __init__(self):
        self.table = burn.nn.Parameter(burn.ones((3, 4), device=AD))
        self.head = burn.nn.Linear(4, 2, device=AD)


class _ConvEmbNet(burn.nn.Module):
    def __init__(self, seed=0):
        burn.Device.flex().seed(seed)
        self.emb = burn.nn.Embedding(10, 4, padding_idx=0, device=AD)
        self.conv1 = burn.nn.Conv1d(4, 6, 3, padding=1, device=AD)
        self.conv2 = burn.nn.Conv2d(1, 5, 3, stride=2, padding=1, dilation=1, device=AD)
        self.head = burn.nn.Linear(6 + 5, 3, device=AD)

    def forward(self, tokens, image):
        h = F.relu(self.conv1(burn.permute_dims(self.emb(tokens), (0, 2, 1)))).mean(axis=-1)
        g = F.relu(self.conv2(image)).mean(axis=(-2, -1))
        return self.head(burn.concat([h, g], axis=-1))


def _randomize_adapters(model, rng):
    for name, p in model.named_parameters():
        if "lora_" in name:
            p.assign_(burn.tensor(rng.standard_normal(p.shape), dtype=p.dtype))


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 0, 1), (1, "same", 2)])
def test_lora_conv2d_matches_torch_with_the_rank_r_kernel(rng, stride, padding, dilation):
    torch = pytest.importorskip("torch")
    conv = burn.nn.Conv2d(3, 4, 3, stride=stride, padding=padding, dilation=dilation, device=AD)
    lora = burn.nn.LoRAConv(conv, rank=2, alpha=6)
    _randomize_adapters(lora, rng)
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    A, B = lora.lora_A.numpy(), lora.lora_B.numpy()
    # independent reference: the base kernel plus scale * (B @ A), one torch convolution
    w = conv.weight.numpy() + 3.0 * (B.reshape(4, 2) @ A.reshape(2, -1)).reshape(conv.weight.shape)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, torch.tensor(w), torch.tensor(conv.bias.numpy()), stride=stride,
                                    padding=padding, dilation=dilation)
    bx = burn.tensor(x, device=AD).require_grad()
    by = lora(bx)
    np.testing.assert_allclose(by.numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    wts = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    grads = (by * burn.tensor(wts, device=AD)).sum().backward()
    (tg,) = torch.autograd.grad((ty * torch.tensor(wts)).sum(), tx)
    np.testing.assert_allclose(grads.get(bx).numpy(), tg.numpy(), rtol=1e-4, atol=1e-4)
    assert grads.get(conv.weight) is None and grads.get(lora.lora_A) is not None


def test_lora_conv1d_and_embedding_forward_and_merge(rng):
    m = burn.nn.apply_lora(_ConvEmbNet(), rank=2, alpha=4,
                           targets=ParamGroup.from_paths("emb", "conv1", "conv2"))
    assert isinstance(m.emb, burn.nn.LoRAEmbedding) and isinstance(m.conv1, burn.nn.LoRAConv)
    assert isinstance(m.conv2, burn.nn.LoRAConv) and type(m.head) is burn.nn.Linear
    tokens = burn.tensor(rng.integers(0, 10, (3, 7)), device=AD)
    image = burn.tensor(rng.standard_normal((3, 1, 8, 8)), dtype=burn.float32, device=AD)
    before = _ConvEmbNet()(tokens, image).numpy()
    np.testing.assert_array_equal(m(tokens, image).numpy(), before)        # zero-initialized updates
    _randomize_adapters(m, rng)
    adapted = m(tokens, image).numpy()
    assert np.abs(adapted - before).max() > 1e-3
    # the embedding update is scale * A @ B, zero at padding_idx
    emb = m.emb
    want = emb.base.weight.numpy() + 2.0 * emb.lora_A.numpy() @ emb.lora_B.numpy()
    want[0] = 0.0
    i = burn.tensor([[0, 3, 9]], device=AD)
    np.testing.assert_allclose(emb(i).numpy()[0], want[[0, 3, 9]], rtol=1e-5, atol=1e-5)
    merged = burn.nn.merge_lora(m)
    assert type(merged.emb) is burn.nn.Embedding and type(merged.conv1) is burn.nn.Conv1d
    np.testing.assert_allclose(merged(tokens, image).numpy(), adapted, rtol=1e-4, atol=1e-5)


def test_lora_conv_and_embedding_train_and_save_alone(tmp_path, rng):
    m = burn.nn.apply_lora(_ConvEmbNet(), rank=2, targets=ParamGroup.from_paths("emb", "conv1", "conv2"))
    base = {k: v for k, v in _snapshot(m).items() if "lora_" not in k}
    tokens = burn.tensor(rng.integers(1, 10, (16, 6)), device=AD)
    image = burn.tensor(rng.standard_normal((16, 1, 8, 8)), dtype=burn.float32, device=AD)
    target = burn.tensor(rng.integers(0, 3, 16), device=AD)
    opt = burn.optim.Adam(m.parameters(), lr=0.1)
    losses = []
    for _ in range(40):
        loss = F.cross_entropy(m(tokens, image), target)
        opt.step(loss.backward())
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0], losses
    after = _snapshot(m)
    assert all((after[k] == v).all() for k, v in base.items())            # the base never moved
    assert np.abs(m.emb.lora_A.numpy()[0]).max() == 0.0                   # padding row: no update
    path = tmp_path / "adapters.safetensors"
    burn.nn.save_lora(m, path)
    fresh = burn.nn.apply_lora(_ConvEmbNet(), rank=2, targets=ParamGroup.from_paths("emb", "conv1", "conv2"))
    burn.nn.load_lora(fresh, path)
    np.testing.assert_array_equal(fresh(tokens, image).numpy(), m(tokens, image).numpy())


def test_lora_conv_embedding_errors():
    with pytest.raises(burn.BurnError, match=r"LoRAConv: grouped convolutions \(groups=2\)"):
        burn.nn.LoRAConv(burn.nn.Conv2d(4, 4, 3, groups=2), rank=1)
    with pytest.raises(burn.BurnError, match="LoRAEmbedding: dropout applies to the input"):
        burn.nn.LoRAEmbedding(burn.nn.Embedding(4, 2), rank=1, dropout=0.1)
    with pytest.raises(burn.BurnError, match="LoRAConv: base must be a burn.nn.Conv2d or Conv1d"):
        burn.nn.LoRAConv(burn.nn.Linear(2, 2), rank=1)
