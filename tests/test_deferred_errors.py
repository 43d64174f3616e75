"""Data-dependent errors at the right place (issue 17 part 2).

An index out of range is known only when the lazy graph runs. It must be a
burn.IndexOutOfRange (an IndexError) naming the op, the bad index and bound and the
user's line where the op was recorded; raised at the read of any tensor that depends
on the bad op (``backward()`` of a loss built from it included) and never at the read
of an unrelated tensor, whose value is still computed.
"""
import numpy as np
import pytest

import burn
from burn import nn

from devices import flex_and_wgpu

F = nn.functional
DEVICES = flex_and_wgpu()
IDS = [d.kind for d in DEVICES]


def _line_of(marker):
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if marker in line and "_line_of" not in line:
                return i
    raise AssertionError(marker)


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
def test_cross_entropy_bad_target_raises_at_backward_not_at_an_unrelated_read(dev):
    ad = dev.autodiff()
    logits = burn.zeros((4, 10), device=ad).require_grad()
    loss = F.cross_entropy(logits, burn.tensor([0, 1, 2, 10], device=ad))   # MARK-CE
    lin = nn.Linear(3, 2, device=dev)
    # the unrelated read flushes the same pending graph: it gets its value, no error
    out = lin(burn.ones((1, 3), device=dev)).tolist()
    assert np.allclose(out, (lin.weight.numpy().sum(axis=0) + lin.bias.numpy())[None])
    with pytest.raises(burn.IndexOutOfRange) as info:
        loss.backward()
    err = info.value
    assert isinstance(err, IndexError) and isinstance(err, burn.BurnError)
    text = str(err)
    assert "cross_entropy" in text and "10" in text, text
    assert f"{__file__}:{_line_of('MARK-CE')}" in text, text
    with pytest.raises(burn.IndexOutOfRange, match="cross_entropy"):
        loss.item()
    # the inputs survive: a corrected call on the same logits works
    good = F.cross_entropy(logits, burn.tensor([0, 1, 2, 9], device=ad))
    assert abs(good.item() - np.log(10)) < 1e-5
    assert logits.grad(good.backward()).shape == (4, 10)


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
@pytest.mark.parametrize("case", ["take", "take_along_axis", "scatter_add", "getitem", "setitem", "index_put",
                                  "embedding", "nll_loss", "cross_entropy_weighted", "CrossEntropyLoss"])
def test_each_data_dependent_op_fails_only_its_dependents(dev, case):
    x = burn.arange(12, dtype=burn.float32, device=dev).reshape((3, 4))
    bad = burn.tensor([0, 7], device=dev)
    calls = {
        "take": lambda: burn.take(x, bad, axis=1),
        "take_along_axis": lambda: burn.take_along_axis(x, burn.tensor([[0], [5], [1]], device=dev), axis=1),
        "scatter_add": lambda: burn.scatter_add(x, burn.tensor([[4], [0], [1]], device=dev),
                                                burn.ones((3, 1), device=dev), axis=1),
        "getitem": lambda: x[bad],
        "setitem": lambda: _setitem(x, bad, 1.0),
        "index_put": lambda: burn.index_put(x, (slice(None), bad), 5.0),
        "embedding": lambda: nn.Embedding(3, 2, device=dev)(bad),
        "nll_loss": lambda: F.nll_loss(F.log_softmax(x, axis=1), burn.tensor([0, 1, 4], device=dev)),
        "cross_entropy_weighted": lambda: F.cross_entropy(x, burn.tensor([0, 1, 4], device=dev),
                                                          weight=burn.ones((4,), device=dev)),
        "CrossEntropyLoss": lambda: nn.CrossEntropyLoss()(x, burn.tensor([0, 1, -5], device=dev)),
    }
    y = calls[case]()
    dependent = (y * 2).sum()
    unrelated = x.sum() + 1
    assert unrelated.item() == 67.0                      # computed, nothing raised
    with pytest.raises(burn.IndexOutOfRange) as info:
        dependent.item()
    text = str(info.value)
    # the user's line: where the lambda records the op (for setitem, the assignment in _setitem)
    first = _line_of("x[key] = v") if case == "setitem" else calls[case].__code__.co_firstlineno
    assert any(f"{__file__}:{n})" in text for n in (first, first + 1)), text
    assert "out of bounds" in text or "must lie in" in text, text
    api = {"embedding": "Embedding", "cross_entropy_weighted": "cross_entropy"}.get(case, case)
    assert f"in {api}," in text, text
    with pytest.raises(IndexError):
        y.numpy()
    assert (x + 1).sum().item() == 78.0                  # the device keeps working


def _setitem(x, key, v):
    x = x + 0
    x[key] = v
    return x


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
def test_failure_propagates_through_later_flushes_and_names_bound_and_index(dev):
    x = burn.zeros((5,), device=dev)
    y = burn.take(x, burn.tensor([1, 5], device=dev))
    burn.graph.graph_for(dev).flush()                   # y fails in this flush, nobody reads it yet
    z = (y + 1).exp()                                    # recorded after the failure: fails too
    w = x + 2
    assert w.tolist() == [2.0] * 5
    with pytest.raises(burn.IndexOutOfRange, match=r"index 5 is out of bounds .*size 5"):
        z.tolist()


def test_an_unrelated_model_save_is_unaffected(tmp_path):
    logits = burn.zeros((2, 3))
    loss = F.cross_entropy(logits, burn.tensor([0, 3]))
    model = nn.Linear(3, 2)
    model.save(str(tmp_path / "m.safetensors"))          # flushes the pending cross-entropy
    assert nn.Linear(3, 2).load(str(tmp_path / "m.safetensors")).weight.shape == (3, 2)
    with pytest.raises(burn.IndexOutOfRange, match="cross_entropy"):
        loss.item()


def test_training_step_with_bad_labels_raises_at_backward_and_keeps_the_model():
    ad = burn.Device.flex().autodiff()
    model = nn.Sequential(nn.Linear(4, 8, device=ad), nn.ReLU(), nn.Linear(8, 3, device=ad))
    opt = burn.optim.SGD(model, lr=0.1)
    before = model[0].weight.numpy().copy()
    x = burn.ones((5, 4), device=ad)
    loss = F.cross_entropy(model(x), burn.tensor([0, 1, 2, 3, 0], device=ad))
    with pytest.raises(burn.IndexOutOfRange, match=r"\[0, 3\)|out of bounds"):
        opt.step(loss.backward())
    assert np.array_equal(model[0].weight.numpy(), before)     # nothing was updated
    loss = F.cross_entropy(model(x), burn.tensor([0, 1, 2, 2, 0], device=ad))
    opt.step(loss.backward())
    assert not np.array_equal(model[0].weight.numpy(), before)


@pytest.mark.parametrize("case", ["nll_loss", "weighted", "per_pixel"])
def test_negative_class_targets_are_out_of_range_not_wrapped(case):
    # a gather wraps -1 to the last class: a silent wrong loss before
    x = burn.zeros((3, 4))
    t = burn.tensor([0, -1, 2])
    calls = {"nll_loss": lambda: F.nll_loss(F.log_softmax(x, axis=1), t),
             "weighted": lambda: F.cross_entropy(x, t, weight=burn.ones((4,))),
             "per_pixel": lambda: F.cross_entropy(burn.zeros((3, 4, 2)), burn.tensor([[0, 1], [2, -1], [0, 0]]))}
    loss = calls[case]()
    with pytest.raises(burn.IndexOutOfRange, match="out of bounds"):
        loss.item()
    assert F.cross_entropy(x, t, ignore_index=-1).item() == pytest.approx(np.log(4))   # -1 ignored on request
