"""``import burn`` leaves burn.nn, burn.optim, burn.train, burn.data and burn.capture for their first use
(issue 19: ``import burn`` within 100 ms of ``import numpy``), in fresh processes."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

LATER = ["burn.nn", "burn.optim", "burn.train", "burn.data", "burn.capture"]


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('burn'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_import_burn_loads_no_nn_optim_train_data():
    loaded = _loaded_after("import burn; burn.softmax(burn.ones((2,))).numpy()")
    assert not [m for m in loaded if m.split(".")[:2] in [x.split(".") for x in LATER]], loaded
    assert "burn.fused" in loaded          # burn.softmax is the fused op, without burn.nn


@pytest.mark.parametrize("use, loads", [
    ("burn.nn.Linear", "burn.nn"),
    ("burn.optim.Adam", "burn.optim"),
    ("burn.train.Learner", "burn.train"),
    ("burn.data.DataLoader", "burn.data"),
    ("burn.capture.trace", "burn.capture"),
    ("burn.Graph", "burn.capture"),
])
def test_first_attribute_use_imports_the_subpackage(use, loads):
    loaded = _loaded_after(f"import burn; {use}")
    assert loads in loaded


def test_import_statement_of_a_subpackage_binds_it():
    loaded = _loaded_after("import burn.optim, burn; assert burn.optim.SGD")
    assert "burn.optim" in loaded and "burn.train" not in loaded


def test_capture_loaded_on_first_use_is_the_decorator():
    loaded = _loaded_after("import burn\n"
                           "f = burn.capture(lambda x: x * 2.0)\n"
                           "assert f(burn.ones((2,))).numpy().tolist() == [2.0, 2.0]\n"
                           "assert burn.Graph is burn.capture.Graph")
    assert "burn.capture" in loaded and "burn.nn" not in loaded


def test_unknown_attribute_is_still_an_attribute_error():
    import burn
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        burn.nonesuch


def test_the_first_op_imports_no_plugin_heavyweights():
    # discovery imports every plugin's package __init__; those that need onnx, iroh or mpi4py
    # load them on first use (burn.library.lazy_exports), so a flex user never pays for them
    probe = ("import sys, json, burn\nburn.softmax(burn.ones((2,))).numpy()\n"
             "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    top = set(json.loads(out.stdout.splitlines()[-1]))
    assert not top & {"onnx", "onnxruntime", "iroh", "mpi4py"}, sorted(top & {"onnx", "onnxruntime", "iroh", "mpi4py"})
