"""The README's main job trains to the promised accuracy."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")


def test_digits_example_reaches_97_percent(capsys):
    from burn.examples import digits
    acc = digits.main(["--device", "flex", "--epochs", "30", "--seed", "0"])
    out = capsys.readouterr().out
    assert acc >= 0.97, out
    assert "test accuracy" in out


def test_digits_example_shows_a_progress_bar_on_a_terminal():
    # `script` gives the example a pseudo-terminal, so rich draws its live bar
    if subprocess.call(["which", "script"], stdout=subprocess.DEVNULL) != 0:
        pytest.skip("util-linux `script` is not installed")
    cmd = f"{sys.executable} -m burn.examples.digits --epochs 2"
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True,
                       env=dict(os.environ, COLUMNS="120", TERM="xterm"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "epoch 2/2" in r.stdout and "test accuracy" in r.stdout
