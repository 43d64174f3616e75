"""MultiHeadAttention, TransformerEncoderLayer and TransformerEncoder against torch.nn (batch_first=True,
dropout 0) with the same weights: outputs, input and parameter gradients, masks of both kinds."""
from __future__ import annotations

import numpy as np
import pytest

import burn
import burn.nn.functional as F

torch = pytest.importorskip("torch")

AD = burn.Device.flex().autodiff()
TOL = dict(rtol=1e-9, atol=1e-10)


def _b(a, dtype=burn.float64, grad=False):
    t = burn.tensor(np.asarray(a), device=AD, dtype=dtype)
    return t.require_grad() if grad else t


def _rand(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape)


def _to_torch_names(module, arrays):
    """burn name -> array (parameters, or their gradients) into torch's names and layouts:
    Linear weights transposed, each MultiHeadAttention's q/k/v projections stacked into in_proj_*."""
    linear = {p for p, m in module.named_modules() if isinstance(m, burn.nn.Linear)}
    mha = {p: m for p, m in module.named_modules() if isinstance(m, burn.nn.MultiHeadAttention)}
    out = {}
    for name, a in arrays.items():
        owner, _, leaf = name.rpartition(".")
        if leaf == "weight" and owner in linear:
            a = a.T
        out[name] = a
    for p, m in mha.items():
        pre = f"{p}." if p else ""
        for kind in ("weight", "bias"):
            parts = [out.pop(f"{pre}{x}_proj.{kind}", None) for x in "qkv"]
            if parts[0] is None:
                continue
            if kind == "weight" and not m.kdim == m.vdim == m.embed_dim:
                # torch keeps separate [E, kdim] / [E, vdim] matrices then
                out.update({f"{pre}{x}_proj_weight": w for x, w in zip("qkv", parts)})
            else:
                out[f"{pre}in_proj_{kind}"] = np.concatenate(parts, axis=0)
    return out


def _copy_into_torch(bmod, tmod):
    state = _to_torch_names(bmod, {n: p.numpy() for n, p in bmod.named_parameters()})
    missing, unexpected = tmod.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v))
                                                for k, v in state.items()}, strict=False)
    assert not unexpected and not [m for m in missing if "running" not in m], (missing, unexpected)
    return tmod


def _check(bmod, tmod, bcall, tcall, inputs, *, tol=TOL):
    """Outputs, gradients of every float input and of every parameter agree."""
    _copy_into_torch(bmod, tmod)
    bins = [_b(a, grad=True) for a in inputs]
    out = bcall(*bins)
    cot = _rand(out.shape, 11)
    grads = (out * _b(cot)).sum().backward()
    tins = [torch.tensor(a, requires_grad=True) for a in inputs]
    tout = tcall(*tins)
    (tout * torch.from_numpy(cot)).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), err_msg="forward", **tol)
    for i, (b, t) in enumerate(zip(bins, tins)):
        np.testing.assert_allclose(b.grad(grads).numpy(), t.grad.numpy(), err_msg=f"d input {i}", **tol)
    bgrads = _to_torch_names(bmod, {n: p.grad(grads).numpy() for n, p in bmod.named_parameters()})
    tparams = dict(tmod.named_parameters())
    assert set(bgrads) == set(tparams)
    for name, g in bgrads.items():
        np.testing.assert_allclose(g, tparams[name].grad.numpy(), err_msg=f"grad {name}", **tol)
    assert bmod.num_params() == sum(p.numel() for p in tmod.parameters())
    return out


def _mha(e=8, h=2, **kw):
    burn.Device.flex().seed(0)
    b = burn.nn.MultiHeadAttention(e, h, device=AD, dtype=burn.float64, **kw)
    t = torch.nn.MultiheadAttention(e, h, batch_first=True, **kw).double()
    return b, t


def _pad_mask(n=3, s=6):
    m = np.zeros((n, s), bool)
    m[0, 4:] = True          # the first sequence is padded after 4 tokens
    m[2, 1] = True
    return m


@pytest.mark.parametrize("masks", ["none", "bool", "float", "both"])
def test_mha_self_attention_matches_torch(masks):
    b, t = _mha()
    x = _rand((3, 6, 8))
    kpm = _pad_mask() if masks in ("bool", "both") else None
    if masks == "float":
        am = _rand((6, 6), 3)                                    # additive scores
    elif masks == "both":
        am = np.triu(np.ones((6, 6), bool), 1)                   # causal, True = hidden
    else:
        am = None
    bkw = dict(key_padding_mask=None if kpm is None else burn.tensor(kpm, device=AD),
               attn_mask=None if am is None else (burn.tensor(am, device=AD) if am.dtype == bool else _b(am)))
    tkw = dict(key_padding_mask=None if kpm is None else torch.from_numpy(kpm),
               attn_mask=None if am is None else torch.from_numpy(am))
    _check(b, t, lambda q: b(q, **bkw), lambda q: t(q, q, q, **tkw)[0], [x])
    _, w = b(_b(x), **bkw, need_weights=True)
    tw = t(*(torch.tensor(x),) * 3, **tkw)[1]
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), **TOL)
    if kpm is not None:
        assert (w.numpy()[0, :, 4:] == 0).all()


def test_mha_cross_attention_with_kdim_vdim_and_per_head_masks():
    b, t = _mha(12, 3, kdim=5, vdim=7)
    assert b.k_proj.weight.shape == (5, 12) and b.v_proj.weight.shape == (7, 12)
    q, k, v = _rand((2, 4, 12)), _rand((2, 6, 5), 2), _rand((2, 6, 7), 3)
    am = _rand((2 * 3, 4, 6), 4)                                  # [N * heads, L, S], float
    kpm = np.zeros((2, 6))
    kpm[1, 2] = -np.inf                                           # float key padding mask
    _check(b, t, lambda *a: b(*a, attn_mask=_b(am), key_padding_mask=_b(kpm)),
           lambda *a: t(*a, attn_mask=torch.from_numpy(am), key_padding_mask=torch.from_numpy(kpm))[0], [q, k, v])
    tparams = {n for n, _ in t.named_parameters()}
    assert {"q_proj_weight", "k_proj_weight", "v_proj_weight"} <= tparams   # torch's separate layout


def test_mha_per_head_weights_and_unbatched_input():
    b, t = _mha()
    _copy_into_torch(b, t)
    x = _rand((5, 8))
    y, w = b(_b(x), need_weights=True, average_attn_weights=False)
    ty, tw = t(*(torch.tensor(x),) * 3, average_attn_weights=False)
    assert y.shape == (5, 8) and w.shape == (2, 5, 5)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), **TOL)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), **TOL)


def test_mha_init_follows_torch():
    burn.Device.flex().seed(5)
    m = burn.nn.MultiHeadAttention(64, 4)
    bound = (6 / (64 + 3 * 64)) ** 0.5       # one Xavier-uniform [3E, E] matrix, as torch
    w = np.concatenate([m.q_proj.weight.numpy(), m.k_proj.weight.numpy(), m.v_proj.weight.numpy()])
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    for p in (m.q_proj, m.k_proj, m.v_proj, m.out_proj):
        assert not p.bias.numpy().any()
    assert np.abs(m.out_proj.weight.numpy()).max() <= 1 / 8


def test_mha_dropout_only_in_training():
    burn.Device.flex().seed(0)
    m = burn.nn.MultiHeadAttention(8, 2, dropout=0.5)
    x = burn.randn((2, 5, 8))
    _, w = m(x, need_weights=True, average_attn_weights=False)
    assert (w.numpy() == 0).mean() > 0.2
    m.eval()
    y1, y2 = m(x).numpy(), m(x).numpy()
    np.testing.assert_array_equal(y1, y2)
    _, w = m(x, need_weights=True)
    np.testing.assert_allclose(w.numpy().sum(-1), 1.0, rtol=1e-5)


def test_mha_errors_name_the_layer_and_shapes():
    m = burn.nn.MultiHeadAttention(8, 2)
    x = burn.ones((3, 6, 8))
    with pytest.raises(burn.ShapeError, match=r"MultiHeadAttention\(embed_dim=8.*\[N, L, 8\].*\(3, 6, 7\)"):
        m(burn.ones((3, 6, 7)))
    with pytest.raises(burn.ShapeError, match=r"key_padding_mask must be \[N, S\] = \(3, 6\).*\(3, 5\)"):
        m(x, key_padding_mask=burn.zeros((3, 5), dtype=burn.bool_))
    with pytest.raises(burn.ShapeError, match=r"attn_mask must be \[L, S\] = \(6, 6\).*\(6, 6, 6\).*\(5, 6\)"):
        m(x, attn_mask=burn.zeros((5, 6)))
    with pytest.raises(burn.DTypeError, match="attn_mask must be bool"):
        m(x, attn_mask=burn.zeros((6, 6), dtype=burn.int64))
    with pytest.raises(ValueError, match="divisible by num_heads"):
        burn.nn.MultiHeadAttention(10, 3)


def test_scaled_dot_product_attention_matches_torch():
    q, k, v = _rand((2, 3, 4, 8)), _rand((2, 3, 5, 8), 2), _rand((2, 3, 5, 6), 3)
    keep = np.random.default_rng(0).uniform(size=(4, 5)) > 0.3
    keep[:, 0] = True
    for kw, tkw in [(dict(attn_mask=burn.tensor(keep, device=AD)), dict(attn_mask=torch.from_numpy(keep))),
                    (dict(is_causal=True, scale=0.3), dict(is_causal=True, scale=0.3)),
                    (dict(attn_mask=_b(_rand((4, 5), 9))), dict(attn_mask=torch.from_numpy(_rand((4, 5), 9))))]:
        got = F.scaled_dot_product_attention(_b(q), _b(k), _b(v), **kw)
        ref = torch.nn.functional.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)), **tkw)
        np.testing.assert_allclose(got.numpy(), ref.numpy(), **TOL)


# -- Transformer encoder ---------------------------------------------------------------------------

def _layer(norm_first, activation, d=16, h=4, ff=24):
    burn.Device.flex().seed(1)
    b = burn.nn.TransformerEncoderLayer(d, h, dim_feedforward=ff, dropout=0.0, activation=activation,
                                        norm_first=norm_first, device=AD, dtype=burn.float64)
    t = torch.nn.TransformerEncoderLayer(d, h, dim_feedforward=ff, dropout=0.0, activation=activation,
                                         norm_first=norm_first, batch_first=True).double()
    # non-trivial norm parameters, so a swapped norm1/norm2 shows
    rng = np.random.default_rng(2)
    for norm in (b.norm1, b.norm2):
        norm.weight.assign_(_b(rng.uniform(0.5, 1.5, d)))
        norm.bias.assign_(_b(rng.standard_normal(d) * 0.1))
    return b, t


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_matches_torch(norm_first, activation):
    b, t = _layer(norm_first, activation)
    x = _rand((3, 7, 16))
    kpm = np.zeros((3, 7), bool)
    kpm[1, 5:] = True
    causal = np.triu(np.ones((7, 7), bool), 1)
    _check(b, t, lambda s: b(s, causal, burn.tensor(kpm, device=AD)),
           lambda s: t(s, src_mask=torch.from_numpy(causal), src_key_padding_mask=torch.from_numpy(kpm)), [x])
    t.eval()       # torch's fast path in eval; the maths must still agree (without masks)
    with torch.no_grad():
        np.testing.assert_allclose(b.eval()(_b(x)).numpy(), t(torch.tensor(x)).numpy(), rtol=1e-8, atol=1e-9)


def test_transformer_encoder_matches_torch_stack():
    b_layer, t_layer = _layer(True, "gelu")
    b = burn.nn.TransformerEncoder(b_layer, 3, norm=burn.nn.LayerNorm(16, device=AD, dtype=burn.float64))
    t = torch.nn.TransformerEncoder(t_layer, 3, norm=torch.nn.LayerNorm(16).double(), enable_nested_tensor=False)
    # layers start as copies (as torch); make them differ so an ordering mix-up shows
    rng = np.random.default_rng(4)
    for i, layer in enumerate(b.layers):
        assert np.array_equal(layer.linear1.weight.numpy(), b_layer.linear1.weight.numpy())
        layer.linear1.bias.assign_(_b(rng.standard_normal(24) * (i + 1)))
    assert b.layers[1].linear1.weight is not b.layers[0].linear1.weight
    x = _rand((2, 5, 16))
    kpm = np.zeros((2, 5), bool)
    kpm[0, 3:] = True
    _check(b, t, lambda s: b(s, src_key_padding_mask=burn.tensor(kpm, device=AD)),
           lambda s: t(s, src_key_padding_mask=torch.from_numpy(kpm)), [x])


def test_transformer_layer_dropout_and_errors():
    burn.Device.flex().seed(0)
    layer = burn.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.3)
    x = burn.randn((2, 4, 8))
    assert not np.array_equal(layer(x).numpy(), layer(x).numpy())      # dropout draws fresh masks
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())
    assert not any(m.training for _, m in layer.named_modules())
    with pytest.raises(burn.ShapeError, match=r"TransformerEncoderLayer\(d_model=8\).*\(2, 4, 6\)"):
        layer(burn.ones((2, 4, 6)))
    with pytest.raises(ValueError, match="activation"):
        burn.nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_transformer_repr_and_names():
    enc = burn.nn.TransformerEncoder(burn.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), 2)
    text = repr(enc)
    assert "(layers.1): TransformerEncoderLayer(" in text
    assert "(self_attn): MultiHeadAttention(" in text and "embed_dim=8, num_heads=2" in text
    assert "(q_proj): Linear(d_in=8, d_out=8, bias=True)" in text
    names = [n for n, _ in enc.named_parameters()]
    assert names[:2] == ["layers.0.self_attn.q_proj.weight", "layers.0.self_attn.q_proj.bias"]
    t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True),
                                    2, enable_nested_tensor=False)
    assert enc.num_params() == sum(p.numel() for p in t.parameters())


def test_load_torch_state_unpacks_attention_in_proj(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    torch.manual_seed(0)
    t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                                     batch_first=True),
                                    2, enable_nested_tensor=False).double().eval()
    path = tmp_path / "encoder.safetensors"
    st.save_file({k: v.contiguous() for k, v in t.state_dict().items()}, str(path))
    assert "layers.0.self_attn.in_proj_weight" in t.state_dict()
    enc = burn.nn.TransformerEncoder(burn.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                                     dtype=burn.float64), 2)
    enc.load_torch_state(path)
    enc.eval()
    x = _rand((3, 5, 8))
    np.testing.assert_allclose(enc(burn.tensor(x)).numpy(), t(torch.tensor(x)).detach().numpy(), **TOL)
    # torch stores separate q/k/v weights (and still one packed bias) when key/value sizes differ
    m = torch.nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=True).double()
    assert {"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias"} <= set(m.state_dict())
    st.save_file({k: v.contiguous() for k, v in m.state_dict().items()}, str(tmp_path / "mha.safetensors"))
    b = burn.nn.MultiHeadAttention(8, 2, kdim=5, vdim=3, dtype=burn.float64)
    b.load_torch_state(tmp_path / "mha.safetensors")
    q, k, v = _rand((2, 4, 8), 2), _rand((2, 6, 5), 3), _rand((2, 6, 3), 4)
    want = m(torch.tensor(q), torch.tensor(k), torch.tensor(v), need_weights=False)[0].detach().numpy()
    got = b(burn.tensor(q), burn.tensor(k), burn.tensor(v))
    got = got[0] if isinstance(got, tuple) else got
    np.testing.assert_allclose(got.numpy(), want, **TOL)
