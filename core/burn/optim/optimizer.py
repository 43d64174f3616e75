"""SGD, Adam and AdamW written with burn ops (so they run, lazily and fused, on any device).

``opt.step(grads)`` reads each parameter's gradient from ``grads`` and
rebinds the parameter to its updated value (``assign_``), so pending work
that read the old value keeps seeing it. Frozen parameters and parameters
without a gradient get no state and no update.

Parameter groups. An optimizer takes a Module (parameters named by dotted
path), ``named_parameters()`` pairs / a ``{path: param}`` dict, or a plain
list of parameters (named ``"0"``, ``"1"``, ...), plus
``groups=[(ParamGroup, {overrides}), ...]``. Each parameter joins the first
group whose ParamGroup selects it; the rest form the default group, which
uses the optimizer's keyword arguments and is always last in
``opt.param_groups``. A group left without parameters is an error. Every
entry of ``opt.param_groups`` is a dict with ``name``, ``paths``, ``params``
and that group's hyperparameters; schedulers and users may change its
hyperparameters (``g["lr"] = ...``) between steps.

State is kept per parameter path (``opt.state["layers.0.weight"]``), so
``opt.state_dict()`` / :func:`save` files load into a freshly built model and
optimizer.
"""
from __future__ import annotations

import json

import numpy as np

from .. import capture
from ..autodiff import Gradients, no_grad
from ..errors import BurnError, CaptureError
from ..fused import adam_update, adam_update_group, sgd_update, sgd_update_group  # noqa: F401  (re-exported)
from ..ops.creation import tensor as _tensor, zeros_like
from .clip import GradClip
from .param_group import ParamGroup, named_params
from ..nn.state import _read_arrays, save_state_dict
from ..tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "save", "load"]

_FORMAT = "burn.optim/1"
_META_KEY = "burn.optim"
_SCHED_KEY = "burn.scheduler"
_PREFIX = "optim/"   # names of optimizer tensors in a file shared with the model ('/' is no attribute name)


class Optimizer:
    """Base class: parameter groups and per-parameter state; subclasses define ``update``.

    A subclass lists its hyperparameters (the keyword arguments a group may
    override) in ``__init__``'s call to ``super().__init__`` and implements
    ``update(p, g, state, group) -> new value``.

    Example:
        >>> import burn
        >>> from burn.optim import ParamGroup
        >>> m = burn.nn.Sequential(burn.nn.Linear(2, 3), burn.nn.ReLU(), burn.nn.Linear(3, 1))
        >>> opt = burn.optim.AdamW(m, lr=1e-3, groups=[(ParamGroup(glob="*.bias"), {"weight_decay": 0.0})])
        >>> [(g["name"], g["paths"], g["weight_decay"]) for g in opt.param_groups]   # doctest: +NORMALIZE_WHITESPACE
        [("ParamGroup(glob='*.bias')", ['layers.0.bias', 'layers.2.bias'], 0.0),
         ('default', ['layers.0.weight', 'layers.2.weight'], 0.01)]
        >>> opt.lr = 1e-2                     # scales every group's lr by the same factor
        >>> assert [g["lr"] for g in opt.param_groups] == [1e-2, 1e-2]
    """

    # state entries shaped like their parameter (checked on load)
    param_shaped_state: tuple = ()
    # whether step() can be captured (burn.capture): its Python-side values (step counts,
    # step-dependent scalars) are replayed through capture's callbacks and host values
    capturable: bool = False

    def __init__(self, params, *, groups=None, grad_clip=None, **defaults):
        entries = named_params(params)
        if not entries:
            raise BurnError(f"{type(self).__name__}: got an empty parameter list")
        seen_paths, seen_ids = set(), {}
        for path, p in entries:
            if path in seen_paths:
                raise BurnError(f"{type(self).__name__}: two parameters share the path {path!r}")
            if id(p) in seen_ids:
                raise BurnError(f"{type(self).__name__}: the same parameter appears as {seen_ids[id(p)]!r} "
                                f"and {path!r}; pass each parameter once")
            seen_paths.add(path)
            seen_ids[id(p)] = path
        if grad_clip is not None and not isinstance(grad_clip, GradClip):
            raise BurnError(f"{type(self).__name__}: grad_clip must be a burn.optim.GradClip "
                            f"(GradClip.norm(max_norm) or GradClip.value(v)), got {type(grad_clip).__name__}")
        self.defaults = dict(defaults)
        self._check_group(self.defaults, "the defaults")
        self.params = [p for _, p in entries]
        self.grad_clip = grad_clip
        self.last_grad_norm = None
        self.state: dict[str, dict] = {}
        self.steps = 0
        self._hyper_cache: dict = {}     # per step: hyperparameter tensors shared by parameters
        self.param_groups: list[dict] = []
        taken = set()
        for i, spec in enumerate(groups or ()):
            selector, overrides = self._group_spec(i, spec)
            picked = [(path, p) for path, p in entries if path not in taken and selector.matches(path, p)]
            if not picked:
                anywhere = [path for path, p in entries if selector.matches(path, p)]
                why = (f"every parameter it selects ({', '.join(anywhere[:5])}) was taken by an earlier group"
                       if anywhere else
                       f"it selects none of the {len(entries)} parameters (first paths: "
                       f"{', '.join(p for p, _ in entries[:5])})")
                raise BurnError(f"{type(self).__name__}: group {i} {selector!r} has no parameters: {why}. "
                                f"A parameter joins the first group that selects it.")
            taken.update(path for path, _ in picked)
            group = self._make_group(selector.name or repr(selector), picked, {**self.defaults, **overrides})
            self._check_group(group, f"group {i} {selector!r}")
            self.param_groups.append(group)
        rest = [(path, p) for path, p in entries if path not in taken]
        self.param_groups.append(self._make_group("default", rest, dict(self.defaults)))

    @staticmethod
    def _make_group(name, picked, hyper):
        return {"name": name, "paths": [path for path, _ in picked], "params": [p for _, p in picked], **hyper}

    def _group_spec(self, i, spec):
        if isinstance(spec, ParamGroup):
            spec = (spec, {})
        if not (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], ParamGroup)
                and isinstance(spec[1], dict)):
            raise BurnError(f"{type(self).__name__}: groups[{i}] must be (ParamGroup, {{overrides}}), "
                            f"e.g. (ParamGroup.from_regex(r'\\.bias$'), {{'weight_decay': 0.0}}); got {spec!r}")
        unknown = sorted(set(spec[1]) - set(self.defaults))
        if unknown:
            raise BurnError(f"{type(self).__name__}: groups[{i}] sets unknown option(s) {unknown}; "
                            f"a group may override {sorted(self.defaults)}")
        return spec

    def _check_group(self, group, where):
        """Raise a BurnError naming ``where`` for an invalid hyperparameter (subclasses extend)."""
        lr = group.get("lr")
        if lr is None or not isinstance(lr, (int, float)) or lr < 0:
            raise BurnError(f"{type(self).__name__}: lr must be a number >= 0 in {where}, got {lr!r}")
        wd = group.get("weight_decay", 0.0)
        if not isinstance(wd, (int, float)) or wd < 0:
            raise BurnError(f"{type(self).__name__}: weight_decay must be >= 0 in {where}, got {wd!r}")

    # -- learning rate -------------------------------------------------------------------
    @property
    def lr(self) -> float:
        """The default group's learning rate.

        Setting it scales every group's lr by ``new / old``, so groups keep
        their ratios to the default (a group at 10x stays at 10x). Schedulers
        set each group's ``"lr"`` from its base lr at every step, overriding
        this; to change the base of a scheduled run, change the groups'
        ``"initial_lr"``.

        Example:
            >>> import burn
            >>> w, b = burn.nn.Parameter(burn.zeros((2,))), burn.nn.Parameter(burn.zeros((1,)))
            >>> opt = burn.optim.SGD([w, b], lr=0.1, groups=[(burn.optim.ParamGroup(paths="1"), {"lr": 1.0})])
            >>> opt.lr = 0.01
            >>> assert opt.lr == 0.01 and abs(opt.param_groups[0]["lr"] - 0.1) < 1e-12
        """
        return self.param_groups[-1]["lr"]

    @lr.setter
    def lr(self, value: float) -> None:
        value = float(value)
        if value < 0:
            raise BurnError(f"{type(self).__name__}.lr: must be >= 0, got {value}")
        old = self.param_groups[-1]["lr"]
        for g in self.param_groups:
            if old == 0:
                if g["lr"] != 0:
                    raise BurnError(f"{type(self).__name__}.lr: cannot scale group {g['name']} (lr {g['lr']}) "
                                    f"in proportion to a default lr of 0; set opt.param_groups[i]['lr'] instead")
                g["lr"] = value
            else:
                g["lr"] = g["lr"] * (value / old)

    # -- stepping ------------------------------------------------------------------------
    def step(self, grads: Gradients) -> None:
        """Update every trainable parameter that has a gradient in ``grads``, with its group's settings.

        With ``grad_clip``, the gradients of all trainable parameters are
        clipped together first (on a copy; ``opt.last_grad_norm`` holds the norm).

        Example:
            >>> import burn
            >>> w = burn.nn.Parameter(burn.tensor([2.0], device=burn.Device.flex().autodiff()))
            >>> opt = burn.optim.SGD([w], lr=0.25)
            >>> opt.step((w * w).sum().backward())          # gradient 4
            >>> assert w.item() == 1.0 and opt.steps == 1 and opt.state == {"0": {}}
        """
        if not isinstance(grads, Gradients):
            raise BurnError(f"{type(self).__name__}.step: expected burn.Gradients from backward(), "
                            f"got {type(grads).__name__}")
        tracing = capture.tracing()
        if tracing:
            self._capture_hooks()
        if self.grad_clip is not None:
            mine = Gradients()   # a copy: the caller's gradients stay unclipped
            for p in self.params:
                g = grads.get(p)
                if g is not None and not getattr(p, "frozen", False):
                    mine._set(p, g)
            self.last_grad_norm = self.grad_clip.apply(mine, None)
            if tracing and self.last_grad_norm is not None:
                # a replay hands the step's new norm to the attribute, as the eager step sets it
                capture.on_output(self.last_grad_norm, lambda v: setattr(self, "last_grad_norm", v))
            grads = mine
        self.steps += 1
        self._hyper_cache = {}
        with no_grad():
            for group in self.param_groups:
                todo = []
                for path, p in zip(group["paths"], group["params"]):
                    if getattr(p, "frozen", False):
                        continue
                    g = grads.get(p)
                    if g is None:
                        continue
                    todo.append((p, g, self.state.setdefault(path, {})))
                if len(todo) > 1 and not tracing and self._update_together(todo, group):
                    continue
                for p, g, state in todo:
                    p.assign_(self.update(p, g, state, group))
        self._hyper_cache = {}      # its tensors belong to this step (a trace must not see them kept)

    def _update_together(self, todo, group) -> bool:
        """Update every ``(p, g, state)`` of ``todo`` (a group's parameters with gradients, two or
        more, eager) in one recorded op and return True, or return False: ``step()`` then calls
        ``update`` for each. Adam and SGD with momentum record their group op here; a subclass
        that defines its own ``update`` is always called per parameter."""
        return False

    @staticmethod
    def _one_device(todo) -> bool:
        dev = todo[0][0].device
        return all(p.device == dev for p, _, _ in todo[1:])

    def _capture_hooks(self):
        """Inside a trace: replay this step's bookkeeping, and guard the values the graph bakes in."""
        name = type(self).__name__
        if not self.capturable:
            raise CaptureError(f"burn.capture: {name}.step cannot be captured: {name} does not declare "
                               f"`capturable = True` (its update may keep step-dependent Python values that a "
                               f"graph would bake in). Send such values through burn.capture.host_value and "
                               f"count steps with burn.capture.on_replay, then set capturable = True; or call "
                               f"{name}.step outside the captured function")
        capture.on_replay(self._count_step)
        capture.guard(self._baked_hyperparameters, f"{name}'s hyperparameters (other than those read per step)")

    def _count_step(self):
        self.steps += 1
        self._hyper_cache = {}

    # hyperparameters the update reads per step (host values): changing them needs no new trace
    _per_step_hyperparameters: tuple = ()

    def _baked_hyperparameters(self):
        skip = ("name", "paths", "params", "initial_lr") + self._per_step_hyperparameters
        clip = self.grad_clip.config() if self.grad_clip is not None else None
        return tuple(tuple((k, v) for k, v in g.items() if k not in skip)
                     + (("wd_on", bool(g.get("weight_decay"))), ("momentum_on", bool(g.get("momentum"))))
                     for g in self.param_groups) + (("grad_clip", clip),)

    def update(self, p, g, state, group):
        """The new value of ``p`` given its gradient ``g``, its ``state`` dict (to update) and ``group``.

        Subclasses define it to make a new optimizer; ``step()`` handles
        gradients, frozen parameters, clipping and state bookkeeping.

        Example:
            >>> import burn
            >>> class SignSGD(burn.optim.Optimizer):
            ...     def __init__(self, params, lr=0.1):
            ...         super().__init__(params, lr=lr)
            ...     def update(self, p, g, state, group):
            ...         return p - g.sign() * group["lr"]
            >>> w = burn.nn.Parameter(burn.tensor([1.0, -1.0], device=burn.Device.flex().autodiff()))
            >>> opt = SignSGD([w])
            >>> opt.step((w * 5).sum().backward())
            >>> assert [round(v, 6) for v in w.tolist()] == [0.9, -1.1]
        """
        raise NotImplementedError(f"{type(self).__name__} must define update(p, g, state, group)")

    # -- state ---------------------------------------------------------------------------
    def state_dict(self) -> tuple[dict, dict]:
        """``(tensors, config)``: state tensors named ``"<param path>.<key>"`` and a JSON-able
        config (optimizer type, steps, groups with their paths and hyperparameters,
        scalar state such as Adam's step counts).

        Example:
            >>> import burn
            >>> m = burn.nn.Linear(2, 1, device=burn.Device.flex().autodiff())
            >>> opt = burn.optim.Adam(m, lr=0.1)
            >>> opt.step(m(burn.ones((1, 2), device=m.weight.device)).sum().backward())
            >>> tensors, config = opt.state_dict()
            >>> assert sorted(tensors) == ["bias.m", "bias.v", "weight.m", "weight.v"]
            >>> assert config["state"]["weight"] == {"t": 1} and config["groups"][0]["lr"] == 0.1
        """
        tensors, scalars = {}, {}
        for path, st in self.state.items():
            for key, v in st.items():
                if "." in key:
                    raise BurnError(f"{type(self).__name__}.state_dict: state key {key!r} of {path!r} contains "
                                    f"a '.', which the saved names '<path>.<key>' cannot hold")
                if isinstance(v, Tensor):
                    tensors[f"{path}.{key}"] = v
                elif v is None or isinstance(v, (bool, int, float, str)):
                    scalars.setdefault(path, {})[key] = v
                else:
                    raise BurnError(f"{type(self).__name__}.state_dict: state {path!r}.{key} is a "
                                    f"{type(v).__name__}; only tensors and JSON scalars can be saved")
        groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items() if k != "params"}
                  for g in self.param_groups]
        config = {"format": _FORMAT, "optimizer": type(self).__name__, "steps": self.steps,
                  "grad_clip": None if self.grad_clip is None else self.grad_clip.config(),
                  "groups": groups, "state": scalars}
        return tensors, config

    def load_state_dict(self, tensors: dict, config: dict) -> "Optimizer":
        """Restore what :meth:`state_dict` gave (tensors may be numpy arrays), by parameter path.

        The optimizer type and the grouping (the paths of each group) must
        match; groups' hyperparameters (lr included), step counts and state
        are restored. State tensors land on their parameter's device. The
        ``grad_clip`` rule stays the one given to the constructor.

        Example:
            >>> import burn
            >>> dev = burn.Device.flex().autodiff()
            >>> a, b = burn.nn.Linear(2, 1, device=dev), burn.nn.Linear(2, 1, device=dev)
            >>> oa, ob = burn.optim.SGD(a, lr=0.1, momentum=0.9), burn.optim.SGD(b, lr=0.5, momentum=0.9)
            >>> oa.step(a(burn.ones((1, 2), device=dev)).sum().backward())
            >>> _ = ob.load_state_dict(*oa.state_dict())
            >>> assert ob.lr == 0.1 and ob.state["bias"]["momentum"].tolist() == [1.0]
        """
        import numpy as np
        name = type(self).__name__
        if not isinstance(config, dict) or config.get("format") != _FORMAT:
            raise BurnError(f"{name}.load_state_dict: config is not an optimizer state (format "
                            f"{config.get('format') if isinstance(config, dict) else type(config).__name__!r}, "
                            f"expected {_FORMAT!r})")
        if config.get("optimizer") != name:
            raise BurnError(f"{name}.load_state_dict: the state is of a {config.get('optimizer')} optimizer; "
                            f"build a {config.get('optimizer')} to load it")
        saved = config["groups"]
        mine = [g["paths"] for g in self.param_groups]
        if [g["paths"] for g in saved] != mine:
            diff = []
            for i in range(max(len(saved), len(mine))):
                was = saved[i]["paths"] if i < len(saved) else None
                now = mine[i] if i < len(mine) else None
                if was != now:
                    diff.append(f"group {i}: saved {was}, now {now}")
            raise BurnError(f"{name}.load_state_dict: the parameter groups differ from the saved ones "
                            f"(build the model and the optimizer's groups as when saving):\n  " + "\n  ".join(diff[:4]))
        by_path = {}
        for g in self.param_groups:
            by_path.update(zip(g["paths"], g["params"]))
        new_state: dict[str, dict] = {}
        for full, v in tensors.items():
            path, _, key = full.rpartition(".")
            if path not in by_path:
                raise BurnError(f"{name}.load_state_dict: state tensor {full!r} belongs to no parameter of this "
                                f"optimizer (known paths: {', '.join(list(by_path)[:5])}, ...)")
            p = by_path[path]
            if isinstance(v, Tensor):
                t = v.detach() if v.device == p.device else v.detach().to_device(p.device)
            else:
                v = np.asarray(v)
                t = _tensor(v, device=p.device, dtype=v.dtype)
            if key in self.param_shaped_state and tuple(t.shape) != tuple(p.shape):
                raise BurnError(f"{name}.load_state_dict: state {full!r} has shape {tuple(t.shape)}, its "
                                f"parameter has {tuple(p.shape)}")
            new_state.setdefault(path, {})[key] = t
        for path, st in config.get("state", {}).items():
            if path not in by_path:
                raise BurnError(f"{name}.load_state_dict: saved state of {path!r} belongs to no parameter of "
                                f"this optimizer")
            new_state.setdefault(path, {}).update(st)
        for g, s in zip(self.param_groups, saved):
            for k, v in s.items():
                if k in ("name", "paths"):
                    continue
                if k == "initial_lr":     # a scheduler's base lr, present once one was built
                    g[k] = v
                    continue
                if k not in g:
                    raise BurnError(f"{name}.load_state_dict: saved group {g['name']} has option {k!r}, "
                                    f"which {name} does not know")
                g[k] = tuple(v) if isinstance(g[k], tuple) and isinstance(v, list) else v
        self.state = new_state
        self.steps = int(config.get("steps", 0))
        return self

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for g in self.param_groups:
            hyper = ", ".join(f"{k}={v}" for k, v in g.items() if k not in ("name", "paths", "params"))
            lines.append(f"  {g['name']}: {len(g['params'])} params, {hyper}")
        if self.grad_clip is not None:
            lines.append(f"  grad_clip={self.grad_clip!r}")
        return "\n".join(lines + [")"])


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, Nesterov and weight decay (PyTorch semantics).

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=dev))
        >>> opt = burn.optim.SGD([w], lr=0.1)
        >>> opt.step((w * w).sum().backward())
        >>> assert abs(w.item() - 0.8) < 1e-6
    """

    param_shaped_state = ("momentum",)
    capturable = True

    def __init__(self, params, lr=1e-2, momentum=0.0, nesterov=False, weight_decay=0.0, dampening=0.0, *,
                 groups=None, grad_clip=None):
        super().__init__(params, groups=groups, grad_clip=grad_clip, lr=lr, momentum=momentum,
                         nesterov=nesterov, weight_decay=weight_decay, dampening=dampening)

    @property
    def _per_step_hyperparameters(self):
        # with momentum every group's numbers travel in a host tensor (OneCycleLR cycles momentum);
        # without, the lr does (a 0-d host scalar) and weight decay is an attribute
        if all(g["momentum"] for g in self.param_groups):
            return ("lr", "weight_decay", "dampening", "momentum")
        return ("lr",)

    def _check_group(self, group, where):
        super()._check_group(group, where)
        if group["momentum"] < 0:
            raise BurnError(f"SGD: momentum must be >= 0 in {where}, got {group['momentum']}")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise BurnError(f"SGD: nesterov=True needs momentum > 0 and dampening = 0 in {where} "
                            f"(got momentum={group['momentum']}, dampening={group['dampening']})")

    def update(self, p, g, state, group):
        """One SGD step for parameter ``p`` with gradient ``g`` (momentum buffer kept in ``state``).

        ``step()`` calls it for each parameter; call it directly to test an update rule.

        Example:
            >>> import burn
            >>> p = burn.nn.Parameter(burn.tensor([1.0]))
            >>> opt = burn.optim.SGD([p], lr=0.1)
            >>> new = opt.update(p, burn.tensor([2.0]), {}, opt.param_groups[0])
            >>> assert abs(new.item() - 0.8) < 1e-6
        """
        mom = group["momentum"]
        if mom:
            # one fused node per parameter instead of ~6 recorded ops
            buf = state.get("momentum")

            def numbers():
                return (group["lr"], group["weight_decay"], group["momentum"], 1 - group["dampening"])
            h = _hyper(self._hyper_cache, p, group, numbers, "SGD", _constant_recipe(numbers))
            mode = ("first" if buf is None else "next", bool(group["weight_decay"]), bool(group["nesterov"]))
            p_new, new_buf = sgd_update(p, g, g if buf is None else buf, h, mode)
            _keep(state, "momentum", new_buf)
            return p_new
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        return p - g * _host_scalar(self._hyper_cache, p, group, lambda: group["lr"], "SGD lr")

    def _update_together(self, todo, group) -> bool:
        # every parameter's momentum step as one burn::sgd_update_group, where the buffers all
        # start now or all exist (one mode)
        if type(self).update is not SGD.update or not group["momentum"] or not self._one_device(todo):
            return False
        first = {state.get("momentum") is None for _, _, state in todo}
        if len(first) != 1:
            return False
        first = first.pop()

        def numbers():
            return (group["lr"], group["weight_decay"], group["momentum"], 1 - group["dampening"])
        h = _hyper(self._hyper_cache, todo[0][0], group, numbers, "SGD", _constant_recipe(numbers))
        mode = ("first" if first else "next", bool(group["weight_decay"]), bool(group["nesterov"]))
        outs = sgd_update_group(*[x for p, g, state in todo for x in (p, g, g if first else state["momentum"])],
                                h, mode=mode)
        for i, (p, _, state) in enumerate(todo):
            p.assign_(outs[2 * i])
            _keep(state, "momentum", outs[2 * i + 1])
        return True


class Adam(Optimizer):
    """Adam (Kingma & Ba), with L2 weight decay added to the gradient (PyTorch's Adam).

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=dev))
        >>> opt = burn.optim.Adam([w], lr=0.1)
        >>> opt.step((w * w).sum().backward())
        >>> assert abs(w.item() - 0.9) < 1e-5
    """

    decoupled = False
    param_shaped_state = ("m", "v")
    capturable = True
    _per_step_hyperparameters = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, *,
                 groups=None, grad_clip=None):
        super().__init__(params, groups=groups, grad_clip=grad_clip, lr=lr, betas=tuple(betas), eps=eps,
                         weight_decay=weight_decay)

    def _check_group(self, group, where):
        super()._check_group(group, where)
        betas = group["betas"]
        if isinstance(betas, list):
            betas = group["betas"] = tuple(betas)
        if not (isinstance(betas, tuple) and len(betas) == 2 and all(0 <= b < 1 for b in betas)):
            raise BurnError(f"{type(self).__name__}: betas must be two numbers in [0, 1) in {where}, got {betas!r}")
        if group["eps"] < 0:
            raise BurnError(f"{type(self).__name__}: eps must be >= 0 in {where}, got {group['eps']}")

    def update(self, p, g, state, group):
        """One Adam step for ``p`` with gradient ``g``; ``state`` holds ``m``, ``v`` and the step count ``t``.

        Example:
            >>> import burn
            >>> p = burn.nn.Parameter(burn.tensor([1.0]))
            >>> opt = burn.optim.Adam([p], lr=0.1)
            >>> state = {}
            >>> new = opt.update(p, burn.tensor([3.0]), state, opt.param_groups[0])
            >>> assert abs(new.item() - 0.9) < 1e-5 and state["t"] == 1     # Adam's first step moves by lr
        """
        if "m" not in state:
            state["m"], state["v"], state["t"] = zeros_like(p), zeros_like(p), 0
        state["t"] += 1
        if capture.tracing():
            capture.on_replay(lambda: state.__setitem__("t", state["t"] + 1))
        # the step-dependent numbers travel as one small tensor, not as attributes, so
        # every step records the same graph structure and reuses its cached plan
        h = _hyper(self._hyper_cache, p, group, lambda: _adam_numbers(group, state["t"]), type(self).__name__,
                   lambda: ("burn.optim.adam", {**{k: group[k] for k in _ADAM_KEYS}, "t": state["t"]}),
                   step_of=lambda: state["t"])
        mode = ("decoupled" if self.decoupled else "l2") if group["weight_decay"] else "none"
        p_new, m, v = adam_update(p, g, state["m"], state["v"], h, mode)
        _keep(state, "m", m)
        _keep(state, "v", v)
        return p_new

    def _update_together(self, todo, group) -> bool:
        # every parameter's step as one burn::adam_update_group, where they share a step count
        # (so one h) and a device
        if type(self).update is not Adam.update or not self._one_device(todo):
            return False
        fresh = [("m" not in state) for _, _, state in todo]
        if len({0 if new else state.get("t", 0) for new, (_, _, state) in zip(fresh, todo)}) != 1:
            return False
        t = (0 if fresh[0] else todo[0][2].get("t", 0)) + 1
        h = _hyper(self._hyper_cache, todo[0][0], group, lambda: _adam_numbers(group, t), type(self).__name__)
        mode = ("decoupled" if self.decoupled else "l2") if group["weight_decay"] else "none"
        args = []
        for new, (p, g, state) in zip(fresh, todo):
            args += (p, g) + ((zeros_like(p), zeros_like(p)) if new else (state["m"], state["v"]))
        outs = adam_update_group(*args, h, mode=mode)     # its checks raise before any state changes
        for i, (new, (p, _, state)) in enumerate(zip(fresh, todo)):
            state["t"] = t
            p.assign_(outs[3 * i])
            if new:
                state["m"], state["v"] = outs[3 * i + 1], outs[3 * i + 2]
            else:
                _keep(state, "m", outs[3 * i + 1])
                _keep(state, "v", outs[3 * i + 2])
        return True


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's AdamW.

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=dev))
        >>> burn.optim.AdamW([w], lr=0.1, weight_decay=0.5).step((w * w).sum().backward())
        >>> assert abs(w.item() - (1.0 * (1 - 0.05) - 0.1)) < 1e-5
    """

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, *,
                 groups=None, grad_clip=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, groups=groups,
                         grad_clip=grad_clip)


# -- fused per-parameter updates ----------------------------------------------------------
# Each step is one call of a backend extension of burn.fused (burn::adam_update,
# burn::sgd_update), through the extension's ordinary call path.

_ADAM_KEYS = ("lr", "betas", "eps", "weight_decay")


def _adam_numbers(group, t):
    b1, b2 = group["betas"]
    lr, wd = group["lr"], group["weight_decay"]
    return (lr, b1, 1 - b1, b2, 1 - b2, 1.0 / (1 - b1 ** t), 1.0 / (1 - b2 ** t), group["eps"], wd, 1 - lr * wd)


class _AdamScalars(capture.Recipe):
    """A loaded graph's Adam scalars: the saved hyperparameters, the step count going on from the saved one."""

    kind = "burn.optim.adam"

    def __call__(self):
        self.params["t"] += 1
        return np.asarray(_adam_numbers(self.params, self.params["t"]), dtype=np.float64)


capture.register_host_recipe("burn.optim.adam", _AdamScalars)


def _constant_recipe(numbers):
    """A host recipe that saves ``numbers()`` (at save time) as a constant."""
    return lambda: ("burn.constant", {"value": numbers()})


def _hyper(cache, p, group, numbers, name, recipe=None, step_of=None):
    """The float64 tensor of an update's scalars ``numbers()`` on ``p``'s device (one per
    distinct tuple and step). Inside a trace it is a host value: computed again, from the
    group and state of the moment, before each replay; it is then shared only within a group
    (another group's lr may change alone), and ``step_of`` (the step count the numbers read)
    is guarded to stay equal among the parameters that share it."""
    values = numbers()
    tracing = capture.tracing()
    key = (id(p.device), id(group) if tracing else None, values)
    h = cache.get(key)
    if h is None:
        if tracing:
            h = capture.host_value(lambda: np.asarray(numbers(), dtype=np.float64), dtype="float64",
                                   device=p.device, name=f"{name} {group['name']} scalars", recipe=recipe)
            cache[("step_of", key)] = step_of
        else:
            h = _tensor(np.asarray(values, dtype=np.float64), device=p.device)
        cache[key] = h
    elif tracing and step_of is not None:
        first = cache[("step_of", key)]
        capture.guard(lambda: step_of() == first(), f"the step counts of the parameters of {name} group "
                                                    f"{group['name']!r} sharing one set of scalars being equal")
    return h


def _host_scalar(cache, p, group, value, name, recipe=None, step_of=None):
    """``value()`` as a 0-d tensor of ``p``'s dtype and device (float64 on the host, then cast),
    shared by the parameters of one step; a host value inside a trace (see :func:`_hyper`)."""
    h = _hyper(cache, p, group, value, name, recipe or _constant_recipe(value), step_of)
    key = ("cast", id(h), p.dtype)
    t = cache.get(key)
    if t is None:
        t = cache[key] = h.astype(p.dtype)
    return t


def _keep(state, key, value):
    """Store a state tensor: in place when there is one (so a captured step updates it, as
    ``assign_`` is what a trace sees), else as a new entry."""
    old = state.get(key)
    if isinstance(old, Tensor) and old.shape == value.shape and old.dtype is value.dtype:
        old.assign_(value)
    else:
        state[key] = value


# -- files ----------------------------------------------------------------------------------

def save(opt: Optimizer, path, *, model=None, scheduler=None, metadata: dict | None = None) -> None:
    """Write ``opt``'s state (and optionally ``model``'s tensors and ``scheduler``'s position)
    to one safetensors file, atomically.

    Optimizer tensors are stored as ``"optim/<param path>.<key>"``, the model's
    under their own names, and the optimizer config (JSON) in the metadata
    key ``"burn.optim"`` (the scheduler's under ``"burn.scheduler"``), next
    to your ``metadata`` (``str -> str``). Read it back with :func:`load`.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
        >>> dev = burn.Device.flex().autodiff()
        >>> m = burn.nn.Linear(2, 1, device=dev)
        >>> opt = burn.optim.Adam(m, lr=0.1)
        >>> opt.step(m(burn.ones((1, 2), device=dev)).sum().backward())
        >>> burn.optim.save(opt, p, model=m, metadata={"epoch": "1"})
        >>> m2 = burn.nn.Linear(2, 1, device=dev)
        >>> opt2 = burn.optim.Adam(m2, lr=0.1)
        >>> assert burn.optim.load(opt2, p, model=m2)["epoch"] == "1"
        >>> assert (m2.weight.numpy() == m.weight.numpy()).all() and opt2.state["weight"]["t"] == 1
    """
    tensors, config = opt.state_dict()
    state = {}
    if model is not None:
        for k, v in model.state_dict().items():
            if k.startswith(_PREFIX):
                raise BurnError(f"burn.optim.save: model tensor {k!r} collides with the optimizer's names "
                                f"({_PREFIX}...); save the model to a separate file")
            state[k] = v
    state.update({_PREFIX + k: v for k, v in tensors.items()})
    meta = dict(metadata or {})
    for key in (_META_KEY, _SCHED_KEY):
        if key in meta:
            raise BurnError(f"burn.optim.save: metadata key {key!r} is reserved")
    meta[_META_KEY] = json.dumps(config)
    if scheduler is not None:
        meta[_SCHED_KEY] = json.dumps(scheduler.state_dict())
    save_state_dict(state, path, meta)


def load(opt: Optimizer, path, *, model=None, scheduler=None, strict: bool = True) -> dict:
    """Load a file written by :func:`save` into ``opt`` (and ``model``, ``scheduler``), in place.

    Returns the file's metadata without burn's own keys. Model tensors are
    checked as by ``Module.load_state_dict`` (``strict`` applies to them);
    without ``model`` they are ignored.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "opt.safetensors")
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=burn.Device.flex().autodiff()))
        >>> burn.optim.save(burn.optim.SGD([w], lr=0.3), p)
        >>> opt = burn.optim.SGD([w], lr=0.1)
        >>> _ = burn.optim.load(opt, p)
        >>> assert opt.lr == 0.3
    """
    import os
    arrays, meta = _read_arrays(path)
    where = os.fspath(path)
    if _META_KEY not in meta:
        raise BurnError(f"burn.optim.load: {where!r} holds no optimizer state (no {_META_KEY!r} metadata); "
                        f"write it with burn.optim.save(opt, path)")
    config = json.loads(meta[_META_KEY])
    opt_tensors = {k[len(_PREFIX):]: a for k, a in arrays.items() if k.startswith(_PREFIX)}
    try:
        if model is not None:
            model.load_state_dict({k: a for k, a in arrays.items() if not k.startswith(_PREFIX)}, strict=strict)
        opt.load_state_dict(opt_tensors, config)
        if scheduler is not None:
            if _SCHED_KEY not in meta:
                raise BurnError("the file holds no scheduler state (saved without scheduler=)")
            scheduler.load_state_dict(json.loads(meta[_SCHED_KEY]))
    except BurnError as e:
        raise BurnError(f"burn.optim.load from {where!r}: {e}") from None
    return {k: v for k, v in meta.items() if not k.startswith("burn.")}
