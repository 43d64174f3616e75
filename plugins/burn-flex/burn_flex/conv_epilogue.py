"""A convolution's bias and relu run inside the direct kernel (``FlexBackend.merge_steps``).

``F.conv2d(x, w, b)`` records ``conv2d``, a ``reshape`` of the bias to [1, O, 1, 1] and an
``add``; a ``relu`` after it joins the add's fused group. Inference only, in practice: in
training, autodiff keeps the relu's input (its gradient is ``where(x > 0, g, 0)``), so the add's
output is a result and nothing is merged. Flex runs that group as a second pass
over the convolution's output (~20-30 us on the digits CNN's [64, 16, 8, 8]: a read, a write and
the loop's overhead per row of 64). Where the plan holds exactly that pattern, and nothing else
reads or keeps the convolution's output (or the add's, when a relu follows), the conv step and
the group's step become one step: the direct kernel adds the bias and applies the relu while the
tile is in registers (``kernels/ll/direct.ll``'s epilogue, the same bits as the add and relu run
after it). The step keeps the conv node's position, so it reads the stride, padding, dilation and
groups from the node on every run, as the conv step did; where the direct kernel does not take
that convolution (another dtype, groups, a large single image on several threads) it runs the
conv kernel, numpy's add and flex's relu: what the unmerged plan computes.

A 2 x 2 max pooling with stride 2 (no padding) that alone reads the relu (or the add) joins the
step too: the kernel lists each pooling window's four positions as one tile and stores only their
maximum (direct.ll's direct_conv_pool), so the convolution's output is never written and the
pooling's pass over it never runs (one thread: the digits CNN's conv + relu + pool blocks 75 ->
50 us and 175 -> 160 us). ``max_pool2d`` is declared with ``plan_attrs``, so a plan holding this
step is reused only for poolings with these attributes (a 3 x 3 / stride 2 / padding 1 pooling
has the same output shapes).
"""
from __future__ import annotations

import ctypes
from functools import partial

import numpy as np

from burn import float32
from burn.dispatch import registry

from . import jit, threads
from .kernels import conv as _conv
from .kernels import conv_direct as _conv_direct
from .kernels.conv_direct import direct_conv, prepared_direct_conv, use_direct
from .kernels.elementwise import _relu

__all__ = ["merge_steps"]

# the pooling the direct kernel folds in (flex's max_pool2d attributes)
_POOL2 = {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "dilation": (1, 1)}


class _ConvBiasRelu:
    """The merged step: ``(x, w, bias (O elements, e.g. [1, O, 1, 1]), **conv attributes) ->
    (relu(conv + bias),)``.

    Example:
        >>> import numpy as np
        >>> from burn_flex.conv_epilogue import _ConvBiasRelu
        >>> x, w = np.ones((1, 1, 3, 3), np.float32), np.ones((2, 1, 2, 2), np.float32)
        >>> b = np.array([-5.0, 1.0], np.float32).reshape(1, 2, 1, 1)
        >>> (y,) = _ConvBiasRelu(True)(x, w, b, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1)
        >>> y[0, :, 0, 0].tolist()
        [0.0, 5.0]
    """

    __slots__ = ("relu", "__name__")

    def __init__(self, relu):
        self.relu = relu
        self.__name__ = "conv2d_bias_relu" if relu else "conv2d_bias"

    def __call__(self, x, w, bias, *, stride, padding, dilation, groups):
        out_hw = _conv._out_hw(x.shape, w.shape[2:], stride, padding, dilation)
        k = self._direct_kernels(x, w, bias, groups, out_hw)
        if k is not None:
            return (direct_conv(k, x, w, stride, padding, dilation, out_hw, bias=bias.reshape(-1), relu=self.relu,
                                **self._in_kernel()),)
        y = np.add(_conv.conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups),
                   bias.reshape(1, w.shape[0], 1, 1))
        return (self._after(_relu(y) if self.relu else y),)

    @staticmethod
    def _direct_kernels(x, w, bias, groups, out_hw):
        """flex's JIT kernels where the direct kernel takes this convolution (float32 operands, a
        bias of O elements, ``use_direct``), else None."""
        k = _conv._jit_columns(np.dtype(np.float32))
        if (x.dtype == w.dtype == bias.dtype == np.float32 and bias.size == w.shape[0]
                and use_direct(k, x.dtype, groups, x.shape[0], w[0].size * out_hw[0] * out_hw[1])):
            return k
        return None

    def _in_kernel(self) -> dict:
        """What else the direct kernel does (``direct_conv``'s keywords)."""
        return {}

    def replay_form(self, attrs):
        """This step with its attributes ``attrs`` bound, for a replay (``burn_flex.replay``)."""
        return _ReplayConv(self, attrs)

    def _after(self, y):
        """Without the direct kernel: what else runs after the relu."""
        return y


class _ConvBiasReluPool(_ConvBiasRelu):
    """The merged step with the 2 x 2 max pooling after it: ``(x, w, bias, **conv attributes) ->
    (max_pool2d(relu(conv + bias)),)``.

    Example:
        >>> import numpy as np
        >>> from burn_flex.conv_epilogue import _ConvBiasReluPool
        >>> x, w = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), np.ones((1, 1, 1, 1), np.float32)
        >>> b = np.zeros((1, 1, 1, 1), np.float32)
        >>> (y,) = _ConvBiasReluPool(True)(x, w, b, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1)
        >>> y[0, 0].tolist()
        [[5.0, 7.0], [13.0, 15.0]]
    """

    __slots__ = ("out_padding", "pool_pos")

    def __init__(self, relu, out_padding=(0, 0, 0, 0), pool_pos=None):
        super().__init__(relu)
        self.__name__ += "_pool2" + ("_padded" if any(out_padding) else "")
        self.out_padding = tuple(out_padding)    # zeros around the result: the next conv's padding
        self.pool_pos = pool_pos                 # the pooling node's position (for the merge)

    def _in_kernel(self) -> dict:
        return {"pool2": True, "out_padding": self.out_padding}

    def _after(self, y):
        y = _conv.max_pool2d(y, **_POOL2)
        if not any(self.out_padding):
            return y
        pt, pb, pl, pr = self.out_padding
        padded = np.zeros(y.shape[:2] + (y.shape[2] + pt + pb, y.shape[3] + pl + pr), y.dtype)
        padded[:, :, pt:pt + y.shape[2], pl:pl + y.shape[3]] = y
        return padded


class _PrePadded:
    """A convolution step whose input arrives padded by ``padding`` (its producer, a pooled step,
    wrote it into zeros): where the run's padding is that one, the step pads nothing; otherwise
    (the plan is shared by flushes whose convolution has other attributes of the same shapes)
    it takes the input back out of the zeros and pads as its attributes say.

    Example:
        >>> import numpy as np
        >>> from burn_flex.conv_epilogue import _PrePadded
        >>> seen = []
        >>> step = _PrePadded(lambda x, w, **a: seen.append((x.shape, a["padding"])), (1, 1, 1, 1))
        >>> step(np.zeros((1, 1, 4, 4)), None, padding=(1, 1, 1, 1))
        >>> step(np.zeros((1, 1, 4, 4)), None, padding=(0, 0, 0, 0))
        >>> seen
        [((1, 1, 4, 4), (0, 0, 0, 0)), ((1, 1, 2, 2), (0, 0, 0, 0))]
    """

    __slots__ = ("inner", "padding", "__name__")

    def __init__(self, inner, padding):
        self.inner, self.padding = inner, tuple(padding)
        self.__name__ = getattr(inner, "__name__", "conv2d") + "_prepadded"

    def replay_form(self, attrs):
        """This step with its attributes ``attrs`` bound, for a replay (``burn_flex.replay``)."""
        inner_form = getattr(self.inner, "replay_form", None)
        if tuple(attrs.get("padding", ())) == self.padding and inner_form is not None:
            return inner_form(dict(attrs, padding=(0, 0, 0, 0)))
        return partial(self, **attrs)

    def __call__(self, x, *rest, padding, **attrs):
        pt, pb, pl, pr = self.padding
        if tuple(padding) == self.padding:
            return self.inner(x, *rest, padding=(0, 0, 0, 0), **attrs)
        x = x[:, :, pt:x.shape[2] - pb, pl:x.shape[3] - pr]
        return self.inner(x, *rest, padding=padding, **attrs)


class _ReplayConv:
    """A merged step of a replayed plan (``burn_flex.replay.FlatReplay``): the attributes bound
    and, for the shapes it is called with (a replay's are fixed), the direct kernel's call
    prepared once (:class:`~burn_flex.kernels.conv_direct.DirectCall`), so that a call runs the
    kernel without deriving its geometry, checks and addresses again (the digits CNN's first
    convolution: 71 -> ~45 us a step for a 30 us kernel). Whatever the prepared call was made
    under is checked on every call (shapes, float32, the direct kernel and the calling thread
    still chosen); otherwise the step runs as the plan's.

    Example:
        >>> import numpy as np
        >>> from burn_flex.conv_epilogue import _ConvBiasRelu
        >>> step = _ConvBiasRelu(True).replay_form({"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1),
        ...                                          "groups": 1})
        >>> x, w = np.ones((2, 1, 3, 3), np.float32), np.ones((2, 1, 2, 2), np.float32)
        >>> (y,) = step(x, w, np.array([-5.0, 1.0], np.float32))
        >>> y[:, :, 0, 0].tolist()
        [[0.0, 5.0], [0.0, 5.0]]
    """

    __slots__ = ("step", "attrs", "call", "weights", "__name__")

    def __init__(self, step, attrs):
        self.step, self.attrs, self.call = step, dict(attrs), None
        self.weights = None             # PackedWeights of call
        self.__name__ = step.__name__

    def __call__(self, x, w, bias):
        call = self.call
        if call is None or x.shape != call.x_shape or w.shape != call.w_shape or x.dtype is not _F32 \
                or w.dtype is not _F32 or bias.dtype is not _F32 or not _direct_inline():
            call = self.call = self._prepare(x, w, bias)
            self.weights = None if call is None else PackedWeights(call)
            if call is None:
                return self.step(x, w, bias, **self.attrs)
        return (call(x, w, bias.reshape(-1), packed=self.weights.of(w)),)

    def _prepare(self, x, w, bias):
        """The DirectCall that ``step`` would make for these arrays on the calling thread, or None."""
        a = self.attrs
        out_hw = _conv._out_hw(x.shape, w.shape[2:], a["stride"], a["padding"], a["dilation"])
        k = self.step._direct_kernels(x, w, bias, a["groups"], out_hw)
        # one image takes the direct kernel or the threaded GEMM by the thread count, unless it is
        # small (then always the direct kernel): only then is the choice fixed for later calls
        one_large = x.shape[0] <= 1 and w[0].size * out_hw[0] * out_hw[1] >= _conv_direct._ONE_IMAGE_MACS
        if k is None or one_large or not _direct_inline():
            return None
        return prepared_direct_conv(k, tuple(x.shape), tuple(w.shape), tuple(a["stride"]), tuple(a["padding"]),
                                    tuple(a["dilation"]), tuple(out_hw), self.step.relu,
                                    **self.step._in_kernel())


_F32 = np.dtype(np.float32)
# the largest weights a replayed convolution keeps packed (with a copy of their bytes)
_KEEP_PACKED_BYTES = 1 << 20


class PackedWeights:
    """A prepared direct convolution's weights packed for its kernel (``DirectCall.pack``), kept
    while their bytes are the same: a replay's weights mostly are from call to call (inference),
    an optimizer may change them in place, and comparing their bytes costs far less than packing
    them (the digits CNN's [32, 16, 3, 3]: ~0.3 us of memcmp against ~6 us). Weights above
    ``_KEEP_PACKED_BYTES`` are packed per call: two more copies of them would be held for little
    gain. The replayed step (:class:`_ReplayConv`) and a native program's prologue
    (``burn_flex.native_replay``) both use it.

    Example:
        >>> import numpy as np
        >>> from burn_flex import jit
        >>> from burn_flex.conv_epilogue import PackedWeights
        >>> from burn_flex.kernels.conv_direct import prepared_direct_conv
        >>> k = jit.kernels()
        >>> call = k and prepared_direct_conv(k, (2, 1, 3, 3), (2, 1, 2, 2), (1, 1), (0, 0, 0, 0), (1, 1), (2, 2))
        >>> pw = None if call is None else PackedWeights(call)
        >>> w = np.ones((2, 1, 2, 2), np.float32)
        >>> pw is None or pw.of(w) is pw.of(w.copy())
        True
    """

    __slots__ = ("call", "copy", "packed")

    def __init__(self, call):
        self.call, self.copy, self.packed = call, None, None

    def of(self, w):
        """The packed form of ``w`` (float32, the call's weight shape)."""
        if w.nbytes > _KEEP_PACKED_BYTES:
            return self.call.pack(w)
        w = np.ascontiguousarray(w)
        if self.copy is None or _memcmp(jit._addr(w), jit._addr(self.copy), w.nbytes) != 0:
            self.packed, self.copy = self.call.pack(w), w.copy()
        return self.packed


def _libc_memcmp():
    try:
        f = ctypes.CDLL(None).memcmp
    except (OSError, AttributeError):
        return lambda a, b, n: 0 if ctypes.string_at(a, n) == ctypes.string_at(b, n) else 1
    f.restype, f.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    return f


# whether the weights changed since they were packed, without copying them
_memcmp = _libc_memcmp()


def _direct_inline() -> bool:
    """Whether float32 convolutions take the prepared direct kernel (tests switch the direct and
    JIT paths off)."""
    return _conv_direct.ENABLED and _conv._JIT_COLUMNS


def _only_reader(nodes, src, reader):
    """Whether node ``src``'s output is read by node ``reader`` alone and kept by no tensor."""
    if src.outs and src.outs[0]() is not None:
        return False
    for n in nodes:
        if n is not reader and any(type(a) is tuple and a[0] is src for a in n.args):
            return False
    return True


def _pattern(steps, nodes, j):
    """``(relu, conv step, reshape step, group step)`` when steps j, j+1, j+2 are a float32
    conv2d on flex's own kernel, the reshape of its bias and a fused group of exactly add(conv,
    bias) [+ relu]; else None."""
    if j + 2 >= len(steps):
        return None
    conv_st, reshape_st, group_st = steps[j], steps[j + 1], steps[j + 2]
    i = conv_st[1]
    # the add [+ relu] step: a compiled group (no node position), or the add alone as its own step
    if i is None or reshape_st[1] != i + 1 or group_st[1] not in (None, i + 2) or len(group_st[3]) != 1:
        return None
    conv, reshape = nodes[i], nodes[i + 1]
    if conv.prim.name != "conv2d" or reshape.prim.name != "reshape" or registry.kernel("conv2d", "flex") \
            is not _conv.conv2d or len(conv.args) != 2 or len(nodes) <= i + 2:
        return None
    c_out = conv.metas[0].shape[1]
    if conv.metas[0].dtype is not float32 or reshape.metas[0].dtype is not float32 \
            or tuple(reshape.metas[0].shape) != (1, c_out, 1, 1):
        return None
    add = nodes[i + 2]
    if add.prim.name != "add" or len(add.args) != 2 or type(add.args[0]) is not tuple \
            or type(add.args[1]) is not tuple or add.args[0] != (conv, 0) or add.args[1] != (reshape, 0):
        return None
    relu = group_st[1] is None and len(nodes) > i + 3 and nodes[i + 3].prim.name == "relu" \
        and tuple(nodes[i + 3].args) == ((add, 0),)
    last = i + 3 if relu else i + 2
    # the group step covers these nodes only: the next step starts right after them
    following = steps[j + 3][1] if j + 3 < len(steps) else len(nodes)
    if following != last + 1 or set(group_st[2]) != {conv_st[3][0], reshape_st[3][0]} or len(group_st[2]) != 2:
        return None
    if not _only_reader(nodes, conv, add) or (relu and not _only_reader(nodes, add, nodes[i + 3])):
        return None
    return relu, conv_st, reshape_st, group_st


def merge_steps(steps, nodes):
    """``FlexBackend.merge_steps``'s convolution part: each conv2d + bias reshape + add [+ relu]
    group (:func:`_pattern`) as one :class:`_ConvBiasRelu` step with the conv node's position
    (after the reshape's step where the reshaped bias is read elsewhere or kept, else reading the
    bias itself); ``(new_steps, index_of)``, or None where there is none.

    Example:
        >>> from burn_flex.conv_epilogue import merge_steps
        >>> assert merge_steps([], []) is None
    """
    out, index_of = [], []
    j = 0
    merged = False
    while j < len(steps):
        found = _pattern(steps, nodes, j)
        if found is None:
            index_of.append(len(out))
            out.append(steps[j])
            j += 1
            continue
        relu, conv_st, reshape_st, group_st = found
        merged = True
        # the bias's reshape to [1, O, 1, 1] runs only where something else reads or keeps it
        # (the fused step takes the bias in any shape of O elements: ~5 us a step in a replay)
        i = conv_st[1]
        keep_reshape = not _only_reader(nodes, nodes[i + 1], nodes[i + 2])
        if keep_reshape:
            out.append(reshape_st)
        pool_st = _pool_after(steps, nodes, j + 3, group_st)
        step = _ConvBiasRelu(relu) if pool_st is None else _ConvBiasReluPool(relu, pool_pos=pool_st[1])
        fused = (step, conv_st[1], list(conv_st[2]) + [reshape_st[3][0] if keep_reshape else reshape_st[2][0]],
                 list(group_st[3] if pool_st is None else pool_st[3]))
        # the conv step's work is in the fused step; the group's (and the pooling's) too, but
        # their index is None so that the fusion planner never rebinds a compiled group into
        # the fused step's place
        index_of += [len(out), len(out) - 1 if keep_reshape else None, None] + ([] if pool_st is None else [None])
        out.append(fused)
        j += 3 if pool_st is None else 4
    if merged:
        _pad_for_next_conv(out, nodes)
    return (out, index_of) if merged else None


def _pad_for_next_conv(steps, nodes):
    """Each pooled step whose result only a padded convolution reads (a plain conv2d step or a
    merged one) writes it padded, and that step pads nothing (:class:`_PrePadded`): the
    convolution's own padding pass (~25 us for the digits CNN's [64, 16, 4, 4]) is gone."""
    for i, st in enumerate(steps):
        if type(st[0]) is not _ConvBiasReluPool or len(st[3]) != 1:
            continue
        slot = st[3][0]
        readers = [j for j, other in enumerate(steps) if slot in other[2]]
        if len(readers) != 1:
            continue
        j = readers[0]
        fn, npos, ins, outs = steps[j]
        if npos is None or not ins or ins[0] != slot or slot in ins[1:]:
            continue
        conv = nodes[npos]
        if conv.prim.name != "conv2d" or not (isinstance(fn, _ConvBiasRelu) or fn is _conv.conv2d):
            continue
        if registry.kernel("conv2d", "flex") is not _conv.conv2d or not conv.attrs:
            continue
        padding = tuple(conv.attrs.get("padding", (0, 0, 0, 0)))
        pool = nodes[st[0].pool_pos]
        if len(padding) != 4 or not any(padding) or min(padding) < 0 or not _only_reader(nodes, pool, conv):
            continue
        steps[i] = (_ConvBiasReluPool(st[0].relu, padding, st[0].pool_pos),) + tuple(st[1:])
        steps[j] = (_PrePadded(fn, padding), npos, ins, outs)


def _pool_after(steps, nodes, j, group_st):
    """Step j when it is flex's float32 max_pool2d with the attributes the direct kernel folds in
    (``_POOL2``), reading the group step's output alone (no other reader, no tensor keeps it)."""
    if j >= len(steps) or len(group_st[3]) != 1:
        return None
    st = steps[j]
    i = st[1]
    if i is None or list(st[2]) != list(group_st[3]) or len(st[3]) != 1:
        return None
    pool = nodes[i]
    if pool.prim.name != "max_pool2d" or registry.kernel("max_pool2d", "flex") is not _conv.max_pool2d:
        return None
    src = pool.args[0] if len(pool.args) == 1 else None
    if type(src) is not tuple or src[1] != 0 or pool.metas[0].dtype is not float32:
        return None
    if {k: tuple(v) for k, v in (pool.attrs or {}).items()} != _POOL2 or not _only_reader(nodes, src[0], pool):
        return None
    return st
