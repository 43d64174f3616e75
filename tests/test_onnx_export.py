"""burn.onnx.export: every primitive's and core extension op's rule, against onnxruntime
(float32 1e-5 relative, float16 2e-2), each file through onnx.checker (full_check); models
(MLP, digits CNN, transformer encoder layer, LoRA and QLoRA), dynamic batch at untraced
sizes, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import burn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import burn_onnx  # noqa: E402
from burn_onnx import OnnxExportError  # noqa: E402
from burn_onnx.export.registry import RULES  # noqa: E402
from burn.primitives import PRIMITIVES  # noqa: E402

from devices import flex_and_wgpu  # noqa: E402
from onnx_export_cases import CASES, EXT, LIBRARY  # noqa: E402

_RANDOM = {"rand_uniform", "rand_normal", "rand_int"}


def _run(path, leaves):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: np.asarray(t.numpy()) for i, t in zip(sess.get_inputs(), leaves)})


def _close(want, got, dtype_name="float32"):
    want = np.asarray(want)
    assert want.shape == got.shape, (want.shape, got.shape)
    if want.dtype.kind == "f":
        tol = 2e-2 if dtype_name in ("float16", "bfloat16") else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


def _export_and_compare(fn, args, path, op=None, **kw):
    with burn.no_grad():
        want = fn(*args)
    if op is not None:
        ops = burn.capture.trace(fn, *args).ops()
        assert op in ops, f"the case of {op} records {ops}"
    burn.onnx.export(fn, args, path, **kw)
    onnx.checker.check_model(str(path), full_check=True)
    want = want if isinstance(want, (tuple, list)) else (want,)
    got = _run(path, [a for a in args if isinstance(a, burn.Tensor)])
    return [np.asarray(w.numpy()) for w in want], got


def test_every_primitive_and_extension_op_has_a_rule_and_a_case():
    burn.plugins.ensure_loaded()
    missing_rule = [n for n in list(PRIMITIVES) if n not in RULES]
    missing_case = [n for n in PRIMITIVES if n not in CASES]
    assert not missing_rule, f"primitives without an export rule: {missing_rule}"
    assert not missing_case, f"primitives without a test case: {missing_case}"
    tested = set(CASES) | set(EXT) | set(LIBRARY) | {"burn::nf4_matmul", "burn::nf4_dequantize"}  # + QLoRA tests
    ext = [n for n, p in burn.dispatch.registry.ops.items() if getattr(p, "is_extension", False)
           and n.startswith(("burn::", "linalg::", "signal::"))]      # shipped here (tests declare others)
    for n in ext:   # its own tested rule, a tested reference-definition path, or a stated "no ONNX form"
        r = RULES.get(n)
        assert (r is not None and not r.supported and r.note) or n in tested, n


def test_operator_table_in_docs_is_up_to_date(tmp_path):
    from burn_onnx import optable
    doc = tmp_path / "onnx.md"
    doc.write_text(open(optable._DOC, encoding="utf-8").read(), encoding="utf-8")
    assert not optable.write(str(doc)), "docs/onnx.md is out of date: run python -m burn_onnx.optable --write"


def test_backward_and_optimizer_ops_are_clear_errors(tmp_path):
    y, g = burn.nn.functional.softmax(burn.randn((2, 3)), axis=1), burn.randn((2, 3))
    with pytest.raises(OnnxExportError, match="'burn::softmax_grad' at opset 18: no ONNX form: a backward op"):
        burn.onnx.export(lambda y, g: burn.fused.softmax_grad(y, g, 1), (y, g), tmp_path / "g.onnx")
    for n, r in RULES.items():
        if n.startswith("burn::") and not r.supported:
            assert "backward op" in r.note or "optimizer update" in r.note, n
    w = burn.ones((3,))

    def step(x):
        w.assign_(w - x)
        return w
    with pytest.raises(OnnxExportError, match="updates tensors in place"):
        burn.onnx.export(step, (burn.ones((3,)),), tmp_path / "u.onnx")


@pytest.mark.parametrize("op", sorted(PRIMITIVES))
def test_primitive_rule_matches_onnxruntime(op, tmp_path):
    fn, args = CASES[op]
    rule = RULES[op]
    if not rule.supported:
        with pytest.raises(OnnxExportError, match=f"'{op}' at opset 18: no ONNX form"):
            burn.onnx.export(fn, args, tmp_path / "m.onnx")
        return
    want, got = _export_and_compare(fn, args, tmp_path / "m.onnx", op=op)
    if op in _RANDOM:
        assert got[0].shape == want[0].shape and np.isfinite(got[0]).all()
        if op != "rand_normal":
            assert (got[0] >= 0).all() and (got[0] < (5 if op == "rand_int" else 1)).all()
        return
    _close(want[0], got[0])


@pytest.mark.parametrize("op", sorted(EXT))
def test_extension_op_matches_onnxruntime(op, tmp_path):
    fn, args = EXT[op]
    want, got = _export_and_compare(fn, args, tmp_path / "m.onnx", op=op)
    for w, g in zip(want, got):
        _close(w, g)


@pytest.mark.parametrize("op", sorted(LIBRARY))
def test_linalg_and_signal_ops_match_onnxruntime(op, tmp_path):
    pytest.importorskip("burn_linalg" if op.startswith("linalg") else "burn_signal")
    fn, args = LIBRARY[op]
    want, got = _export_and_compare(fn, args, tmp_path / "m.onnx", op=op)
    for w, g in zip(want, got):
        if op.startswith("signal::") and "fft" in op or op in ("signal::stft", "signal::istft", "signal::resample"):
            # two FFT algorithms: float32 rounding grows with the transform, so the error is taken
            # relative to the largest magnitude of the result
            assert w.shape == g.shape
            assert np.max(np.abs(g - w)) <= 1e-5 * max(1.0, np.max(np.abs(w))), np.max(np.abs(g - w))
        else:
            _close(w, g)


def test_float16_matmul_softmax_within_2e_2(tmp_path):
    a = burn.tensor(np.random.default_rng(1).standard_normal((4, 8)).astype(np.float16))
    b = burn.tensor(np.random.default_rng(2).standard_normal((8, 3)).astype(np.float16))
    fn = lambda a, b: burn.nn.functional.softmax((a @ b).relu(), axis=-1)   # noqa: E731
    want, got = _export_and_compare(fn, (a, b), tmp_path / "h.onnx")
    _close(want[0], got[0], "float16")


def _mlp():
    burn.seed(0) if hasattr(burn, "seed") else None
    return burn.nn.Sequential(burn.nn.Linear(6, 16), burn.nn.ReLU(), burn.nn.Linear(16, 3))


def test_mlp_weights_are_named_initializers_and_dynamic_batch_runs_at_other_sizes(tmp_path):
    m = _mlp()
    p = tmp_path / "mlp.onnx"
    model = burn.onnx.export(m, (burn.randn((4, 6)),), p, input_names=["x"], output_names=["y"],
                             dynamic_axes={"x": {0: "batch"}})
    names = {i.name for i in model.graph.initializer}
    assert {"layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"} <= names
    for n in (1, 7, 33):
        x = burn.randn((n, 6))
        _close(m(x).numpy(), _run(p, [x])[0])


def test_digits_cnn_matches_onnxruntime_with_dynamic_batch(tmp_path):
    from burn.examples import digits
    net = digits.DigitsCNN(burn.Device.flex())
    net.eval()
    x = burn.randn((2, 1, 8, 8))
    p = tmp_path / "cnn.onnx"
    burn.onnx.export(net, (x,), p, input_names=["x"], dynamic_axes={"x": {0: "batch"}}, check=True)
    for n in (1, 5):
        xn = burn.randn((n, 1, 8, 8))
        _close(net(xn).numpy(), _run(p, [xn])[0])


def test_transformer_encoder_layer_matches_onnxruntime(tmp_path):
    layer = burn.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0) if hasattr(burn.nn, "TransformerEncoderLayer") \
        else burn.nn.TransformerEncoder(16, 4, 32, num_layers=1, dropout=0.0)
    layer.eval()
    x = burn.randn((2, 5, 16))
    p = tmp_path / "enc.onnx"
    burn.onnx.export(layer, (x,), p, input_names=["x"], dynamic_axes={"x": {0: "batch"}}, check=True)
    x3 = burn.randn((3, 5, 16))
    _close(layer(x3).numpy(), _run(p, [x3])[0])


def _trained_lora(q=False):
    # under QLoRA the first weight has 512 NF4 blocks: two groups of block scales
    m = burn.nn.Sequential(burn.nn.Linear(256 if q else 64, 128 if q else 32), burn.nn.ReLU(),
                           burn.nn.Linear(128 if q else 32, 8))
    m = burn.nn.apply_qlora(m, rank=4) if q else burn.nn.apply_lora(m, rank=4)
    for _, mod in m.named_modules():
        if isinstance(mod, burn.nn.LoRALinear):
            mod.lora_B.assign_(burn.randn(mod.lora_B.shape) * 0.1)     # as if trained
    return m


@pytest.mark.parametrize("lora", ["merged", "separate"])
def test_lora_exports_merged_or_as_separate_matmuls(lora, tmp_path):
    m = _trained_lora()
    x = burn.randn((3, 64))
    p = tmp_path / "lora.onnx"
    model = burn.onnx.export(m, (x,), p, lora=lora, check=True)
    names = {i.name for i in model.graph.initializer}
    mm = sum(n.op_type == "MatMul" for n in model.graph.node)
    if lora == "merged":
        assert not any("lora" in n for n in names) and mm == 2
    else:
        assert {"layers.0.lora_A", "layers.0.lora_B"} <= names and mm == 6
    assert type(m.layers[0]) is burn.nn.LoRALinear        # the user's model is not merged
    _close(m(x).numpy(), _run(p, [x])[0])


@pytest.mark.parametrize("qlora,opset", [("dequantized", 18), ("blockwise", 21)])
def test_qlora_base_exports_dequantized_or_blockwise(qlora, opset, tmp_path):
    m = _trained_lora(q=True)
    x = burn.randn((3, 256))
    p = tmp_path / "qlora.onnx"
    model = burn.onnx.export(m, (x,), p, opset=opset, lora="separate", qlora=qlora, check=True)
    types = {n.op_type for n in model.graph.node}
    if qlora == "blockwise":
        assert "DequantizeLinear" in types
        assert any(i.data_type == onnx.TensorProto.UINT4 for i in model.graph.initializer)
    _close(m(x).numpy(), _run(p, [x])[0])
    merged = burn.onnx.export(m, (x,), tmp_path / "qm.onnx", check=True)
    assert not any("lora" in i.name for i in merged.graph.initializer)


def test_export_dynamic_infers_the_batch_axis(tmp_path):
    m = _mlp()
    p = tmp_path / "d.onnx"
    model = burn.onnx.export_dynamic(m, (burn.randn((2, 6)),), (burn.randn((5, 6)),), p)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    x = burn.randn((11, 6))
    _close(m(x).numpy(), _run(p, [x])[0])


def test_dynamic_reshape_and_slice_follow_the_batch(tmp_path):
    def f(x):
        b = x.shape[0]
        y = x.reshape((b, 2, 6)).permute((0, 2, 1))
        return y[:, 1:, :].reshape((b, -1)).sum(axis=-1)
    p = tmp_path / "r.onnx"
    burn.onnx.export(f, (burn.randn((3, 12)),), p, dynamic_axes={"input0": {0: "batch"}})
    x = burn.randn((9, 12))
    _close(f(x).numpy(), _run(p, [x])[0])


def test_size_baked_constant_is_a_clear_error(tmp_path):
    with pytest.raises(OnnxExportError, match="constant .* depends on the dynamic"):
        burn.onnx.export(lambda x: x * float(x.shape[0]), (burn.randn((3, 2)),), tmp_path / "e.onnx",
                         dynamic_axes={"input0": {0: "batch"}})


def test_errors_name_the_op_the_opset_and_the_argument(tmp_path):
    with pytest.raises(OnnxExportError, match="opset 30 is outside 17-26"):
        burn.onnx.export(lambda x: x + 1, (burn.ones((2,)),), tmp_path / "a.onnx", opset=30)
    with pytest.raises(OnnxExportError, match="'nextafter' at opset 19: no ONNX form"):
        burn.onnx.export(lambda x: burn.nextafter(x, x + 1), (burn.ones((2,)),), tmp_path / "b.onnx", opset=19)
    with pytest.raises(OnnxExportError, match="qlora='blockwise' needs opset 21"):
        burn.onnx.export(_trained_lora(q=True), (burn.randn((1, 256)),), tmp_path / "c.onnx", lora="separate",
                         qlora="blockwise")
    with pytest.raises(OnnxExportError, match="dynamic_axes names 'y'"):
        burn.onnx.export(lambda x: x + 1, (burn.ones((2,)),), tmp_path / "d.onnx", dynamic_axes={"y": {0: "n"}})


def test_third_party_rule_and_reference_fallback(tmp_path):
    @burn.backend_extension("test::onnx_scaled_tanh")
    def scaled_tanh(x, k=2.0):
        return burn.tanh(x) * k

    @scaled_tanh.meta
    def _(x, k=2.0):
        return burn.TensorMeta(x.shape, x.dtype)

    @scaled_tanh.kernel("flex")
    def _(x, k=2.0):
        return np.tanh(x) * k

    x = burn.randn((3, 4))
    want, got = _export_and_compare(lambda x: scaled_tanh(x, k=3.0), (x,), tmp_path / "ref.onnx",
                                    op="test::onnx_scaled_tanh")     # through its reference definition
    _close(want[0], got[0])

    @burn_onnx.export_rule("test::onnx_scaled_tanh", onnx="Tanh, Mul")
    def _(ctx, node):
        return ctx.op("Mul", ctx.op("Tanh", node.args[0].name), ctx.scalar(node.kwargs["k"], node.args[0].dtype))
    try:
        model = burn.onnx.export(lambda x: scaled_tanh(x, k=3.0), (x,), tmp_path / "rule.onnx", check=True)
        assert [n.op_type for n in model.graph.node][:2] == ["Tanh", "Mul"]
    finally:
        del RULES["test::onnx_scaled_tanh"]


def test_external_data_writes_weights_beside_the_file(tmp_path):
    m = _mlp()
    p = tmp_path / "ext.onnx"
    burn.onnx.export(m, (burn.randn((2, 6)),), p, external_data=True)
    assert (tmp_path / "ext.onnx.data").exists()
    x = burn.randn((2, 6))
    _close(m(x).numpy(), _run(p, [x])[0])


@pytest.mark.parametrize("dev", flex_and_wgpu(), ids=lambda d: d.kind)
def test_export_traces_on_any_device(dev, tmp_path):
    net = burn.nn.Sequential(burn.nn.Conv2d(1, 4, 3, padding=1, device=dev), burn.nn.ReLU(), burn.nn.Flatten(),
                             burn.nn.Linear(4 * 8 * 8, 5, device=dev))
    x = burn.randn((2, 1, 8, 8), device=dev)
    p = tmp_path / f"{dev.kind}.onnx"
    burn.onnx.export(net, (x,), p, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    x3 = burn.randn((3, 1, 8, 8), device=dev)
    _close(net(x3).numpy(), _run(p, [x3])[0])


@pytest.mark.parametrize("opset", [17, 20, 23, 26])
def test_opsets_17_to_26_encoder_and_spectrogram(opset, tmp_path):
    enc = burn.nn.TransformerEncoder(burn.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation="gelu"), 2)
    enc.eval()
    x = burn.randn((2, 5, 16))
    model = burn.onnx.export(enc, (x,), tmp_path / "e.onnx", opset=opset, check=True)
    assert model.opset_import[0].version == opset and model.ir_version <= 13
    assert ("Gelu" in {n.op_type for n in model.graph.node}) == (opset >= 20)
    fn, args = LIBRARY["signal::stft"]
    want, got = _export_and_compare(fn, args, tmp_path / "s.onnx", opset=opset)
    assert np.max(np.abs(got[0] - want[0])) <= 1e-5 * np.max(np.abs(want[0]))
