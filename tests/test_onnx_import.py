"""burn.onnx.load against independent references: models built and exported with PyTorch
(torch.onnx.export) load and match torch's outputs and parameter gradients, and
onnxruntime's outputs; single-node graphs match onnxruntime op by op; the imported module
takes dynamic batch sizes, saves and loads, takes LoRA and fine-tunes; bad files and
unsupported operators give one clear OnnxImportError before anything runs."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import burn

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper, numpy_helper  # noqa: E402

from burn_onnx.errors import OnnxImportError  # noqa: E402

from devices import wgpu_or_skip  # noqa: E402


# -- models built with torch ------------------------------------------------------------------

class _CNN(torch.nn.Module):
    """Conv, BatchNorm, MaxPool, AvgPool, Resize (nearest), GlobalAveragePool, Flatten, Gemm."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.c2 = torch.nn.Conv2d(4, 6, 3, padding=1)
        self.up = torch.nn.Upsample(scale_factor=2, mode="nearest")
        self.fc = torch.nn.Linear(6 * 4 * 4, 5)

    def forward(self, x):
        h = torch.max_pool2d(torch.relu(self.bn(self.c1(x))), 2)
        h = self.up(torch.nn.functional.avg_pool2d(self.c2(h), 2))
        g = torch.nn.functional.adaptive_avg_pool2d(h, 1)
        return self.fc(torch.flatten(h, 1)) + g.flatten(1).sum(1, keepdim=True)


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 3))


def _encoder():
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, activation="gelu")
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _perturb(model, seed):
    """Distinct random values everywhere (TransformerEncoder's layers start as copies, and the
    exporter would share identical weights); BatchNorm statistics away from 0/1."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)
    return model.eval()


def _export(model, x, path, axes, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=kw.pop("opset", 17),
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": axes, "y": {0: "b"}},
                          **kw)
    return str(path)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{name: (torch model, onnx path, example input shape)} exported once for the module."""
    d = tmp_path_factory.mktemp("onnx")
    torch.manual_seed(0)
    out = {}
    mlp = _perturb(_mlp(), 1)
    out["mlp"] = (mlp, _export(mlp, torch.randn(4, 6), d / "mlp.onnx", {0: "b"}), (6,))
    cnn = _perturb(_CNN(), 2)
    out["cnn"] = (cnn, _export(cnn, torch.randn(2, 1, 8, 8), d / "cnn.onnx", {0: "b"}, do_constant_folding=False),
                  (1, 8, 8))
    enc = _perturb(_encoder(), 3)
    out["enc"] = (enc, _export(enc, torch.randn(2, 5, 16), d / "enc.onnx", {0: "b"}, opset=18), (5, 16))
    return out


def _rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-6))


def _torch_param_for(tmodel, value):
    """The torch parameter holding ``value`` (as stored, or transposed), and whether transposed."""
    for p in tmodel.parameters():
        t = p.detach().numpy()
        if t.shape == value.shape and np.array_equal(t, value):
            return p, False
        if t.ndim == 2 and t.T.shape == value.shape and np.array_equal(t.T, value):
            return p, True
    return None, False


def _check_against_torch(name, exported, device, batch, tol=1e-5):
    tmodel, path, shape = exported[name]
    m = burn.onnx.load(path, device=device)
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch,) + tuple(shape)).astype(np.float32)
    tx = torch.from_numpy(x)
    ty = tmodel(tx)
    r = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.from_numpy(r)).sum().backward()
    y = m(burn.tensor(x, device=device))
    assert _rel(y.numpy(), ty.detach().numpy()) < tol
    grads = (y * burn.tensor(r, device=device)).sum().backward()
    checked = 0
    for pname, p in m.named_parameters():
        tp, transposed = _torch_param_for(tmodel, p.numpy())
        if tp is None:
            continue
        g = p.grad(grads).numpy()
        want = tp.grad.numpy().T if transposed else tp.grad.numpy()
        assert _rel(g, want) < 1e-4, pname
        checked += 1
    for p in tmodel.parameters():
        p.grad = None
    assert checked == len(list(tmodel.parameters())), "every torch parameter is an imported parameter"
    return m


@pytest.mark.parametrize("name", ["mlp", "cnn", "enc"])
def test_torch_exported_models_match_torch_outputs_and_parameter_grads(exported, name):
    m = _check_against_torch(name, exported, burn.Device.flex().autodiff(), batch=4)
    # a batch size the export never traced (the legacy exporter bakes the encoder's sequence length in)
    _check_against_torch(name, exported, burn.Device.flex().autodiff(), batch=3)
    assert m.num_params() == sum(p.numel() for p in exported[name][0].parameters())


def test_mlp_weights_are_linear_layers_named_from_the_graph(exported):
    m = burn.onnx.load(exported["mlp"][1])
    assert isinstance(m.__dict__["0"], burn.nn.Linear) and isinstance(m.__dict__["4"], burn.nn.Linear)
    names = [n for n, _ in m.named_parameters()]
    assert sorted(names) == sorted(n for n, _ in exported["mlp"][0].named_parameters())
    assert m.state_dict()["0.weight"].shape == (6, 16)          # burn's Linear layout [d_in, d_out]


def test_encoder_plan_folds_shape_arithmetic_and_is_reused(exported):
    m = burn.onnx.load(exported["enc"][1])
    x = burn.randn((2, 5, 16))
    y1 = m(x).numpy()
    plan = next(iter(m._onnx_plans.values()))
    assert len(m._onnx_plans) == 1 and len(plan.steps) < len(m._onnx_nodes)
    assert not any(n.op == "Constant" for n in m._onnx_nodes)       # folded at load
    np.testing.assert_array_equal(m(x).numpy(), y1)                 # the replay computes the same
    m(burn.randn((3, 5, 16)))
    assert len(m._onnx_plans) == 2


@pytest.mark.parametrize("opset", [13, 15, 20])
def test_mlp_and_cnn_exported_at_other_opsets_match_torch(tmp_path, opset):
    cnn = _perturb(_CNN(), 8)
    path = _export(cnn, torch.randn(2, 1, 8, 8), tmp_path / "cnn.onnx", {0: "b"}, opset=opset,
                   do_constant_folding=False)
    x = torch.randn(3, 1, 8, 8)
    assert _rel(burn.onnx.load(path)(burn.tensor(x.numpy())).numpy(), cnn(x).detach().numpy()) < 1e-5
    mlp = _perturb(_mlp(), 9)
    path = _export(mlp, torch.randn(2, 6), tmp_path / "mlp.onnx", {0: "b"}, opset=opset)
    x = torch.randn(3, 6)
    assert _rel(burn.onnx.load(path)(burn.tensor(x.numpy())).numpy(), mlp(x).detach().numpy()) < 1e-5


@pytest.mark.parametrize("name", ["mlp", "cnn", "enc"])
def test_imported_models_agree_with_onnxruntime(exported, name):
    _, path, shape = exported[name]
    x = np.random.default_rng(5).standard_normal((6,) + shape).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = burn.onnx.load(path)(burn.tensor(x)).numpy()
    assert _rel(got, want) < 1e-5


def test_encoder_from_the_dynamo_exporter_matches_torch(tmp_path):
    pytest.importorskip("onnxscript")
    enc = _perturb(_encoder(), 4)
    x = torch.randn(2, 5, 16)
    path = str(tmp_path / "enc_dynamo.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            # optimize=False: twice as fast to export, and the graph keeps more to import
            # (CastLike, Gelu, Shape arithmetic that the optimizer would fold)
            torch.onnx.export(enc, (x,), path, dynamo=True, input_names=["x"], optimize=False,
                              dynamic_shapes=({0: torch.export.Dim("b")},))
    m = burn.onnx.load(path)
    for b in (2, 3):
        xb = torch.randn(b, 5, 16)
        assert _rel(m(burn.tensor(xb.numpy())).numpy(), enc(xb).detach().numpy()) < 1e-5


def test_float16_model_matches_torch_within_2e2(tmp_path):
    mlp = _perturb(_mlp(), 6).half()
    x = torch.randn(5, 6).half()
    path = _export(mlp, x, tmp_path / "mlp16.onnx", {0: "b"})
    m = burn.onnx.load(path)
    assert all(p.dtype is burn.float16 for p in m.parameters())
    y = m(burn.tensor(x.numpy()))
    assert y.dtype is burn.float16
    want = mlp.float()(x.float()).detach().numpy()
    assert _rel(y.numpy().astype(np.float32), want) < 2e-2


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_imported_models_run_on_wgpu(exported, name):
    dev = wgpu_or_skip()
    _check_against_torch(name, exported, dev.autodiff(), batch=3, tol=1e-4)


def test_save_and_load_state_of_an_imported_model(exported, tmp_path):
    path = exported["cnn"][1]
    m = burn.onnx.load(path)
    for p in m.parameters():
        p.assign_(p * 1.5)
    f = str(tmp_path / "cnn.safetensors")
    m.save(f)
    fresh = burn.onnx.load(path)
    x = burn.randn((2, 1, 8, 8))
    before = fresh(x).numpy()
    fresh.load(f)
    np.testing.assert_allclose(fresh(x).numpy(), m(x).numpy(), rtol=1e-6, atol=1e-6)
    assert np.abs(before - m(x).numpy()).max() > 1e-3
    assert {n for n, _ in fresh.named_buffers()} == {"bn.running_mean", "bn.running_var"}


def test_apply_lora_then_fine_tuning_lowers_the_loss_and_trains_only_adapters(exported):
    dev = burn.Device.flex().autodiff()
    m = burn.onnx.load(exported["enc"][1], device=dev)
    m = burn.nn.apply_lora(m, rank=2, alpha=4)
    adapted = [p for p, mod in m.named_modules() if isinstance(mod, burn.nn.LoRALinear)]
    assert len(adapted) == 8                                  # in_proj, out_proj, linear1, linear2 x 2 layers
    base = {n: p.numpy().copy() for n, p in m.named_parameters()}
    opt = burn.optim.Adam([p for p in m.parameters() if not p.frozen], lr=1e-2)
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((8, 5, 16)).astype(np.float32), device=dev)
    target = burn.tensor(rng.standard_normal((8, 5, 16)).astype(np.float32), device=dev)
    losses = []
    for _ in range(6):
        loss = ((m(x) - target) ** 2).mean()
        losses.append(loss.item())
        opt.step(loss.backward())
    assert losses[-1] < losses[0]
    for n, p in m.named_parameters():
        changed = not np.array_equal(base[n], p.numpy())
        assert changed == ("lora_" in n), n           # the adapters train, nothing else moves


def _torch_more():
    nn = torch.nn
    return {
        "bilinear-upsample": (nn.Upsample(scale_factor=2, mode="bilinear"), (2, 5, 4)),
        "bicubic-align-corners": (nn.Upsample(size=(7, 5), mode="bicubic", align_corners=True), (2, 5, 4)),
        "reflection-pad": (nn.ReflectionPad2d((1, 2, 3, 0)), (2, 5, 4)),
        "replication-pad": (nn.ReplicationPad2d((2, 0, 1, 1)), (2, 5, 4)),
        "circular-conv": (nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), (2, 5, 4)),
        "group-norm": (nn.GroupNorm(2, 4), (4, 3, 3)),
        "instance-norm": (nn.InstanceNorm2d(4, affine=True), (4, 3, 3)),
        "pixel-shuffle": (nn.Sequential(nn.Conv2d(2, 8, 1), nn.PixelShuffle(2)), (2, 3, 3)),
        "silu-mish-hardswish-prelu": (nn.Sequential(nn.Linear(5, 6), nn.SiLU(), nn.Mish(), nn.Hardswish(),
                                                    nn.PReLU(6)), (5,)),
        "lstm-2-layers-bidirectional": (_Recurrent(nn.LSTM(4, 5, num_layers=2, bidirectional=True,
                                                           batch_first=True)), (6, 4)),
        "gru": (_Recurrent(nn.GRU(4, 3)), (6, 4)),
    }


class _Recurrent(torch.nn.Module):
    """An RNN's output sequence plus its final hidden state (Y and Y_h both used)."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        y, h = self.rnn(x)
        h = h[0] if isinstance(h, tuple) else h
        return y.sum(-1, keepdim=True) * h.sum(0).mean()


@pytest.mark.parametrize("name", sorted(_torch_more()))
def test_more_torch_layers_match_torch_outputs_and_input_grads(name, tmp_path):
    torch.manual_seed(0)
    tmodel, shape = _torch_more()[name]
    tmodel = _perturb(tmodel, 5).eval()
    path = _export(tmodel, torch.randn((2,) + shape), tmp_path / "m.onnx", {0: "b"})
    dev = burn.Device.flex().autodiff()
    m = burn.onnx.load(path, device=dev)
    x = np.random.default_rng(0).standard_normal((3,) + shape).astype(np.float32)
    tx = torch.from_numpy(x).requires_grad_()
    ty = tmodel(tx)
    r = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.from_numpy(r)).sum().backward()
    bx = burn.tensor(x, device=dev).require_grad()
    y = m(bx)
    assert _rel(y.numpy(), ty.detach().numpy()) < 1e-5
    g = bx.grad((y * burn.tensor(r, device=dev)).sum().backward())
    assert _rel(g.numpy(), tx.grad.numpy()) < 1e-4


# -- single-node graphs against onnxruntime ------------------------------------------------------

def _graph(op, inputs, attrs=None, inits=(), n_out=1, opset=18):
    """A one-node model: ``inputs`` [(name, array)] are graph inputs, ``inits`` [(name, array)] initializers."""
    def info(name, a):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
    outs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in inits], outs, **(attrs or {}))
    g = helper.make_graph([node], "g", [info(n, a) for n, a in inputs],
                          [helper.make_empty_tensor_value_info(o) for o in outs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)   # declares the outputs' types


_R = np.random.default_rng(7)
_X = _R.standard_normal((2, 3, 4)).astype(np.float32)
_I = np.array([[0, 2], [1, -1]], dtype=np.int64)
_X4 = _R.standard_normal((2, 3, 5, 4)).astype(np.float32)
_CASES = {
    "Slice-steps": ("Slice", [], {}, [("s", np.array([0, 3])), ("e", np.array([2, 0])), ("a", np.array([0, 2])),
                                     ("st", np.array([1, -2]))]),
    "Gather-axis1": ("Gather", [], {"axis": 1}, [("i", _I)]),
    "GatherElements": ("GatherElements", [], {"axis": 2},
                       [("i", _R.integers(0, 4, (2, 3, 2)).astype(np.int64))]),
    "ScatterElements-add": ("ScatterElements", [("i", np.tile(np.array([0, -1]), (2, 3, 1))),
                                                ("u", _R.standard_normal((2, 3, 2)).astype(np.float32))],
                            {"axis": 2, "reduction": "add"}, []),
    "ScatterElements": ("ScatterElements", [("i", np.tile(np.array([3, 1]), (2, 3, 1))),
                                            ("u", _R.standard_normal((2, 3, 2)).astype(np.float32))],
                        {"axis": 2}, []),
    "Split": ("Split", [], {"axis": 2}, [("sp", np.array([1, 3]))], 2),
    "Pad": ("Pad", [], {}, [("p", np.array([0, 1, 0, 0, 2, 1])), ("v", np.array(0.5, np.float32))]),
    "Where": ("Where", [], {}, [], 1, lambda x: [("c", x > 0), ("x", x), ("y", -x)]),
    "Expand": ("Expand", [], {}, [("sh", np.array([2, 2, 3, 4]))]),
    "ReduceMean-nokeep": ("ReduceMean", [], {"keepdims": 0}, [("ax", np.array([1, -1]))]),
    "ReduceMax": ("ReduceMax", [], {"keepdims": 1}, [("ax", np.array([2]))]),
    "ReduceSum-all": ("ReduceSum", [], {"keepdims": 0}, []),
    "ArgMax": ("ArgMax", [], {"axis": 1, "keepdims": 0}, []),
    "Clip": ("Clip", [], {}, [("lo", np.array(-0.5, np.float32)), ("hi", np.array(0.7, np.float32))]),
    "Cast-int": ("Cast", [], {"to": T.INT32}, []),
    "Tile": ("Tile", [], {}, [("r", np.array([1, 2, 1]))]),
    "Concat": ("Concat", [("b", _X * 2)], {"axis": 1}, []),
    "Transpose": ("Transpose", [], {"perm": [2, 0, 1]}, []),
    "Unsqueeze": ("Unsqueeze", [], {}, [("ax", np.array([0, 3]))]),
    "Softmax-axis1": ("Softmax", [], {"axis": 1}, []),
    "LogSoftmax": ("LogSoftmax", [], {"axis": -1}, []),
    "LeakyRelu": ("LeakyRelu", [], {"alpha": 0.2}, []),
    "Gelu-tanh": ("Gelu", [], {"approximate": "tanh"}, [], 1, None, 20),
    "LayerNormalization": ("LayerNormalization", [], {"axis": -1, "epsilon": 1e-5},
                           [("w", _R.standard_normal(4).astype(np.float32)),
                            ("b", _R.standard_normal(4).astype(np.float32))]),
    "Pow": ("Pow", [], {}, [("e", np.array(2.0, np.float32))]),
    "Mod-fmod": ("Mod", [], {"fmod": 1}, [("d", np.array(0.7, np.float32))]),
    "Einsum": ("Einsum", [("b", _R.standard_normal((2, 4, 5)).astype(np.float32))], {"equation": "bij,bjk->bik"}, []),
    "MatMul-batched": ("MatMul", [("b", _R.standard_normal((4, 5)).astype(np.float32))], {}, []),
    "Trilu": ("Trilu", [], {"upper": 0}, [("k", np.array(1))]),
    "CumSum": ("CumSum", [], {}, [("ax", np.array(1))]),
    "EyeLike": ("EyeLike", [], {"k": 1}, [], 1, lambda x: [("x", x[0])]),
    "Det": ("Det", [], {}, [], 1, lambda x: [("x", x[:, :3, :3])]),
    "Resize-sizes-half_pixel": ("Resize", [], {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
                                [("roi", np.zeros(0, np.float32)), ("sc", np.zeros(0, np.float32)),
                                 ("sz", np.array([2, 3, 7, 10]))], 1, lambda x: [("x", x[:, :, None].repeat(3, 2))]),
    "Resize-axes-asymmetric": ("Resize", [], {"mode": "nearest", "axes": [2], "coordinate_transformation_mode":
                                              "asymmetric", "nearest_mode": "floor"},
                               [("roi", np.zeros(0, np.float32)), ("sc", np.array([1.5], np.float32))]),
    "TopK": ("TopK", [], {"axis": 1}, [("k", np.array([2]))], 2),
    # older opsets: axes / split as attributes, Softmax over the 2-D coercion
    "ReduceMean-opset13": ("ReduceMean", [], {"axes": [0, 2], "keepdims": 1}, [], 1, None, 13),
    "Unsqueeze-opset11": ("Unsqueeze", [], {"axes": [1]}, [], 1, None, 11),
    "Squeeze-opset11": ("Squeeze", [], {"axes": [0]}, [], 1, lambda x: [("x", x[:1])], 11),
    "Split-opset11": ("Split", [], {"axis": 1, "split": [2, 1]}, [], 2, None, 11),
    "Softmax-opset11": ("Softmax", [], {"axis": 1}, [], 1, None, 11),
    "Split-num_outputs": ("Split", [], {"axis": 2, "num_outputs": 3}, [], 3, None, 18),
    "Pad-reflect": ("Pad", [], {"mode": "reflect"}, [("p", np.array([0, 2, 1, 0, 1, 3]))]),
    "Pad-edge": ("Pad", [], {"mode": "edge"}, [("p", np.array([1, 0, 2, 0, 3, 1]))]),
    "Pad-wrap-axes": ("Pad", [], {"mode": "wrap"}, [("p", np.array([2, 5])), ("v", np.array(0.0, np.float32)),
                                                     ("a", np.array([-1]))], 1, None, 19),
    "Resize-linear-half_pixel": ("Resize", [], {"mode": "linear"},
                                 [("roi", np.zeros(0, np.float32)), ("sc", np.array([1, 1, 2.5, 1.5], np.float32))], 1,
                                 lambda x: [("x", _X4)]),
    "Resize-linear-align_corners-down": ("Resize", [], {"mode": "linear", "coordinate_transformation_mode":
                                                        "align_corners"},
                                         [("roi", np.zeros(0, np.float32)), ("sc", np.zeros(0, np.float32)),
                                          ("sz", np.array([2, 3, 3, 3]))], 1, lambda x: [("x", _X4)]),
    "Resize-linear-pytorch_half_pixel": ("Resize", [], {"mode": "linear", "coordinate_transformation_mode":
                                                        "pytorch_half_pixel"},
                                         [("roi", np.zeros(0, np.float32)), ("sc", np.zeros(0, np.float32)),
                                          ("sz", np.array([2, 3, 1, 8]))], 1, lambda x: [("x", _X4)]),
    "Resize-cubic-asymmetric": ("Resize", [], {"mode": "cubic", "coordinate_transformation_mode": "asymmetric",
                                               "cubic_coeff_a": -0.5},
                                [("roi", np.zeros(0, np.float32)), ("sc", np.array([1, 1, 2.0, 1.75], np.float32))], 1,
                                lambda x: [("x", _X4)]),
    "Resize-cubic-exclude_outside": ("Resize", [], {"mode": "cubic", "exclude_outside": 1},
                                     [("roi", np.zeros(0, np.float32)), ("sc", np.zeros(0, np.float32)),
                                      ("sz", np.array([2, 3, 6, 3]))], 1, lambda x: [("x", _X4)]),
    "DFT-real-opset17-axis1": ("DFT", [], {"axis": 1}, [], 1, lambda x: [("x", x[..., :1])], 17),
    "DFT-real-onesided-padded": ("DFT", [], {"axis": 2, "onesided": 1}, [("n", np.array(7))], 1,
                                 lambda x: [("x", x[..., None])], 17),
    "DFT-complex-cropped": ("DFT", [], {"axis": -2}, [("n", np.array(2))], 1,
                            lambda x: [("x", np.stack([x, -x[::-1]], -1))], 17),
    "DFT-real-onesided-opset20": ("DFT", [], {"onesided": 1}, [("n", np.array(5)), ("a", np.array(-2))], 1,
                                  lambda x: [("x", x[..., None])], 20),
    "DFT-inverse-opset20": ("DFT", [], {"inverse": 1}, [("n", np.array(3)), ("a", np.array(0))], 1,
                            lambda x: [("x", np.stack([x, x * 0.5], -1))], 20),
    "DFT-inverse-onesided": ("DFT", [], {"inverse": 1, "onesided": 1, "axis": 1}, [("n", np.array(4))], 1,
                             lambda x: [("x", np.stack([x, x * 0.5], -1))], 17),
    "DepthToSpace-CRD": ("DepthToSpace", [], {"blocksize": 2, "mode": "CRD"}, [], 1,
                         lambda x: [("x", _X4[:, :, :4].reshape(2, 4, 3, 4))]),
    "SpaceToDepth": ("SpaceToDepth", [], {"blocksize": 2}, [], 1, lambda x: [("x", _X4[:, :, :4])]),
    "InstanceNormalization": ("InstanceNormalization", [], {"epsilon": 1e-3},
                              [("s", _R.standard_normal(3).astype(np.float32)),
                               ("b", _R.standard_normal(3).astype(np.float32))], 1, lambda x: [("x", _X4)]),
    "PRelu-per-channel": ("PRelu", [], {}, [("sl", _R.standard_normal((3, 1)).astype(np.float32))]),
    "Mish": ("Mish", [], {}, []),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_single_operator_graphs_match_onnxruntime(case):
    op, more, attrs, inits, *rest = _CASES[case]
    n_out = rest[0] if rest else 1
    make_inputs = rest[1] if len(rest) > 1 else None
    opset = rest[2] if len(rest) > 2 and rest[2] else 18
    inputs = make_inputs(_X) if make_inputs else [("x", _X)] + more
    model = _graph(op, inputs, attrs, inits, n_out, opset)
    feeds = {n: a for n, a in inputs}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    m = burn.onnx.load(model)
    got = m(*[burn.tensor(a) for _, a in inputs])
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.dtype(g.dtype.name) == w.dtype
        # onnxruntime's DFT of a length that is no power of two sums in float32 (errors ~1e-6)
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5 if op == "DFT" else 1e-6)


def _if_model(cond_nodes, cond):
    """y = If(cond, then: relu(x) * 2, else: -x + b, with b an initializer of the else branch)."""
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                              helper.make_node("Mul", ["r", "two"], ["t"])], "then", [],
                             [helper.make_empty_tensor_value_info("t")],
                             [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["n"]),
                               helper.make_node("Add", ["n", "b"], ["e"])], "else", [],
                              [helper.make_empty_tensor_value_info("e")],
                              [numpy_helper.from_array(np.arange(3, dtype=np.float32), "b")])
    nodes = cond_nodes + [helper.make_node("If", [cond], ["y"], then_branch=then, else_branch=other)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3])],
                          [helper.make_tensor_value_info("y", T.FLOAT, ["n", 3])],
                          [numpy_helper.from_array(np.array([0]), "i0"),
                           numpy_helper.from_array(np.array([3]), "three")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def test_if_with_a_condition_from_the_input_shape_plans_the_taken_branch_per_signature():
    shape_cond = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i0"], ["n0"]),
                  helper.make_node("Greater", ["n0", "three"], ["c1"]),
                  helper.make_node("Squeeze", ["c1", "i0"], ["c"])]
    model = _if_model(shape_cond, "c")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    m = burn.onnx.load(model, device=burn.Device.flex().autodiff())
    for batch in (2, 5, 2):                          # else branch, then branch, else again
        x = np.random.default_rng(batch).standard_normal((batch, 3)).astype(np.float32)
        bx = burn.tensor(x, device=burn.Device.flex().autodiff()).require_grad()
        y = m(bx)
        np.testing.assert_allclose(y.numpy(), sess.run(None, {"x": x})[0], rtol=1e-6)
        g = bx.grad(y.sum().backward()).numpy()
        np.testing.assert_allclose(g, np.where(x > 0, 2.0, 0.0) if batch > 3 else -np.ones_like(x))


def test_if_with_a_run_time_condition_and_loop_are_clear_errors(tmp_path):
    value_cond = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                  helper.make_node("Greater", ["s", "zero"], ["c"])]
    model = _if_model(value_cond, "c")
    model.graph.initializer.append(numpy_helper.from_array(np.array(0.0, np.float32), "zero"))
    m = burn.onnx.load(model)
    with pytest.raises(OnnxImportError, match=r"\(If\): its condition depends on run-time values"):
        m(burn.ones((2, 3)))
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["v_in", "v_in"], ["v_out"])], "body",
                             [helper.make_tensor_value_info("i", T.INT64, []),
                              helper.make_tensor_value_info("cond_in", T.BOOL, []),
                              helper.make_tensor_value_info("v_in", T.FLOAT, ["n", 3])],
                             [helper.make_tensor_value_info("cond_out", T.BOOL, []),
                              helper.make_tensor_value_info("v_out", T.FLOAT, ["n", 3])])
    g = helper.make_graph([helper.make_node("Loop", ["trips", "", "x"], ["y"], body=body)], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3])],
                          [helper.make_tensor_value_info("y", T.FLOAT, ["n", 3])],
                          [numpy_helper.from_array(np.array(3), "trips")])
    loop = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    with pytest.raises(OnnxImportError, match="does not import: Loop x1"):
        burn.onnx.load(loop)


# -- errors --------------------------------------------------------------------------------------

def test_unsupported_operators_are_listed_with_counts_before_anything_runs(tmp_path):
    nodes = [helper.make_node("NonMaxSuppression", ["x", "x"], ["a"]),
             helper.make_node("Foo", ["x"], ["b"], domain="my.domain"),
             helper.make_node("Foo", ["b"], ["c"], domain="my.domain"),
             helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("my.domain", 1)])
    with pytest.raises(OnnxImportError, match=r"3 nodes .*NonMaxSuppression x1, my\.domain::Foo x2"):
        burn.onnx.load(model)


def test_truncated_and_malformed_files_are_clear_errors(exported, tmp_path):
    data = open(exported["cnn"][1], "rb").read()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(OnnxImportError, match="truncated"):
        burn.onnx.load(cut)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00\xff not onnx at all" * 7)
    with pytest.raises(OnnxImportError, match="junk.onnx"):
        burn.onnx.load(junk)
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(OnnxImportError, match="empty"):
        burn.onnx.load(empty)
    with pytest.raises(OnnxImportError, match="cannot read"):
        burn.onnx.load(tmp_path / "missing.onnx")
    # a graph reading a name nothing defines: onnx.checker's error, as an OnnxImportError
    g = helper.make_graph([helper.make_node("Relu", ["nope"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    with pytest.raises(OnnxImportError, match="not a valid ONNX model"):
        burn.onnx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))


def test_wrong_inputs_at_call_name_the_input(exported):
    m = burn.onnx.load(exported["cnn"][1])
    with pytest.raises(burn.ShapeError, match=r"input 'x' must have shape \('b', 1, 8, 8\)"):
        m(burn.randn((2, 1, 9, 8)))
    with pytest.raises(burn.DTypeError, match="input 'x' must be float32"):
        m(burn.ones((2, 1, 8, 8), dtype=burn.float64))


def test_inference_replays_a_captured_graph_that_follows_lora_and_device_changes(exported):
    m = burn.onnx.load(exported["mlp"][1])
    x = burn.randn((5, 6))
    eager = m(x).numpy()                                   # plans (eager)
    np.testing.assert_allclose(m(x).numpy(), eager, rtol=1e-6)   # traced into a capture graph, replayed
    np.testing.assert_allclose(m(x).numpy(), eager, rtol=1e-6)
    assert len(m._onnx_graphs) == 1
    m = burn.nn.apply_lora(m, rank=2)
    for name, p in m.named_parameters():
        if name.endswith("lora_B"):
            p.assign_(burn.ones(p.shape) * 0.1)
    adapted = m(x).numpy()
    object.__setattr__(m, "_onnx_capture", False)
    np.testing.assert_allclose(adapted, m(x).numpy(), rtol=1e-5, atol=1e-6)    # same as the eager plan
    assert np.abs(adapted - eager).max() > 1e-3 and len(m._onnx_graphs) == 2


def test_a_reassigned_parameter_inside_a_layer_retraces_the_replayed_graph(exported):
    m = burn.onnx.load(exported["mlp"][1])
    x = burn.randn((5, 6))
    m(x), m(x)                                             # plan, then trace
    layer = next(mod for _, mod in m.named_modules() if isinstance(mod, burn.nn.Linear))
    layer.weight = burn.nn.Parameter(layer.weight * 2.0)   # a new tensor, not an in-place update
    replayed = m(x).numpy()
    object.__setattr__(m, "_onnx_capture", False)
    np.testing.assert_allclose(replayed, m(x).numpy(), rtol=1e-5, atol=1e-6)
    assert len(m._onnx_graphs) == 2


def test_onnx_finetune_example_lora_tunes_a_torch_exported_model(tmp_path):
    pytest.importorskip("sklearn")
    from burn_onnx.examples import onnx_finetune
    r = onnx_finetune.main(["--steps", "40", "--out", str(tmp_path)])
    assert (tmp_path / "model.onnx").exists()
    assert r["last_loss"] < r["first_loss"] and r["after"] > r["before"]


def test_docs_operator_table_is_the_generated_one():
    import pathlib
    from burn_onnx.importer.registry import TABLE_BEGIN, TABLE_END, operator_table
    doc = (pathlib.Path(__file__).parents[1] / "docs" / "onnx.md").read_text()
    i, j = doc.index(TABLE_BEGIN), doc.index(TABLE_END) + len(TABLE_END)
    assert doc[i:j] == operator_table(), "regenerate it: python -m burn_onnx.importer"


def test_random_ops_draw_fresh_numbers_per_call_with_their_distribution():
    like = helper.make_node("ConstantOfShape", ["s"], ["z"])
    nodes = [like, helper.make_node("RandomNormalLike", ["z"], ["n"], mean=2.0, scale=0.5),
             helper.make_node("RandomUniform", [], ["u"], shape=[4000], low=-1.0, high=3.0, dtype=T.FLOAT),
             helper.make_node("Add", ["x", "n"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [4000])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [4000]),
                           helper.make_tensor_value_info("u", T.FLOAT, [4000])],
                          [numpy_helper.from_array(np.array([4000], np.int64), "s")])
    m = burn.onnx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))
    x = burn.zeros((4000,))
    with burn.no_grad():
        runs = [tuple(t.numpy() for t in m(x)) for _ in range(3)]      # plan, capture trace, replay
    for y, u in runs:
        assert abs(y.mean() - 2.0) < 0.05 and abs(y.std() - 0.5) < 0.05
        assert u.min() >= -1.0 and u.max() <= 3.0 and abs(u.mean() - 1.0) < 0.1
    assert not np.array_equal(runs[1][0], runs[2][0]) and not np.array_equal(runs[0][1], runs[2][1])


def test_dequantize_linear_of_quantized_initializers_is_folded_and_matches_onnxruntime():
    q = _R.integers(0, 255, (4, 6)).astype(np.uint8)
    scale = (_R.random((2, 6)) + 0.5).astype(np.float32)
    zp = _R.integers(100, 150, (2, 6)).astype(np.uint8)
    nodes = [helper.make_node("DequantizeLinear", ["q", "sc", "zp"], ["w"], axis=0, block_size=2),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [3, 4])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [3, 6])],
                          [numpy_helper.from_array(q, "q"), numpy_helper.from_array(scale, "sc"),
                           numpy_helper.from_array(zp, "zp")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    x = _R.standard_normal((3, 4)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    m = burn.onnx.load(model)
    assert not any(n.op == "DequantizeLinear" for n in m._onnx_nodes)      # folded at load
    np.testing.assert_allclose(m(burn.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
