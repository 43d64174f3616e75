"""burn.onnx round trip: a burn model exported with burn.onnx.export and imported with
burn.onnx.load computes the same outputs and the same gradients, w.r.t. its input and w.r.t.
every imported parameter that is one of the original's, as the original burn model, at a batch
size the export did not trace (dynamic batch). Models: an MLP, the digits CNN, a transformer
encoder layer, a LoRA model exported merged and with separate adapter MatMuls."""
from __future__ import annotations

import numpy as np
import pytest

import burn

pytest.importorskip("onnx")

_AD = burn.Device.flex().autodiff()
_TRACED_BATCH, _RUN_BATCH = 2, 5


def _mlp():
    return burn.nn.Sequential(burn.nn.Linear(6, 16), burn.nn.GELU(), burn.nn.Linear(16, 8), burn.nn.Tanh(),
                              burn.nn.Linear(8, 3))


def _cnn():
    from burn.examples import digits
    return digits.DigitsCNN(burn.Device.flex())


def _encoder_layer():
    return burn.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0)


def _lora():
    m = burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(12, 10), burn.nn.ReLU(), burn.nn.Linear(10, 4)),
                           rank=2)
    for _, mod in m.named_modules():
        if isinstance(mod, burn.nn.LoRALinear):
            mod.lora_B.assign_(burn.randn(mod.lora_B.shape) * 0.3)       # as if trained: the adapters matter
    return m


MODELS = {"mlp": (_mlp, (6,), {}), "cnn": (_cnn, (1, 8, 8), {}), "encoder": (_encoder_layer, (5, 16), {}),
          "lora-merged": (_lora, (12,), {"lora": "merged"}), "lora-separate": (_lora, (12,), {"lora": "separate"})}


def _rel(a, b):
    """Max error relative to the reference's scale; a gradient that is zero in exact arithmetic
    (an attention key bias: softmax ignores a shift) is rounding noise of ~1e-8, judged against 1e-2."""
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-2))


def _match(original, value):
    """The original trainable parameter holding ``value`` (as stored or transposed): (name, transposed)."""
    for name, p in original.named_parameters():
        if p.frozen:
            continue
        t = p.numpy()
        if t.shape == value.shape and np.array_equal(t, value):
            return name, False
        if t.ndim == 2 and t.T.shape == value.shape and np.array_equal(t.T, value):
            return name, True
    return None, False


@pytest.mark.parametrize("name", sorted(MODELS))
def test_export_then_load_gives_the_same_outputs_and_gradients(name, tmp_path):
    make, shape, kw = MODELS[name]
    burn.Device.flex().seed(sorted(MODELS).index(name))
    model = make()
    model.eval()
    for _, p in model.named_parameters():          # distinct values: no zero biases two layers share
        p.assign_(burn.randn(p.shape) * 0.3)
    path = tmp_path / f"{name}.onnx"
    burn.onnx.export(model, (burn.randn((_TRACED_BATCH,) + shape),), path, input_names=["x"],
                     dynamic_axes={"x": {0: "batch"}}, **kw)
    imported = burn.onnx.load(path, device=_AD)
    model.to_device(_AD)

    rng = np.random.default_rng(1)
    x = rng.standard_normal((_RUN_BATCH,) + shape).astype(np.float32)
    results = []
    for m in (model, imported):
        bx = burn.tensor(x, device=_AD).require_grad()
        y = m(bx)
        r = burn.tensor(np.random.default_rng(2).standard_normal(y.shape).astype(np.float32), device=_AD)
        grads = (y * r).sum().backward()
        results.append((y.numpy(), bx.grad(grads).numpy(), grads))
    (y0, gx0, grads0), (y1, gx1, grads1) = results
    assert y1.shape == y0.shape and _rel(y1, y0) < 1e-5
    assert _rel(gx1, gx0) < 1e-4

    originals = dict(model.named_parameters())
    checked = set()
    for pname, p in imported.named_parameters():
        oname, transposed = _match(model, p.numpy())
        if oname is None:
            continue
        want = originals[oname].grad(grads0).numpy()
        got = p.grad(grads1).numpy()
        assert _rel(got.T if transposed else got, want) < 1e-4, (pname, oname)
        checked.add(oname)
    trainable = {n for n, p in originals.items() if not p.frozen}
    if name == "lora-merged":
        checked |= _check_merged_adapters(model, imported, grads0, grads1)
    assert checked == trainable, sorted(trainable - checked)


def _check_merged_adapters(model, imported, grads0, grads1):
    """A merged layer's weight is W + s A B: the gradient G of the imported weight gives the
    adapters' gradients by the chain rule, dA = s G B^T and dB = s A^T G."""
    checked = set()
    layers = [(n, m) for n, m in imported.named_modules() if isinstance(m, burn.nn.Linear)]
    for path, lora in model.named_modules():
        if not isinstance(lora, burn.nn.LoRALinear):
            continue
        a, b = lora.lora_A.numpy(), lora.lora_B.numpy()
        merged = lora.base.weight.numpy() + lora.scale * a @ b
        found = [m for _, m in layers if m.weight.shape == merged.shape and np.allclose(m.weight.numpy(), merged,
                                                                                         atol=1e-6)]
        assert len(found) == 1, path
        g = found[0].weight.grad(grads1).numpy()
        assert _rel(lora.scale * g @ b.T, lora.lora_A.grad(grads0).numpy()) < 1e-4, path
        assert _rel(lora.scale * a.T @ g, lora.lora_B.grad(grads0).numpy()) < 1e-4, path
        checked |= {f"{path}.lora_A", f"{path}.lora_B"}
    return checked
