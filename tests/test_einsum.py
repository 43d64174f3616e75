"""burn.einsum against torch.einsum (forward and the gradient of every operand) on flex and wgpu,
its errors at the call, and the plan cache."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from burn.ops import einsum as einsum_mod
from devices import flex_and_wgpu

DEVICES = flex_and_wgpu()

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),                               # implicit output
    ("ba,cb", [(3, 2), (4, 3)]),                               # implicit output is sorted: ac
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("bn,anm,bm->ba", [(3, 4), (2, 4, 5), (3, 5)]),            # bilinear, three operands
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 2)]),     # a chain: the path decides
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),                   # summed labels in different orders
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),                                          # trace
    ("iji->ij", [(3, 2, 3)]),
    ("iii->i", [(3, 3, 3)]),
    ("aab,bc->ac", [(3, 3, 4), (4, 2)]),                       # diagonal, then a contraction
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ijk,k->ij", [(2, 3, 4), (4,)]),
    ("ij,kj->", [(2, 3), (4, 3)]),                             # j shared, i and k summed on their own
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i,i->i", [(4,), (4,), (4,)]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),         # ellipsis axes broadcast
    ("...ii->...i", [(2, 3, 3)]),
    ("...ij->ij", [(2, 3, 4)]),                                # ellipsis left out: summed, as torch
    ("b...,b->...", [(3, 2, 4), (3,)]),
    ("ij,jk->ik", [(3, 1), (4, 5)]),                           # a size-1 axis broadcasts
    ("bi,bj->bij", [(1, 3), (4, 2)]),
]


def _run(dev, spec, shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ad = dev.autodiff()
    leaves = [burn.tensor(a, device=ad).require_grad() for a in arrays]
    out = burn.einsum(spec, *leaves)
    cot = rng.standard_normal(out.shape).astype(np.float32)
    grads = (out * burn.tensor(cot, device=ad)).sum().backward()
    tl = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    t_out = torch.einsum(spec, *tl)
    (t_out * torch.tensor(cot, dtype=torch.float64)).sum().backward()
    assert out.shape == tuple(t_out.shape)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-4, atol=1e-4)
    for k, (leaf, t) in enumerate(zip(leaves, tl)):
        np.testing.assert_allclose(leaf.grad(grads).numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=f"gradient of operand {k}")


@pytest.mark.parametrize("dev", DEVICES, ids=str)
@pytest.mark.parametrize("spec, shapes", CASES, ids=[c[0] or "scalars" for c in CASES])
def test_einsum_forward_and_backward_match_torch(dev, spec, shapes):
    _run(dev, spec, shapes)


def test_einsum_integers_match_numpy():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    b = np.arange(20, dtype=np.int64).reshape(4, 5)
    out = burn.einsum("ij,jk->ik", burn.tensor(a), burn.tensor(b))
    assert out.dtype == burn.int64
    np.testing.assert_array_equal(out.numpy(), np.einsum("ij,jk->ik", a, b))
    np.testing.assert_array_equal(burn.einsum("ii", burn.tensor(a[:3, :3])).numpy(), np.trace(a[:3, :3]))


def test_einsum_accepts_a_list_of_operands_and_promotes_dtypes():
    a, b = burn.ones((2, 3), dtype=burn.float32), burn.ones((3,), dtype=burn.float64)
    out = burn.einsum("ij,j->i", [a, b])
    assert out.dtype == burn.float64 and out.tolist() == [3.0, 3.0]


def test_einsum_plan_is_cached_per_subscripts_and_shapes():
    einsum_mod._plan.cache_clear()
    a, b = burn.ones((2, 3)), burn.ones((3, 4))
    for _ in range(3):
        burn.einsum("ij,jk->ik", a, b)
    info = einsum_mod._plan.cache_info()
    assert info.misses == 1 and info.hits == 2
    burn.einsum("ij,jk->ik", burn.ones((5, 3)), b)              # new shapes: planned again
    assert einsum_mod._plan.cache_info().misses == 2


def test_einsum_contraction_order_follows_numpy_einsum_path():
    # (a @ b) @ c costs 1000*100*100 + 1000*100*2; a @ (b @ c) is far cheaper: the plan must take it
    shapes = [(1000, 100), (100, 100), (100, 2)]
    _, pairs, _ = einsum_mod._plan("ij,jk,kl->il", tuple(shapes))
    path, _ = np.einsum_path("ij,jk,kl->il", *[np.zeros(s) for s in shapes], optimize="optimal")
    assert [p[:2] for p in pairs] == [tuple(p) for p in path[1:]] == [(1, 2), (0, 1)]


@pytest.mark.parametrize("spec, shapes, match", [
    ("ij,jk->ik", [(2, 3), (4, 5)], r"einsum: subscript 'j' has size 4 in operand 1 but 3"),
    ("ii", [(2, 3)], r"subscript 'i' has size 3 in operand 0 but 2 where it appears before"),
    ("ij,jk->ik", [(2, 3)], r"name 2 operand\(s\) but 1 were given"),
    ("ij->ik", [(2, 3)], r"output subscript 'k'.*is in no operand"),
    ("ij->ii", [(2, 3)], r"output subscript 'i' appears more than once"),
    ("ij", [(2, 3, 4)], r"operand 0 has 3 dimensions but its term 'ij' names 2"),
    ("ij,j2->i", [(2, 3), (3, 1)], r"invalid subscript '2'"),
    ("i.j", [(2, 3)], r"must be part of an ellipsis"),
    ("i->j->k", [(2,)], r"at most one '->'"),
])
def test_einsum_bad_subscripts_raise_at_the_call(spec, shapes, match):
    ops = [burn.ones(s) for s in shapes]
    with pytest.raises((ValueError, burn.ShapeError), match=match) as info:
        burn.einsum(spec, *ops)
    assert spec in str(info.value)


def test_einsum_shape_errors_name_the_shapes():
    with pytest.raises(burn.ShapeError, match=r"operand shapes \(2, 3\), \(4, 5\)"):
        burn.einsum("ij,jk->ik", burn.ones((2, 3)), burn.ones((4, 5)))


def test_einsum_rejects_bool_and_non_string_subscripts():
    with pytest.raises(burn.DTypeError, match="einsum: not defined for bool"):
        burn.einsum("i,i->", burn.ones((2,), dtype=burn.bool), burn.ones((2,), dtype=burn.bool))
    with pytest.raises(TypeError, match="einsum: subscripts must be a string"):
        burn.einsum(burn.ones((2,)), [0])
