"""A flush's optimizer updates batched into one plan step on flex (burn_flex.batched, the
backend's merge_steps): eager training equals the unbatched plan bit for bit, for Adam, AdamW and
SGD; the update mode is part of the plan's key, so flushes that differ only in it never share a
batched step. (An eager step records one group op per parameter group instead,
tests/test_optim_group_updates.py; these tests take the per-parameter path that captured steps and
the group op's fallbacks record.)"""
import numpy as np
import pytest

import burn
from burn import fusion
from burn.fused import adam_update
from burn_flex.backend import FlexBackend
from plan_steps import steps_run  # noqa: E402  (tests/ is on sys.path under pytest)
from tiny_training import classifier_steps  # noqa: E402


OPTIMIZERS = {
    "adam": lambda m: burn.optim.Adam(m, lr=1e-2),
    "adamw": lambda m: burn.optim.AdamW(m, lr=1e-2, weight_decay=0.1),
    "sgd-nesterov": lambda m: burn.optim.SGD(m, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
}


def _train(make_opt, steps=6):
    train, _ = classifier_steps(make_opt, steps=steps, seed=2)
    (losses, params), names = steps_run(train)
    return losses, params, names


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_eager_steps_batch_their_updates_and_equal_the_unbatched_plan(name, monkeypatch):
    # one update op per parameter, as a captured step records them
    monkeypatch.setattr(burn.optim.Optimizer, "_update_together", lambda self, todo, group: False)
    for cls in (burn.optim.Adam, burn.optim.SGD):
        monkeypatch.setattr(cls, "_update_together", burn.optim.Optimizer._update_together)
    fusion.clear_plan_cache()
    batched = _train(OPTIMIZERS[name])
    assert any(n.endswith("_update_many") for n in batched[2])
    monkeypatch.setattr(FlexBackend, "merge_steps", lambda self, steps, nodes: None)
    fusion.clear_plan_cache()
    single = _train(OPTIMIZERS[name])
    assert not any(n.endswith("_update_many") for n in single[2])
    assert batched[0] == single[0] and batched[0][-1] < batched[0][0]
    for a, b in zip(batched[1], single[1]):
        np.testing.assert_array_equal(a, b)
    fusion.clear_plan_cache()


def test_flushes_that_differ_only_in_the_update_mode_do_not_share_a_plan(monkeypatch):
    import burn.graph
    monkeypatch.setattr(burn.graph, "SMALL_FLUSH_NODES", 0)        # every flush through the planner
    seen = []
    real = fusion._run_steps
    monkeypatch.setattr(fusion, "_run_steps", lambda st, nodes, env: (seen.extend(
        getattr(s[0], "__name__", "") for s in st), real(st, nodes, env))[1])
    rng = np.random.default_rng(3)
    p, g, m, v = (burn.tensor(rng.standard_normal((4, 3)).astype(np.float32)) for _ in range(4))
    v = v * v
    h = burn.tensor([0.1, 0.9, 0.1, 0.999, 0.001, 10.0, 1000.0, 1e-8, 0.5, 0.95], dtype=burn.float64)
    results = {}
    for mode in ("none", "l2", "decoupled", "none"):
        ps = [p + 0.0, p + 1.0]                     # recorded first: the two updates follow each other
        outs = [adam_update(q, g, m, v, h, mode) for q in ps]
        got = [[t.numpy() for t in o] for o in outs]
        for q, o in zip(ps, got):
            want = adam_update.reference(q, g, m, v, h, mode)                 # burn ops, one by one
            for a, b in zip(o, want):
                np.testing.assert_allclose(a, b.numpy(), rtol=1e-6, atol=1e-7)
        results.setdefault(mode, got)
    assert "adam_update_many" in seen                                    # the updates were batched
    assert not np.array_equal(results["none"][0][0], results["l2"][0][0])
    assert not np.array_equal(results["l2"][0][0], results["decoupled"][0][0])
