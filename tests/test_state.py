"""State files (burn.nn.state): safetensors round trips, corruption, atomic saves, PyTorch interop.

References: the `safetensors` package reads what burn writes and writes what
burn reads; PyTorch models give the outputs burn must reproduce after loading.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import burn

safetensors_numpy = pytest.importorskip("safetensors.numpy")

FLEX = burn.Device.flex()
AD = FLEX.autodiff()


def _samples(rng):
    """One array per burn dtype, with the awkward values (nan, inf, -0.0, subnormals, extremes)."""
    f = rng.standard_normal((3, 4))
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-40, 6e4, -1e-8, 1.0])
    return {
        "bool": rng.random((2, 3)) < 0.5,
        "uint8": rng.integers(0, 256, (5,), dtype=np.uint8),
        "int8": rng.integers(-128, 128, (2, 2), dtype=np.int8),
        "int32": rng.integers(-2**31, 2**31, (7,), dtype=np.int32),
        "int64": np.array([-2**63, 2**63 - 1, 0, 12345678901234], dtype=np.int64),
        "float16": np.concatenate([special, f.ravel()]).astype(np.float16).reshape(4, 5),
        "bfloat16": np.concatenate([special, f.ravel()]).astype(ml_dtypes.bfloat16).reshape(5, 4),
        "float32": np.concatenate([special, f.ravel()]).astype(np.float32),
        "float64": np.concatenate([special, f.ravel()]).reshape(2, 10),
        "complex64": (f + 1j * f[::-1]).astype(np.complex64),
        "complex128": (f[0] - 3j * f[1]).astype(np.complex128),
        "scalar": np.array(2.5, dtype=np.float32),
        "complex scalar": np.array(1 - 2j, dtype=np.complex128),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


def _bits(a):
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def test_round_trip_is_bit_exact_for_every_dtype(tmp_path):
    arrays = _samples(np.random.default_rng(0))
    state = {k: burn.from_numpy(a) for k, a in arrays.items()}
    path = tmp_path / "all.safetensors"
    burn.nn.save_state_dict(state, path)
    loaded = burn.nn.load_state_dict(path)
    assert list(loaded) == list(arrays)   # header order is kept
    for k, a in arrays.items():
        t = loaded[k]
        assert t.dtype is state[k].dtype and t.shape == a.shape, k
        assert np.array_equal(_bits(t.numpy()), _bits(a)), k
    meta = burn.nn.load_metadata(path)
    assert meta["burn.version"] == burn.__version__
    assert json.loads(meta["burn.dtypes"]) == {k: state[k].dtype.name for k in arrays}


def test_files_are_read_by_the_safetensors_package_and_vice_versa(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file as torch_load
    arrays = _samples(np.random.default_rng(1))
    ours = tmp_path / "ours.safetensors"
    burn.nn.save_state_dict(arrays, ours, metadata={"note": "hi"})
    plain = {k: a for k, a in arrays.items() if k not in ("bfloat16", "complex128", "complex scalar")}
    ref = torch_load(str(ours))
    for k, a in plain.items():
        assert np.array_equal(_bits(ref[k].numpy()), _bits(a)), k
    assert ref["bfloat16"].dtype == torch.bfloat16
    assert np.array_equal(ref["bfloat16"].view(torch.int16).numpy().view(np.uint16), arrays["bfloat16"].view(np.uint16))
    # complex128 has no safetensors tag: other readers see float64 pairs
    assert np.array_equal(ref["complex128"].numpy(), arrays["complex128"].view(np.float64).reshape(-1, 2))

    theirs = tmp_path / "theirs.safetensors"
    safetensors_numpy.save_file(plain, str(theirs), metadata={"format": "np"})
    back = burn.nn.load_state_dict(theirs)
    for k, a in plain.items():
        assert np.array_equal(_bits(back[k].numpy()), _bits(a)), k
    assert burn.nn.load_metadata(theirs) == {"format": "np"}


def _mlp(seed, device=FLEX, dtype=None):
    FLEX.seed(seed)
    return burn.nn.Sequential(burn.nn.Linear(5, 7, device=device, dtype=dtype), burn.nn.ReLU(),
                              burn.nn.Linear(7, 3, device=device, dtype=dtype))


def test_module_save_load_reproduces_outputs(tmp_path):
    a, b = _mlp(0), _mlp(1)
    x = burn.tensor(np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32))
    assert not np.array_equal(a(x).numpy(), b(x).numpy())
    a.save(tmp_path / "m.safetensors", metadata={"epoch": "3"})
    assert b.load(tmp_path / "m.safetensors") is b
    assert np.array_equal(a(x).numpy(), b(x).numpy())
    assert burn.nn.load_metadata(tmp_path / "m.safetensors")["epoch"] == "3"
    c = _mlp(2).load_state(tmp_path / "m.safetensors")
    assert np.array_equal(a(x).numpy(), c(x).numpy())


def test_bfloat16_module_round_trips(tmp_path):
    a, b = _mlp(0, dtype=burn.bfloat16), _mlp(1, dtype=burn.bfloat16)
    a.save(tmp_path / "bf.safetensors")
    b.load(tmp_path / "bf.safetensors")
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert q.dtype is burn.bfloat16 and np.array_equal(_bits(p.numpy()), _bits(q.numpy())), n


def test_load_onto_autodiff_device_gives_trainable_parameters(tmp_path):
    _mlp(0).save(tmp_path / "m.safetensors")
    model = _mlp(1, device=AD).load(tmp_path / "m.safetensors")
    ref = _mlp(0)
    for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        assert isinstance(p, burn.nn.Parameter) and p.requires_grad and p.device == AD, n
        assert np.array_equal(p.numpy(), q.numpy()), n
    x = burn.ones((2, 5), device=AD)
    grads = model(x).sum().backward()
    assert all(p.grad(grads) is not None for p in model.parameters())
    # a bare state on an autodiff device: values there, ready to become leaves
    s = burn.nn.load_state_dict(tmp_path / "m.safetensors", device=AD)
    assert s["layers.0.bias"].device == AD and s["layers.0.bias"].detach().require_grad().requires_grad


class _NoArgs(burn.nn.Module):
    def __init__(self):
        self.fc = burn.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x)


def test_load_on_the_class_builds_then_loads(tmp_path):
    m = _NoArgs()
    m.save(tmp_path / "n.safetensors")
    m2 = _NoArgs.load(tmp_path / "n.safetensors")
    assert isinstance(m2, _NoArgs) and np.array_equal(m2.fc.weight.numpy(), m.fc.weight.numpy())
    with pytest.raises(burn.BurnError, match="constructor without arguments"):
        burn.nn.Linear.load(tmp_path / "n.safetensors")


def test_mismatches_are_all_listed_in_one_error_naming_the_file(tmp_path):
    path = tmp_path / "m.safetensors"
    _mlp(0).save(path)
    other = burn.nn.Sequential(burn.nn.Linear(5, 8), burn.nn.ReLU(), burn.nn.Linear(8, 3, dtype=burn.float64),
                               burn.nn.Linear(3, 1))
    with pytest.raises(burn.BurnError) as e:
        other.load(path)
    msg = str(e.value)
    assert str(path) in msg
    assert "shape of layers.0.weight: file (5, 7), model (5, 8)" in msg
    assert "shape of layers.0.bias: file (7,), model (8,)" in msg
    assert "shape of layers.2.weight: file (7, 3), model (8, 3)" in msg
    assert "dtype of layers.2.bias: file float32, model float64" in msg
    assert "missing: layers.3.weight" in msg and "missing: layers.3.bias" in msg
    # nothing was half-loaded
    assert other.layers[0].bias.shape == (8,)
    # unexpected names, and strict=False ignoring them
    small = burn.nn.Sequential(burn.nn.Linear(5, 7))
    with pytest.raises(burn.BurnError, match="unexpected: layers.2.weight"):
        small.load(path)
    small.load(path, strict=False)
    assert np.array_equal(small.layers[0].weight.numpy(), _mlp(0).layers[0].weight.numpy())


def test_load_state_dict_checks_dtypes_of_arrays_and_tensors():
    lin = burn.nn.Linear(2, 2)
    good = {k: v.numpy() for k, v in lin.state_dict().items()}
    with pytest.raises(burn.BurnError, match="dtype of weight: file float64, model float32"):
        lin.load_state_dict({**good, "weight": good["weight"].astype(np.float64)})
    with pytest.raises(burn.BurnError, match="dtype of bias: file int64, model float32"):
        lin.load_state_dict({**good, "bias": burn.tensor([1, 2])})
    lin.load_state_dict({**good, "bias": [1.0, 2.0]})   # untyped lists take the model's dtype
    assert lin.bias.tolist() == [1.0, 2.0] and lin.bias.dtype is burn.float32


def _valid_bytes(tmp_path):
    p = tmp_path / "ok.safetensors"
    burn.nn.save_state_dict({"a": burn.arange(6, dtype=burn.float32), "b": burn.ones((2, 2))}, p)
    return p.read_bytes()


def _header(raw):
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _rebuild(header, data):
    h = json.dumps(header).encode()
    return len(h).to_bytes(8, "little") + h + data


def _corruptions(raw):
    header, data = _header(raw)
    # expected: the safetensors package's account of the defect, which burn passes on
    out = {
        "empty": (b"", "header too small"),
        "short": (raw[:5], "header too small"),
        "header length": ((10 ** 6).to_bytes(8, "little") + raw[8:], "invalid header length"),
        "bad json": (raw[:8] + b"{not json" + raw[17:], "invalid JSON in header"),
        "truncated data": (raw[:-10], "file not fully covered"),
        "not an object": (_rebuild([1, 2], b""), "invalid JSON in header: invalid type: sequence"),
    }
    h = json.loads(json.dumps(header))
    h["a"]["dtype"] = "F8_E4M3"
    out["unknown dtype"] = (_rebuild(h, data), "invalid shape, data type, or offset")
    h = json.loads(json.dumps(header))
    h["a"]["dtype"] = "X99"
    out["no such dtype"] = (_rebuild(h, data), "unknown variant `X99`")
    h = json.loads(json.dumps(header))
    h["a"]["shape"] = [7]
    out["size mismatch"] = (_rebuild(h, data), "invalid shape, data type, or offset")
    h = json.loads(json.dumps(header))
    del h["b"]["data_offsets"]
    out["missing field"] = (_rebuild(h, data), "missing field `data_offsets`")
    h = json.loads(json.dumps(header))
    h["b"]["shape"], h["b"]["data_offsets"] = h["a"]["shape"], h["a"]["data_offsets"]   # b aliases a's bytes
    out["overlapping data"] = (_rebuild(h, data), "invalid offset for tensor")
    out["trailing bytes"] = (raw + b"\0" * 8, "file not fully covered")
    return out


@pytest.mark.parametrize("case", ["empty", "short", "header length", "bad json", "truncated data", "not an object",
                                  "unknown dtype", "no such dtype", "size mismatch", "missing field",
                                  "overlapping data", "trailing bytes"])
def test_corrupt_files_raise_burn_errors_naming_file_and_defect(tmp_path, case):
    data, expected = _corruptions(_valid_bytes(tmp_path))[case]
    path = tmp_path / f"bad-{case.replace(' ', '-')}.safetensors"
    path.write_bytes(data)
    # the reference reader agrees that the file is broken, and says why
    with pytest.raises(Exception) as ref:
        safetensors_numpy.load_file(str(path))
    assert expected in str(ref.value), str(ref.value)
    for load in (burn.nn.load_state_dict, burn.nn.load_metadata, lambda p: burn.nn.Linear(2, 2).load(p)):
        with pytest.raises(burn.BurnError) as e:
            load(path)
        msg = str(e.value)
        assert str(path) in msg and "not a valid safetensors file" in msg and expected in msg, msg
        assert f"({len(data)} bytes)" in msg, msg


def test_missing_file_and_bad_metadata_are_burn_errors(tmp_path):
    with pytest.raises(burn.BurnError, match="does not exist"):
        burn.nn.load_state_dict(tmp_path / "nope.safetensors")
    with pytest.raises(burn.BurnError, match="cannot read state file"):
        burn.nn.load_metadata(tmp_path)   # a directory
    with pytest.raises(burn.BurnError, match="metadata must map str to str"):
        burn.nn.save_state_dict({"a": burn.ones((1,))}, tmp_path / "m.safetensors", metadata={"step": 3})
    assert not os.listdir(tmp_path)


_CRASH = textwrap.dedent("""
    import os, signal, sys
    import burn
    import burn.nn.state as state

    real = state._atomic_write

    def dying(path, write):
        class Half:                       # dies once 200 bytes are written, however they are chunked
            def __init__(self, f): self.f, self.n = f, 0
            def write(self, b):
                b = memoryview(b).cast("B")
                if self.n + len(b) > 200:
                    self.f.write(b[:200 - self.n])
                    self.f.flush()
                    os.kill(os.getpid(), signal.SIGKILL)
                self.f.write(b); self.n += len(b)
        real(path, lambda f: write(Half(f)))

    state._atomic_write = dying
    burn.Device.flex().seed(99)
    burn.nn.Linear(40, 40).save(sys.argv[1])
    print("survived")
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_crash_during_save_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "model.safetensors"
    FLEX.seed(0)
    old = burn.nn.Linear(40, 40)
    old.save(path)
    before = path.read_bytes()
    proc = subprocess.run([sys.executable, "-c", _CRASH, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "survived" not in proc.stdout
    assert path.read_bytes() == before
    fresh = burn.nn.Linear(40, 40).load(path)
    assert np.array_equal(fresh.weight.numpy(), old.weight.numpy())
    # the only litter is the hidden temp file of the killed save, which nothing reads
    litter = [n for n in os.listdir(tmp_path) if n != path.name]
    assert len(litter) == 1 and litter[0].startswith(".model.safetensors.") and litter[0].endswith(".burn-tmp")
    assert 0 < (tmp_path / litter[0]).stat().st_size < len(before)
    # and a later save works normally
    FLEX.seed(5)
    newer = burn.nn.Linear(40, 40)
    newer.save(path)
    assert np.array_equal(burn.nn.Linear(40, 40).load(path).weight.numpy(), newer.weight.numpy())


def test_saved_files_get_the_permissions_of_ordinary_files(tmp_path):
    (tmp_path / "plain").write_bytes(b"x")
    burn.nn.save_state_dict({"x": burn.ones((1,))}, tmp_path / "m.safetensors")
    assert (tmp_path / "m.safetensors").stat().st_mode == (tmp_path / "plain").stat().st_mode


def test_failed_save_removes_its_temp_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    burn.nn.save_state_dict({"x": burn.ones((3,))}, path)
    before = path.read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        burn.nn.save_state_dict({"x": burn.zeros((3,))}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == [path.name]


# -- PyTorch interop ---------------------------------------------------------------------------

def test_torch_saved_sequential_loads_and_matches_torch_outputs(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    path = tmp_path / "torch.safetensors"
    save_file(tmodel.state_dict(), str(path))
    model = _mlp(1).load_torch_state(path)
    x = np.random.default_rng(3).standard_normal((6, 5)).astype(np.float32)
    with torch.no_grad():
        expected = tmodel(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model(burn.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert np.array_equal(model.layers[0].weight.numpy(), tmodel[0].weight.detach().numpy().T)
    # the wrong architecture: every problem named, with the torch names of the file
    with pytest.raises(burn.BurnError) as e:
        burn.nn.Sequential(burn.nn.Linear(5, 7)).load_torch_state(path)
    assert "unexpected: 2.weight" in str(e.value) and "Linear weights transposed" in str(e.value)


def test_torch_mapping_on_a_bare_file_transposes_linear_weights(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file
    torch.manual_seed(1)
    tl = torch.nn.Linear(4, 2)
    save_file(tl.state_dict(), str(tmp_path / "lin.safetensors"))
    state = burn.nn.load_state_dict(tmp_path / "lin.safetensors", mapping="torch")
    lin = burn.nn.Linear(4, 2).load_state_dict(state)
    x = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tl(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(lin(burn.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    # a callable mapping renames and reshapes as it likes, None drops
    s = burn.nn.load_state_dict(tmp_path / "lin.safetensors",
                                mapping=lambda k, a: None if k == "bias" else ("w", a * 2))
    assert list(s) == ["w"] and np.array_equal(s["w"].numpy(), tl.weight.detach().numpy() * 2)
    with pytest.raises(burn.BurnError, match="mapping must be"):
        burn.nn.load_state_dict(tmp_path / "lin.safetensors", mapping="jax")


def test_torch_bfloat16_weights_load_bit_exact_and_burn_files_load_in_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file
    torch.manual_seed(2)
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3)).to(torch.bfloat16)
    save_file(tmodel.state_dict(), str(tmp_path / "bf.safetensors"))
    model = _mlp(0, dtype=burn.bfloat16).load_torch_state(tmp_path / "bf.safetensors")
    for i in (0, 2):
        tw = tmodel[i].weight.detach().view(torch.int16).numpy().T
        assert np.array_equal(model.layers[i].weight.numpy().view(np.int16), tw)

    # the other way: a burn float32 model saved, read by torch with the inverse mapping
    src = _mlp(3)
    src.save(tmp_path / "burn.safetensors")
    raw = load_file(str(tmp_path / "burn.safetensors"))
    names = burn.nn.state.torch_names(src)
    tm = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    tm.load_state_dict({names[k]: (v.T if k.endswith("weight") else v) for k, v in raw.items()})
    x = np.random.default_rng(5).standard_normal((2, 5)).astype(np.float32)
    with torch.no_grad():
        expected = tm(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(src(burn.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_foreign_integer_dtypes_are_widened_losslessly_or_refused(tmp_path):
    rng = np.random.default_rng(6)
    arrays = {"i16": rng.integers(-2**15, 2**15, 9, dtype=np.int16),
              "u16": rng.integers(0, 2**16, 9, dtype=np.uint16),
              "u32": np.array([0, 2**32 - 1, 7], dtype=np.uint32)}
    safetensors_numpy.save_file(arrays, str(tmp_path / "ints.safetensors"))
    s = burn.nn.load_state_dict(tmp_path / "ints.safetensors")
    assert (s["i16"].dtype, s["u16"].dtype, s["u32"].dtype) == (burn.int32, burn.int32, burn.int64)
    for k, a in arrays.items():
        assert s[k].numpy().tolist() == a.tolist(), k
    safetensors_numpy.save_file({"u64": np.arange(3, dtype=np.uint64)}, str(tmp_path / "u64.safetensors"))
    with pytest.raises(burn.BurnError, match="tensor 'u64' has dtype 'U64', which burn cannot load"):
        burn.nn.load_state_dict(tmp_path / "u64.safetensors")


def test_a_file_replaced_between_header_and_data_reads_is_reread(tmp_path, monkeypatch):
    # the header (safe_open) and the tensors (deserialize) come from two reads of the path;
    # a save renaming a new file over it in between must not pair one file's header with
    # the other's data
    path = tmp_path / "m.safetensors"
    burn.nn.save_state_dict({"x": burn.ones((3,))}, path)
    real, calls = burn.nn.state._header, []

    def racing(p, size):
        calls.append(1)
        if len(calls) == 1:   # a writer replaces the file after burn opened it, before safe_open does
            burn.nn.save_state_dict({"x": burn.zeros((4,)), "y": burn.ones((1,))}, path)
        return real(p, size)

    monkeypatch.setattr(burn.nn.state, "_header", racing)
    s = burn.nn.load_state_dict(path)
    assert len(calls) == 2 and s["x"].tolist() == [0.0] * 4 and s["y"].tolist() == [1.0]
    # a file that keeps changing is an error, not a silent mix
    monkeypatch.setattr(burn.nn.state, "_header", lambda p, size: ({}, [("x", "F32", (9,))]))
    with pytest.raises(burn.BurnError, match="kept changing while it was read"):
        burn.nn.load_state_dict(path)
