"""ParamGroup selection, per-group optimizer settings, gradient clipping and optimizer state files,
checked against PyTorch's param_groups and torch.nn.utils.clip_grad_*."""
import math

import numpy as np
import pytest

import burn
import burn.nn.functional as F
from burn.optim import GradClip, ParamGroup

torch = pytest.importorskip("torch")

AD = burn.Device.flex().autodiff()


def _mlp(seed=0):
    burn.Device.flex().seed(seed)
    return burn.nn.Sequential(burn.nn.Linear(5, 7, device=AD), burn.nn.ReLU(), burn.nn.Linear(7, 3, device=AD))


def _torch_copy(model):
    t = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3)).double()
    with torch.no_grad():
        for tl, bl in ((t[0], model.layers[0]), (t[2], model.layers[2])):
            tl.weight.copy_(torch.from_numpy(bl.weight.numpy().T.astype(np.float64)))   # burn: [d_in, d_out]
            tl.bias.copy_(torch.from_numpy(bl.bias.numpy().astype(np.float64)))
    return t


def _torch_param(tmodel, path):
    _, i, kind = path.split(".")
    return getattr(tmodel[int(i)], kind)


def _batch(rng):
    return rng.standard_normal((8, 5)).astype(np.float32), rng.integers(0, 3, 8)


def _burn_loss(model, x, y):
    return F.cross_entropy(model(burn.tensor(x, device=AD)), burn.tensor(y, device=AD))


def _torch_loss(tmodel, x, y):
    return torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x).double()), torch.from_numpy(y))


class _Tree(burn.nn.Module):
    def __init__(self):
        dev = burn.Device.flex()
        self.encoder = burn.nn.Sequential(burn.nn.Linear(2, 2, device=dev), burn.nn.Linear(2, 2, device=dev))
        self.encoder2 = burn.nn.Linear(2, 2, device=dev)
        self.head = burn.nn.Linear(2, 1, device=dev)
        self.lora_a = burn.nn.Parameter(burn.zeros((2, 1), device=dev))


def _names(group, model):
    return [n for n, _ in group.select(model)]


# -- ParamGroup ------------------------------------------------------------------------------

def test_paths_select_exact_names_and_module_subtrees_but_not_name_prefixes():
    m = _Tree()
    assert _names(ParamGroup(paths="encoder"), m) == ["encoder.layers.0.weight", "encoder.layers.0.bias",
                                                      "encoder.layers.1.weight", "encoder.layers.1.bias"]
    assert _names(ParamGroup(paths="encoder."), m) == _names(ParamGroup(paths="encoder"), m)
    assert _names(ParamGroup.from_paths("head.bias", "encoder2"), m) == ["encoder2.weight", "encoder2.bias",
                                                                          "head.bias"]
    assert _names(ParamGroup(paths="head.b"), m) == []


def test_glob_regex_predicate_and_exclude():
    m = _Tree()
    assert _names(ParamGroup(glob="*.bias"), m) == ["encoder.layers.0.bias", "encoder.layers.1.bias",
                                                    "encoder2.bias", "head.bias"]
    assert _names(ParamGroup.from_glob("encoder.*.weight"), m) == ["encoder.layers.0.weight",
                                                                   "encoder.layers.1.weight"]
    # model order: the root's own parameters come first
    assert _names(ParamGroup.from_regex(r"^lora_|layers\.1\."), m) == ["lora_a", "encoder.layers.1.weight",
                                                                       "encoder.layers.1.bias"]
    assert _names(ParamGroup.from_predicate(lambda path, p: p.shape == (2, 1)), m) == ["lora_a", "head.weight"]
    g = ParamGroup(glob="*.weight", exclude=ParamGroup(regex=r"^encoder\."))
    assert _names(g, m) == ["encoder2.weight", "head.weight"]
    assert _names(ParamGroup(glob="*.weight", exclude=["encoder", "head"]), m) == ["encoder2.weight"]
    # criteria of one constructor are alternatives
    assert _names(ParamGroup(paths="head", regex="lora"), m) == ["lora_a", "head.weight", "head.bias"]


def test_union_intersection_difference_and_repr():
    m = _Tree()
    bias, enc = ParamGroup(glob="*.bias"), ParamGroup(paths="encoder")
    assert _names(bias & enc, m) == ["encoder.layers.0.bias", "encoder.layers.1.bias"]
    assert _names(bias - enc, m) == ["encoder2.bias", "head.bias"]
    assert _names(bias | ParamGroup(paths="lora_a"), m) == ["lora_a"] + _names(bias, m)
    assert repr(bias - enc) == "(ParamGroup(glob='*.bias') - ParamGroup(paths=['encoder']))"
    assert repr(ParamGroup(regex=r"\.lora_", name="lora")) == "ParamGroup(regex='\\\\.lora_')[name='lora']"
    assert "exclude=ParamGroup(paths=['head'])" in repr(ParamGroup(glob="*", exclude="head"))


@pytest.mark.parametrize("kwargs,msg", [
    (dict(), "at least one of"),
    (dict(paths=""), "empty path"),
    (dict(regex="("), "invalid regex"),
    (dict(predicate=3), "predicate must be callable"),
    (dict(paths=[1]), "paths must be strings"),
])
def test_param_group_errors(kwargs, msg):
    with pytest.raises(burn.BurnError, match=msg):
        ParamGroup(**kwargs)


# -- groups in optimizers -----------------------------------------------------------------------

def test_first_matching_group_wins_and_the_rest_use_the_defaults():
    m = _mlp()
    opt = burn.optim.SGD(m, lr=0.1, momentum=0.9, groups=[
        (ParamGroup(glob="*.bias"), {"lr": 0.5}),
        (ParamGroup(paths="layers.2", name="head"), {"momentum": 0.0}),
    ])
    assert [(g["name"], g["paths"]) for g in opt.param_groups] == [
        ("ParamGroup(glob='*.bias')", ["layers.0.bias", "layers.2.bias"]),
        ("head", ["layers.2.weight"]),
        ("default", ["layers.0.weight"])]
    assert [(g["lr"], g["momentum"]) for g in opt.param_groups] == [(0.5, 0.9), (0.1, 0.0), (0.1, 0.9)]
    assert opt.param_groups[0]["params"][0] is m.layers[0].bias
    assert "head: 1 params" in repr(opt)


def test_a_group_without_parameters_is_an_error_naming_it():
    m = _mlp()
    with pytest.raises(burn.BurnError, match=r"group 0 ParamGroup\(regex='lora'\) has no parameters: it selects none"):
        burn.optim.Adam(m, groups=[(ParamGroup(regex="lora"), {"lr": 1.0})])
    with pytest.raises(burn.BurnError, match="was taken by an earlier group"):
        burn.optim.Adam(m, groups=[(ParamGroup(glob="*"), {}), (ParamGroup(glob="*.bias"), {"lr": 1.0})])
    with pytest.raises(burn.BurnError, match=r"unknown option\(s\) \['momentum'\]"):
        burn.optim.Adam(m, groups=[(ParamGroup(glob="*"), {"momentum": 0.9})])
    with pytest.raises(burn.BurnError, match="betas must be two numbers"):
        burn.optim.Adam(m, groups=[(ParamGroup(glob="*"), {"betas": (0.9, 1.5)})])
    with pytest.raises(burn.BurnError, match="nesterov=True needs momentum"):
        burn.optim.SGD(m, nesterov=True)
    with pytest.raises(burn.BurnError, match="must be \\(ParamGroup"):
        burn.optim.SGD(m, groups=[("*.bias", {"lr": 1.0})])


@pytest.mark.parametrize("name,defaults,groups", [
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.01),
     [("*.bias", dict(lr=0.2, weight_decay=0.0)),
      ("layers.2*", dict(momentum=0.5, nesterov=True, weight_decay=0.05))]),
    ("Adam", dict(lr=0.01, weight_decay=0.05),
     [("*.bias", dict(lr=0.03, weight_decay=0.0, betas=(0.8, 0.99))), ("layers.2*", dict(lr=0.002))]),
    ("AdamW", dict(lr=0.01, weight_decay=0.1),
     [("*.bias", dict(weight_decay=0.0)), ("layers.2*", dict(lr=0.03, eps=1e-6))]),
])
def test_per_group_trajectories_match_torch_param_groups(name, defaults, groups):
    model = _mlp()
    tmodel = _torch_copy(model)
    opt = getattr(burn.optim, name)(model, **defaults,
                                    groups=[(ParamGroup(glob=pat), kw) for pat, kw in groups])
    tgroups = [{"params": [_torch_param(tmodel, p) for p in g["paths"]],
                **{k: v for k, v in g.items() if k not in ("name", "paths", "params")}}
               for g in opt.param_groups]
    topt = getattr(torch.optim, name)(tgroups, **defaults)
    rng = np.random.default_rng(1)
    for _ in range(6):
        x, y = _batch(rng)
        loss = _burn_loss(model, x, y)
        opt.step(loss.backward())
        topt.zero_grad()
        tl = _torch_loss(tmodel, x, y)
        tl.backward()
        topt.step()
        assert abs(loss.item() - tl.item()) < 1e-4
    for path, p in model.named_parameters():
        want = _torch_param(tmodel, path).detach().numpy()
        np.testing.assert_allclose(p.numpy(), want.T if want.ndim == 2 else want, rtol=1e-4, atol=1e-5,
                                   err_msg=path)


def test_the_grouping_matters():
    # a control for the test above: a different lr for the biases changes them
    rng = np.random.default_rng(1)
    x, y = _batch(rng)
    a, b = _mlp(), _mlp()
    burn.optim.SGD(a, lr=0.1).step(_burn_loss(a, x, y).backward())
    burn.optim.SGD(b, lr=0.1, groups=[(ParamGroup(glob="*.bias"), {"lr": 0.0})]).step(_burn_loss(b, x, y).backward())
    np.testing.assert_array_equal(a.layers[0].weight.numpy(), b.layers[0].weight.numpy())
    np.testing.assert_array_equal(b.layers[0].bias.numpy(), _mlp().layers[0].bias.numpy())
    assert not np.array_equal(a.layers[0].bias.numpy(), b.layers[0].bias.numpy())


def test_frozen_parameters_get_no_state_and_lists_of_params_are_named_by_position():
    model = _mlp()
    model.layers[0].freeze()
    opt = burn.optim.Adam(model, lr=0.01, groups=[(ParamGroup(paths="layers.0"), {"lr": 1.0})])
    opt.step(model(burn.ones((2, 5), device=AD)).sum().backward())
    assert sorted(opt.state) == ["layers.2.bias", "layers.2.weight"]
    assert sorted(opt.state_dict()[0]) == ["layers.2.bias.m", "layers.2.bias.v",
                                          "layers.2.weight.m", "layers.2.weight.v"]
    w = burn.nn.Parameter(burn.ones((2,), device=AD))
    v = burn.nn.Parameter(burn.ones((3,), device=AD))
    opt = burn.optim.SGD([w, v], lr=0.1, groups=[(ParamGroup(paths="1"), {"lr": 0.5})])
    assert [g["paths"] for g in opt.param_groups] == [["1"], ["0"]]
    opt.step(((w * w).sum() + (v * v).sum()).backward())
    assert w.tolist() == pytest.approx([0.8, 0.8]) and v.tolist() == pytest.approx([0.0, 0.0, 0.0], abs=1e-7)
    with pytest.raises(burn.BurnError, match="the same parameter appears"):
        burn.optim.SGD([w, w])


def test_lr_setter_scales_every_group_proportionally():
    opt = burn.optim.SGD(_mlp(), lr=0.1, groups=[(ParamGroup(glob="*.bias"), {"lr": 1.0})])
    opt.lr = 0.05
    assert opt.lr == 0.05 and opt.param_groups[0]["lr"] == pytest.approx(0.5)
    opt = burn.optim.SGD(_mlp(), lr=0.0, groups=[(ParamGroup(glob="*.bias"), {"lr": 1.0})])
    with pytest.raises(burn.BurnError, match="in proportion to a default lr of 0"):
        opt.lr = 0.1


# -- clipping --------------------------------------------------------------------------------

def _grads_pair():
    model = _mlp()
    tmodel = _torch_copy(model).float()
    x, y = _batch(np.random.default_rng(3))
    grads = (_burn_loss(model, x, y) * 20.0).backward()
    (torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x)), torch.from_numpy(y)) * 20.0).backward()
    return model, tmodel, grads


def _assert_same_grads(model, tmodel, grads):
    for path, p in model.named_parameters():
        want = _torch_param(tmodel, path).grad.numpy()
        np.testing.assert_allclose(p.grad(grads).numpy(), want.T if want.ndim == 2 else want, rtol=1e-5,
                                   atol=1e-6, err_msg=path)


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (0.5, 1.0), (0.3, math.inf), (0.7, 3.0), (1e6, 2.0)])
def test_clip_grad_norm_matches_torch(max_norm, norm_type):
    model, tmodel, grads = _grads_pair()
    _assert_same_grads(model, tmodel, grads)
    total = burn.optim.clip_grad_norm(grads, model, max_norm, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tmodel.parameters(), max_norm, norm_type=norm_type)
    assert total.item() == pytest.approx(ttotal.item(), rel=1e-5)
    assert (total.item() > max_norm) == (max_norm < 1e6)     # both sides of the threshold are exercised
    _assert_same_grads(model, tmodel, grads)


def test_clip_grad_value_matches_torch_and_skips_other_params():
    model, tmodel, grads = _grads_pair()
    before = model.layers[2].weight.grad(grads).numpy()
    out = burn.optim.clip_grad_value(grads, model.layers[0], 0.05)
    torch.nn.utils.clip_grad_value_(tmodel[0].parameters(), 0.05)
    assert out is grads
    _assert_same_grads(model, tmodel, grads)
    np.testing.assert_array_equal(model.layers[2].weight.grad(grads).numpy(), before)
    assert np.abs(model.layers[0].weight.grad(grads).numpy()).max() == pytest.approx(0.05)
    with pytest.raises(burn.BurnError, match="expected burn.Gradients"):
        burn.optim.clip_grad_value({}, model, 1.0)


def test_clip_grad_norm_nonfinite_error():
    w = burn.tensor([1.0, 2.0], device=AD).require_grad()
    grads = (w * float("inf")).sum().backward()
    with pytest.raises(burn.BurnError, match="error_if_nonfinite=False"):
        burn.optim.clip_grad_norm(grads, [w], 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("clip", [GradClip.norm(0.5), GradClip.value(0.02)])
def test_grad_clip_inside_step_matches_torch_clip_then_step(clip):
    model = _mlp()
    tmodel = _torch_copy(model)
    opt = burn.optim.SGD(model, lr=0.1, momentum=0.9, grad_clip=clip,
                         groups=[(ParamGroup(glob="*.bias"), {"lr": 0.3})])
    topt = torch.optim.SGD([{"params": [tmodel[0].bias, tmodel[2].bias], "lr": 0.3},
                            {"params": [tmodel[0].weight, tmodel[2].weight]}], lr=0.1, momentum=0.9)
    rng = np.random.default_rng(1)
    for _ in range(4):
        x, y = _batch(rng)
        grads = _burn_loss(model, x, y).backward()
        raw = model.layers[0].weight.grad(grads).numpy()
        opt.step(grads)
        np.testing.assert_array_equal(model.layers[0].weight.grad(grads).numpy(), raw)   # caller's grads untouched
        topt.zero_grad()
        _torch_loss(tmodel, x, y).backward()
        if clip.kind == "norm":
            tn = torch.nn.utils.clip_grad_norm_(tmodel.parameters(), clip.limit)
            assert opt.last_grad_norm.item() == pytest.approx(tn.item(), rel=1e-4)
        else:
            torch.nn.utils.clip_grad_value_(tmodel.parameters(), clip.limit)
        topt.step()
    for path, p in model.named_parameters():
        want = _torch_param(tmodel, path).detach().numpy()
        np.testing.assert_allclose(p.numpy(), want.T if want.ndim == 2 else want, rtol=1e-4, atol=1e-5)


# -- state -------------------------------------------------------------------------------------

def _train(model, opt, sched, rng, n):
    for _ in range(n):
        x, y = _batch(rng)
        opt.step(_burn_loss(model, x, y).backward())
        if sched is not None:
            sched.step()


def _setup(seed, kind):
    model = _mlp(seed)
    groups = [(ParamGroup(glob="*.bias"), {"weight_decay": 0.0, "lr": 0.02})]
    if kind == "adamw":
        opt = burn.optim.AdamW(model, lr=0.01, weight_decay=0.1, groups=groups, grad_clip=GradClip.norm(1.0))
        warm = burn.optim.LinearWarmup(opt, warmup_steps=3, start_factor=0.1)
        sched = burn.optim.SequentialLR(opt, [warm, burn.optim.CosineAnnealingLR(opt, T_max=10)], milestones=[3])
    else:
        opt = burn.optim.SGD(model, lr=0.05, momentum=0.9, nesterov=True, groups=groups)
        sched = None
    return model, opt, sched


@pytest.mark.parametrize("kind", ["adamw", "sgd"])
def test_resume_from_a_checkpoint_is_bit_identical(tmp_path, kind):
    path = tmp_path / "ckpt.safetensors"
    model, opt, sched = _setup(0, kind)
    rng = np.random.default_rng(7)
    _train(model, opt, sched, rng, 4)
    burn.optim.save(opt, path, model=model, scheduler=sched, metadata={"epoch": "4"})
    rng_copy = np.random.default_rng(0)
    rng_copy.bit_generator.state = rng.bit_generator.state
    _train(model, opt, sched, rng, 5)

    fresh, fopt, fsched = _setup(1, kind)
    assert not np.array_equal(fresh.layers[0].weight.numpy(), model.layers[0].weight.numpy())
    meta = burn.optim.load(fopt, path, model=fresh, scheduler=fsched)
    assert meta == {"epoch": "4"} and fopt.steps == 4
    _train(fresh, fopt, fsched, rng_copy, 5)
    for (path_a, a), (_, b) in zip(model.named_parameters(), fresh.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=path_a)
    assert fopt.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    if sched is not None:
        assert fsched.last_step == sched.last_step == 9
        # an optimizer built without its scheduler still loads (the groups carry the scheduler's base lr)
        plain = burn.optim.AdamW(_mlp(2), lr=0.01, weight_decay=0.1,
                                 groups=[(ParamGroup(glob="*.bias"), {"weight_decay": 0.0, "lr": 0.02})])
        burn.optim.load(plain, path)
        assert plain.param_groups[0]["initial_lr"] == 0.02 and plain.steps == 4


def test_state_dict_is_keyed_by_path_and_load_checks_type_and_grouping(tmp_path):
    model, opt, _ = _setup(0, "sgd")
    _train(model, opt, None, np.random.default_rng(0), 2)
    tensors, config = opt.state_dict()
    assert sorted(tensors) == [f"{p}.momentum" for p in sorted(n for n, _ in model.named_parameters())]
    assert config["optimizer"] == "SGD" and config["steps"] == 2
    assert config["groups"][0]["paths"] == ["layers.0.bias", "layers.2.bias"]
    with pytest.raises(burn.BurnError, match="state is of a SGD optimizer"):
        burn.optim.Adam(_mlp()).load_state_dict(tensors, config)
    with pytest.raises(burn.BurnError, match="parameter groups differ"):
        burn.optim.SGD(_mlp(), lr=0.1).load_state_dict(tensors, config)
    bad = dict(tensors)
    bad["layers.9.weight.momentum"] = bad.pop("layers.0.weight.momentum")
    with pytest.raises(burn.BurnError, match="belongs to no parameter"):
        _setup(1, "sgd")[1].load_state_dict(bad, config)
    bad = dict(tensors)
    bad["layers.0.weight.momentum"] = np.zeros((2, 2), np.float32)
    with pytest.raises(burn.BurnError, match="has shape \\(2, 2\\)"):
        _setup(1, "sgd")[1].load_state_dict(bad, config)
    p = tmp_path / "m.safetensors"
    model.save(p)
    with pytest.raises(burn.BurnError, match="holds no optimizer state"):
        burn.optim.load(opt, p)
