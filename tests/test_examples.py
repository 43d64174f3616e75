"""The README's main job trains to the promised accuracy and saves a loadable model."""
import os
import subprocess
import sys

import numpy as np
import pytest

import burn


def test_the_bundled_digits_are_scikit_learns_load_digits():
    # the examples read burn's own copy (no scikit-learn needed); it must be the same data
    datasets = pytest.importorskip("sklearn.datasets")
    from burn.examples.digits import load_digits_arrays
    images, labels = load_digits_arrays()
    reference = datasets.load_digits()
    assert images.dtype == np.uint8 and labels.dtype == np.uint8
    np.testing.assert_array_equal(images, reference.data)
    np.testing.assert_array_equal(labels, reference.target)


def test_digits_example_reaches_97_percent_and_saves_a_loadable_model(capsys, tmp_path):
    from burn.examples import digits
    acc = digits.main(["--device", "flex", "--seed", "0", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert acc >= 0.97, out
    path = tmp_path / "model.safetensors"
    assert "test accuracy" in out and f"model saved to {path}" in out
    model = digits.DigitsCNN(burn.Device.flex())
    model.load_state(path)
    _, _, xte, yte = digits.load_digits_split(0)
    pred = burn.argmax(model(burn.tensor(xte)), axis=1).numpy()
    assert np.mean(pred == yte) == pytest.approx(acc, abs=1e-6)
    assert burn.nn.load_metadata(path)["test_accuracy"] == f"{acc:.4f}"


def test_digits_example_shows_a_progress_bar_on_a_terminal(tmp_path):
    # `script` gives the example a pseudo-terminal, so rich draws its live bar
    if subprocess.call(["which", "script"], stdout=subprocess.DEVNULL) != 0:
        pytest.skip("util-linux `script` is not installed")
    cmd = f"{sys.executable} -m burn.examples.digits --epochs 2 --out {tmp_path}"
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True,
                       env=dict(os.environ, COLUMNS="120", TERM="xterm"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "epoch 2/2" in r.stdout and "test accuracy" in r.stdout


def test_digits_example_resumes_bit_exactly_from_its_checkpoints(tmp_path, capsys):
    from burn.examples import digits
    straight, part = tmp_path / "straight", tmp_path / "part"
    digits.main(["--device", "flex", "--epochs", "3", "--out", str(straight),
                 "--checkpoint-dir", str(straight / "ckpt")])
    digits.main(["--device", "flex", "--epochs", "1", "--out", str(part), "--checkpoint-dir", str(part / "ckpt")])
    digits.main(["--device", "flex", "--epochs", "3", "--out", str(part), "--checkpoint-dir", str(part / "ckpt"),
                 "--resume"])
    out = capsys.readouterr().out
    assert "resumed from" in out and "after epoch 1" in out
    a = burn.nn.load_state_dict(straight / "model.safetensors")
    b = burn.nn.load_state_dict(part / "model.safetensors")
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k].numpy(), b[k].numpy(), err_msg=k)
