"""Direct float32 convolution on flex's JIT (``kernels/ll/direct.ll``): no im2col columns.

im2col + GEMM writes every input value kH * kW times into the columns and, for the small
images of a CNN's later layers or its one-channel first layer, runs GEMMs far below BLAS's
speed (a [16, 9] @ [9, 4096] at a third of it: packing costs as much as a K this short saves).
The direct kernel reads the (padded) input in place: a tile of positions times 8 or 16 output
channels in registers, one FMA per tap and channel block, stores the tile transposed into the
NCHW output. One thread, this machine, against im2col + GEMM (+ the folded layout's transposing
copy): the digits CNN's 1->16 conv on 8 x 8 images 141 -> 43 us, its 16->32 conv on 4 x 4 images
257 -> 164 us, LeNet's 1->6 5x5 conv 488 -> 328 us and 6->16 5x5 conv 534 -> 229 us, a 32->64 3x3
conv on 16 x 16 images 5.3 -> 3.7 ms (FMA-bound, near the core's peak).

The gradients reuse the kernel: a stride-1 input gradient is the direct convolution of the
gradient with the flipped, transposed weights (:func:`direct_grad_input`), the weight gradient
the kernel with its roles swapped (:func:`direct_grad_weight`), and for the first layer of a CNN
(few taps or channels, where both leave lanes idle) a second kernel vectorized over rows of
output positions (:func:`grad_weight_rows`; one thread: LeNet's 1->6 5x5 weight gradient 567 ->
271 us).

The forward convolution of ``burn_flex.kernels.conv.conv2d`` runs here for float32, one group,
with the JIT loaded; images are independent, so chunks of them may run on flex's native pool (small
convolutions on the calling thread, large ones split: see :class:`DirectCall`). A single large
image on several threads keeps the threaded BLAS GEMM (the kernel splits only over images).
The kernel can also add a bias and apply relu to a tile before storing it (``bias=``,
``relu=``): ``burn_flex.conv_epilogue`` folds a convolution's bias and activation into it.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import jit, native_pool, threads
from .elementwise import _relu

__all__ = ["DirectCall", "direct_conv", "direct_grad_input", "direct_grad_input_ok", "direct_grad_weight",
           "direct_grad_weight_ok", "grad_weight_rows", "grad_weight_rows_ok", "prepared_direct_conv", "use_direct"]

# tests switch this off to compare with the im2col + GEMM paths
ENABLED = True
# one image at least this many multiply-adds, and several threads: the threaded GEMM instead
_ONE_IMAGE_MACS = 1 << 22
# from this many multiply-adds a weight gradient's images are split into blocks run in parallel
_POOL_MACS = 1 << 26
# A convolution of _SPLIT_MACS multiply-adds (~0.7 ms on one core) and more splits its images over
# the native pool (burn_flex.native_pool) in chunks of at least _CHUNK_MACS (~5 us: a hand-off to a
# spinning worker costs ~1 us). Alone, smaller ones gain too (LeNet's 6 -> 16 conv, 9.8 M
# multiply-adds: 230 -> 134 us on two threads, the worker hot), but not inside a training step on
# this 2-vCPU VM (LeNet's SGD step, two threads, in place: its convs 430 -> 470 us split): between
# kernels the worker sleeps, waking it costs the caller ~10-100 us, and with threaded BLAS,
# OpenBLAS's own worker spins on the second core for ~0.1 s after each GEMM; a worker left asleep
# (a call that does not wake it) gave nothing either. _SPLIT_MACS is the measured compromise.
_SPLIT_MACS = 1 << 25
_CHUNK_MACS = 1 << 18


def use_direct(k, dt, groups, n, macs_per_image) -> bool:
    """Whether ``conv2d`` takes the direct kernel (float32, one group, JIT kernels ``k`` loaded)."""
    if not ENABLED or k is None or dt != np.float32 or groups != 1:
        return False
    return n > 1 or threads.num_threads() == 1 or macs_per_image < _ONE_IMAGE_MACS


def _call_tile(k, c_out, pool2):
    """``(positions, blocks, lanes per block)`` of a direct convolution's kernel (the key of
    ``k.direct_conv``; a pooled call's kernel is ``k.direct_conv_pool[blocks, lanes]``). Where the
    CPU has 512-bit vectors, direct.ll's 16-lane tiles: 4 positions x 32 channels for more than 16
    output channels (twice the multiply-adds per instruction), 4 x 16 for 9 to 16 (and for a
    pooled call's fewer: its tile is 4 positions, one window); else its 8-lane tiles, 4 x 16
    (8 x 8 for at most 8 channels, unpooled). Every tile gives the same bits."""
    if k.vector_bits >= 512:
        if c_out > 16:
            return 4, 2, 16
        if c_out > 8 or pool2:
            return 4, 1, 16
    return (8, 1, 8) if c_out <= 8 and not pool2 else (4, 2, 8)


def _zero_padded(offsets, multiple):
    """``offsets`` flattened to int64 and padded with offset 0 to a multiple of ``multiple`` (the
    kernels' whole tiles read the padding's offset, their results there are dropped)."""
    flat = np.asarray(offsets, np.int64).reshape(-1)
    return np.concatenate([flat, np.zeros(-(-flat.size // multiple) * multiple - flat.size, np.int64)])


@functools.lru_cache(maxsize=64)
def _geometry(c, padded_hw, kernel, stride, dilation, out_hw, positions_per_tile, pool2=False):
    """``(base, koff)`` of direct.ll for one geometry, int64, read-only (cached): the window
    corner of each output position (padded to whole tiles with 0) and the offset of each tap.
    ``pool2``: the positions of each 2 x 2 pooling window in turn (direct_conv_pool's order:
    (2i, 2j), (2i, 2j + 1), (2i + 1, 2j), (2i + 1, 2j + 1), windows row by row; an odd last
    row or column, which no window covers, left out)."""
    hp, wp = padded_hw
    oh, ow = out_hw
    if pool2:
        i, j, r = np.meshgrid(np.arange(oh // 2), np.arange(ow // 2), np.arange(4), indexing="ij")
        rows, cols = 2 * i + r // 2, 2 * j + r % 2
        base = ((rows * stride[0]) * wp + cols * stride[1]).reshape(-1).astype(np.int64)
    else:
        base = _zero_padded((np.arange(oh)[:, None] * stride[0]) * wp + np.arange(ow)[None, :] * stride[1],
                            positions_per_tile)
    koff = (np.arange(c)[:, None, None] * (hp * wp) + (np.arange(kernel[0])[None, :, None] * dilation[0]) * wp
            + np.arange(kernel[1])[None, None, :] * dilation[1]).reshape(-1).astype(np.int64)
    for a in (base, koff):
        a.flags.writeable = False
    return base, koff


def _packed_weights(w, blocks_per_tile, width=8):
    """w [O, K] in direct.ll's blocks of ``width`` (8 or 16) output channels,
    ``wt[b, k, lane] = w[b * width + lane, k]``, zeros past O, whole blocks up to a multiple of the
    tile's."""
    c_out, k = w.shape
    per_tile = width * blocks_per_tile
    rows = -(-c_out // per_tile) * per_tile
    if rows == c_out:          # whole tiles: one transposing copy (the zeros and the copy into them cost 2x)
        return np.ascontiguousarray(w.reshape(rows // width, width, k).transpose(0, 2, 1), dtype=np.float32)
    wt = np.zeros((rows, k), np.float32)
    wt[:c_out] = w
    return np.ascontiguousarray(wt.reshape(rows // width, width, k).transpose(0, 2, 1))


def _padded(k, x, padding):
    """Contiguous float32 ``x`` [N, C, H, W] with zeros around it (conv.ll's pad_planes_f32), or
    ``x`` itself without padding."""
    xp = np.ascontiguousarray(x)
    pt, pb, pl, pr = padding
    if not (pt or pb or pl or pr):
        return xp
    n, c, h, wd = xp.shape
    padded = np.empty((n, c, h + pt + pb, wd + pl + pr), np.float32)
    return k.pad_planes(xp, padded, np.array([n * c, h, wd, pt, pb, pl, pr], np.int64))


@functools.lru_cache(maxsize=64)
def _pooled_offsets(pooled_hw, out_padding):
    """direct_conv_pool's qoff (cached, read-only): where pooled position q = i * PW + j goes in
    its output plane (padded by ``out_padding`` for the convolution that reads it)."""
    pt, _, pl, pr = out_padding
    i, j = np.meshgrid(np.arange(pooled_hw[0]), np.arange(pooled_hw[1]), indexing="ij")
    q = ((i + pt) * (pooled_hw[1] + pl + pr) + j + pl).reshape(-1).astype(np.int64)
    q.flags.writeable = False
    return q


def _max_pool2(y):
    """2 x 2 max pooling with stride 2 of [N, O, H, W] (numpy's maximum, in pool.ll's order)."""
    h, w = y.shape[2] // 2 * 2, y.shape[3] // 2 * 2
    a, b, c, d = y[:, :, 0:h:2, 0:w:2], y[:, :, 0:h:2, 1:w:2], y[:, :, 1:h:2, 0:w:2], y[:, :, 1:h:2, 1:w:2]
    return np.maximum(np.maximum(np.maximum(a, b), c), d)


def _epilogue_args(bias, relu, lanes):
    """direct.ll's FLAGS and bias array (``lanes`` floats, zeros past O; zeros when unused)."""
    flags = (1 if bias is not None else 0) | (2 if relu else 0)
    if bias is None:
        return flags, _zero_lanes(lanes)
    b = np.ascontiguousarray(bias, np.float32).reshape(-1)
    if b.size == lanes:        # O a multiple of the tile's channels: the bias itself
        return flags, b
    padded = np.zeros(lanes, np.float32)
    padded[:b.size] = b
    return flags, padded


@functools.lru_cache(maxsize=16)
def _zero_lanes(lanes):
    z = np.zeros(lanes, np.float32)
    z.flags.writeable = False
    return z


class DirectCall:
    """One direct convolution of :func:`direct_conv` prepared for its shapes and attributes: the
    geometry tables, the kernel and the addresses of everything that depends only on the shapes
    are bound once, so a call pads the input (where it has padding), packs the weights, allocates
    the result and calls the kernel, on the calling thread in one call or, from ``_SPLIT_MACS``
    multiply-adds, in chunks of images on the native pool (``burn_flex.native_pool``; the same
    bits). (~15-20 us of a small convolution's Python went into deriving those per call: the
    digits CNN's 1 -> 16 conv is a 30 us kernel.) Made by :func:`prepared_direct_conv` (cached
    per geometry); a replayed plan step holds its own (``burn_flex.conv_epilogue``).

    Example::

        >>> import numpy as np
        >>> from burn_flex import jit
        >>> from burn_flex.kernels.conv_direct import prepared_direct_conv
        >>> k = jit.kernels()
        >>> call = None if k is None else prepared_direct_conv(k, (1, 1, 3, 3), (2, 1, 2, 2), (1, 1), (0, 0, 0, 0), (1, 1),
        ...                                                     (2, 2))
        >>> call is None or call(np.ones((1, 1, 3, 3), np.float32), np.ones((2, 1, 2, 2), np.float32)).tolist() == [[[[4, 4], [4, 4]]] * 2]
        True
    """

    __slots__ = ("x_shape", "w_shape", "fn", "pad_fn", "pad_geo", "xp_shape", "y_shape", "zeroed", "c_out", "taps",
                 "blocks", "width", "lanes", "fixed", "tail", "keep", "kernel", "macs")

    def __init__(self, k, x_shape, w_shape, stride, padding, dilation, out_hw, relu=False, pool2=False,
                 out_padding=(0, 0, 0, 0)):
        n, c, h, wd = x_shape
        c_out, kernel = w_shape[0], tuple(w_shape[2:])
        pt, pb, pl, pr = padding
        xp_hw = (h + pt + pb, wd + pl + pr)
        self.x_shape, self.w_shape = tuple(x_shape), tuple(w_shape)
        self.xp_shape = (n, c) + xp_hw
        self.pad_geo = np.array([n * c, h, wd, pt, pb, pl, pr], np.int64) if any(padding) else None
        self.pad_fn = k.pad_planes.fn
        r, b, width = _call_tile(k, c_out, pool2)
        base, koff = _geometry(c, xp_hw, kernel, stride, dilation, out_hw, r, pool2)
        pooled_hw = (out_hw[0] // 2, out_hw[1] // 2)
        ot, ob, ol, orr = out_padding
        y_hw = (pooled_hw[0] + ot + ob, pooled_hw[1] + ol + orr) if pool2 else tuple(out_hw)
        self.y_shape, self.zeroed = (n, c_out) + y_hw, any(out_padding)
        self.c_out, self.taps, self.blocks, self.width = c_out, koff.size, b, width
        self.lanes = -(-c_out // (width * b)) * width * b
        p_len = base.size if pool2 else out_hw[0] * out_hw[1]
        self.kernel = k.direct_conv_pool[b, width] if pool2 else k.direct_conv[r, b, width]
        self.fn = self.kernel.fn
        # FLAGS: bit 1 (relu) as prepared; bit 0 (add the bias) only for a call with a bias (adding
        # zeros would turn -0.0 into +0.0): one geometry array for each case
        # (8 entries for either kernel, so the native pool's chunks copy one length; the plain kernel reads 7)
        d = np.array([n, koff.size, c * xp_hw[0] * xp_hw[1], p_len, c_out, self.lanes // (width * b), 0,
                      y_hw[0] * y_hw[1] if pool2 else 0], np.int64)
        d_bias = d.copy()
        d[6], d_bias[6] = (2 if relu else 0), (3 if relu else 1)
        extra = (_pooled_offsets(pooled_hw, tuple(out_padding)),) if pool2 else ()
        self.keep = (d, d_bias, base, koff, _zero_lanes(self.lanes)) + extra + \
            ((self.pad_geo,) if self.pad_geo is not None else ())
        addr = jit._addrs_of(self.keep)
        self.fixed = (addr[2], addr[3])           # base, koff
        self.tail = (addr[0], addr[1], addr[4], tuple(addr[5:5 + len(extra)]),
                     addr[-1] if self.pad_geo is not None else 0)
        self.macs = n * c_out * koff.size * p_len

    def pack(self, w):
        """``w`` [O, C, kH, kW] in the kernel's blocks of 8 or 16 output channels (what a call packs)."""
        return _packed_weights(w.reshape(self.c_out, self.taps), self.blocks, self.width)

    def __call__(self, x, w, bias=None, out=None, packed=None):
        """``relu(conv(x, w) + bias)`` (bias: O float32 elements, or None; relu as prepared) as
        :func:`direct_conv` computes it; written into ``out`` where given (this shape, C-contiguous
        float32). ``packed``: ``pack(w)`` made before for the same values of ``w``, or None."""
        if tuple(x.shape) != self.x_shape or tuple(w.shape) != self.w_shape:
            raise ValueError(f"direct_conv: prepared for x {self.x_shape} and w {self.w_shape}, called with "
                             f"{tuple(x.shape)} and {tuple(w.shape)}")
        d, d_bias, zero_lanes, extra, pad_geo = self.tail
        xc = np.ascontiguousarray(x, np.float32)
        if self.pad_geo is not None:
            xp = np.empty(self.xp_shape, np.float32)
            self.pad_fn(*jit._addrs_of((xc, xp)), pad_geo)
        else:
            xp = xc
        wt = self.pack(w) if packed is None else packed
        if bias is None:
            geo, lanes = d, None
        elif bias.size != self.c_out:
            raise ValueError(f"direct_conv: bias has {bias.size} elements for {self.c_out} output channels")
        else:
            geo, lanes = d_bias, _epilogue_args(bias, False, self.lanes)[1]
        if out is None:
            y = (np.zeros if self.zeroed else np.empty)(self.y_shape, np.float32)
        else:
            if tuple(out.shape) != self.y_shape:
                raise ValueError(f"direct_conv: out has shape {out.shape}, the convolution gives {self.y_shape}")
            jit._check_float32("direct_conv", (out,), out)
            y = out
        if lanes is None:
            ax, aw, ay = jit._addrs_of((xp, wt, y))
            ab = zero_lanes
        else:
            ax, aw, ay, ab = jit._addrs_of((xp, wt, y, lanes))
        n = self.x_shape[0]
        if n > 1 and self.macs >= max(_SPLIT_MACS, 2 * _CHUNK_MACS):
            # chunks of images on the native pool, the same bits as one call (images are independent):
            # xp and y advance an image per item, d's image count is each chunk's
            keep = self.keep
            arrays = (xp, wt, y, keep[1] if lanes is not None else keep[0], keep[2], keep[3],
                      keep[4] if lanes is None else lanes) + keep[5:5 + len(extra)]
            per_image = (xp[0].nbytes, 0, y[0].nbytes) + (0,) * (len(arrays) - 3)
            if native_pool.run_strided(self.kernel, n, arrays, per_image, -(-_CHUNK_MACS * n // self.macs), geometry=3):
                return y
        self.fn(ax, aw, ay, geo, *self.fixed, ab, *extra)
        return y


def prepared_direct_conv(k, x_shape, w_shape, stride, padding, dilation, out_hw, relu=False, pool2=False,
                         out_padding=(0, 0, 0, 0)):
    """The :class:`DirectCall` for a convolution of these shapes (tuples) and attributes (cached
    per geometry; ``out_hw`` as ``kernels.conv._out_hw`` gives it); None where there is nothing
    to compute or no input channel (:func:`direct_conv` writes those results itself)."""
    p_len = (out_hw[0] // 2) * (out_hw[1] // 2) * 4 if pool2 else out_hw[0] * out_hw[1]
    if p_len <= 0 or 0 in x_shape or 0 in w_shape:
        return None
    return _direct_call(k, x_shape, w_shape, stride, padding, dilation, tuple(out_hw), relu, pool2, out_padding)


@functools.lru_cache(maxsize=64)
def _direct_call(*args):
    return DirectCall(*args)


def direct_conv(k, x, w, stride, padding, dilation, out_hw, out=None, bias=None, relu=False, pool2=False,
                out_padding=(0, 0, 0, 0)):
    """The float32 convolution of ``x`` [N, C, H, W] with ``w`` [O, C, kH, kW] (one group) by
    direct.ll: a fresh [N, O, OH, OW] array, or written into ``out`` (C-contiguous float32 of
    that shape: every element is written). ``bias`` ([O] float32) is added to each sum and
    ``relu`` applied after it in the kernel's registers, with the bits of numpy's add and flex's
    relu run after the convolution. ``pool2``: then a 2 x 2 max pooling with stride 2 (flex's
    ``max_pool2d``, the same bits) in the kernel too: the result is [N, O, OH // 2, OW // 2],
    and the convolution's own [N, O, OH, OW] is never written; with ``out_padding`` (top, bottom,
    left, right) it is stored in the middle of zeros, the padded input of a convolution that
    reads it (which then pads nothing: ``burn_flex.conv_epilogue``).

    Example::

        >>> import numpy as np
        >>> from burn_flex import jit
        >>> from burn_flex.kernels.conv_direct import direct_conv
        >>> k = jit.kernels()
        >>> x, w = np.ones((1, 1, 3, 3), np.float32), np.ones((2, 1, 2, 2), np.float32)
        >>> k is None or direct_conv(k, x, w, (1, 1), (0, 0, 0, 0), (1, 1), (2, 2)).tolist() == [[[[4, 4], [4, 4]]] * 2]
        True
    """
    n, c = x.shape[:2]
    c_out, kernel = w.shape[0], tuple(w.shape[2:])
    pt, pb, pl, pr = out_padding
    if any(out_padding) and (not pool2 or out is not None):
        raise ValueError("direct_conv: out_padding is for a pooled result in a fresh array")
    pooled_hw = (out_hw[0] // 2, out_hw[1] // 2)
    y_hw = (pooled_hw[0] + pt + pb, pooled_hw[1] + pl + pr) if pool2 else tuple(out_hw)
    if out is not None and out.shape != (n, c_out) + y_hw:
        raise ValueError(f"direct_conv: out has shape {out.shape}, the convolution gives {(n, c_out) + y_hw}")
    call = prepared_direct_conv(k, tuple(x.shape), tuple(w.shape), tuple(stride), tuple(padding), tuple(dilation),
                                tuple(out_hw), relu, pool2, tuple(out_padding))
    if call is not None:
        return call(x, w, bias, out)
    if out is None:
        y = (np.zeros if any(out_padding) else np.empty)((n, c_out) + y_hw, np.float32)
    else:
        y = out
    if y.size == 0 or (pool2 and 0 in pooled_hw):
        return y
    # a sum over no taps (no input channels: the kernel needs at least one)
    full = np.zeros((n, c_out) + tuple(out_hw), np.float32)
    if bias is not None:
        np.add(full, np.asarray(bias, np.float32).reshape(1, c_out, 1, 1), out=full)
    full = _relu(full, full) if relu else full
    if pool2:
        y[:, :, pt:pt + pooled_hw[0], pl:pl + pooled_hw[1]] = _max_pool2(full)
    else:
        y[...] = full
    return y


# the input gradient as a direct convolution computes every input position with all O * kH * kW
# taps, the zeros of the widened gradient included: it pays where the input is about as large as
# the output ("same" padding), not where the full correlation pads a small output (LeNet's 5x5
# convs without padding: 12 x 12 inputs from 8 x 8 outputs, 2.25x the multiply-adds)
_GRAD_INPUT_MAX_GROWTH = 1.25
# ... and where the input has channels enough to fill the 8-lane tiles (its channels are the
# gradient's outputs): 3x3 "same" convs from 16 channels on 64 images of 8 x 8, one thread, direct
# against columns + col2im: to 1 channel 196 vs 80 us, 2: 192 vs 117, 4: 198 vs 181, 8: 187 vs 323
_GRAD_INPUT_MIN_CHANNELS = 8


def direct_grad_input_ok(k, dt, groups, stride, padding, dilation, kernel, input_hw, out_hw, channels) -> bool:
    """Whether ``conv2d_grad_input`` runs as a direct convolution (:func:`direct_grad_input`):
    float32, one group, stride 1, at least ``_GRAD_INPUT_MIN_CHANNELS`` input ``channels``, each
    side's padding at most the kernel's reach, and an input at most ``_GRAD_INPUT_MAX_GROWTH``
    times the output's positions."""
    if not ENABLED or k is None or dt != np.float32 or groups != 1 or tuple(stride) != (1, 1):
        return False
    if channels < _GRAD_INPUT_MIN_CHANNELS:
        return False
    reach = (dilation[0] * (kernel[0] - 1),) * 2 + (dilation[1] * (kernel[1] - 1),) * 2
    if any(p > r for p, r in zip(padding, reach)):
        return False
    return input_hw[0] * input_hw[1] <= _GRAD_INPUT_MAX_GROWTH * out_hw[0] * out_hw[1]


def direct_grad_input(k, g, w, padding, dilation, input_hw):
    """The gradient of a stride-1 convolution with respect to its input: the full correlation of
    ``g`` [N, O, OH, OW] with ``w`` [O, C, kH, kW] flipped and transposed to [C, O, kH, kW], padded
    by each side's reach minus the forward's padding, as :func:`direct_conv` (a fresh
    [N, C, H, W] float32 array).

    Example::

        >>> import numpy as np
        >>> from burn_flex import jit
        >>> from burn_flex.kernels.conv_direct import direct_grad_input
        >>> k = jit.kernels()
        >>> g, w = np.ones((1, 1, 2, 2), np.float32), np.ones((1, 1, 2, 2), np.float32)
        >>> gx = None if k is None else direct_grad_input(k, g, w, (0, 0, 0, 0), (1, 1), (3, 3))
        >>> gx is None or gx.tolist() == [[[[1, 2, 1], [2, 4, 2], [1, 2, 1]]]]
        True
    """
    kh, kw = w.shape[2:]
    reach = (dilation[0] * (kh - 1),) * 2 + (dilation[1] * (kw - 1),) * 2
    wf = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    pad = tuple(r - p for r, p in zip(reach, padding))
    return direct_conv(k, np.ascontiguousarray(g), wf, (1, 1), pad, tuple(dilation), tuple(input_hw))


# the weight gradient's reduction runs over every (image, position) pair, one int64 offset each:
# past this many, the im2col path (its columns in blocks of images) keeps the memory bounded
_GRAD_WEIGHT_MAX_PAIRS = 1 << 20
# ... and it pays from 16 output channels (4 broadcasts and 2 loads per 8 FMAs; with 8 channels or
# fewer, 8 broadcasts per 8 FMAs) and 32 taps (with fewer, repacking g costs more than the GEMM's
# columns). One thread, direct vs im2col + GEMM: 16->32 3x3 on 4 x 4 images 180 vs 246 us, LeNet's
# 6->16 5x5 300 vs 563 us, 32->64 3x3 on 16 x 16 4.3 vs 6.3 ms; but 1->16 3x3 (9 taps) 109 vs 97 us
# and LeNet's 1->6 5x5 598 vs 488 us
_GRAD_WEIGHT_MIN_OUTPUTS = 16
_GRAD_WEIGHT_MIN_TAPS = 32


def direct_grad_weight_ok(k, dt, groups, n_pairs, c_out, taps) -> bool:
    """Whether ``conv2d_grad_weight`` runs on the direct kernel (:func:`direct_grad_weight`):
    float32, one group, at most ``_GRAD_WEIGHT_MAX_PAIRS`` (image, position) pairs, at least
    ``_GRAD_WEIGHT_MIN_OUTPUTS`` output channels and ``_GRAD_WEIGHT_MIN_TAPS`` taps."""
    return (ENABLED and k is not None and dt == np.float32 and groups == 1 and 0 < n_pairs <= _GRAD_WEIGHT_MAX_PAIRS
            and c_out >= _GRAD_WEIGHT_MIN_OUTPUTS and taps >= _GRAD_WEIGHT_MIN_TAPS)


def direct_grad_weight(k, x, g, stride, padding, dilation, kernel):
    """The gradient of a convolution with respect to its weight, ``gw[o, c, i, j] = sum over
    images n and output positions p of g[n, o, p] * x(n, p, (c, i, j))``, by the direct kernel
    with its roles swapped: the taps (c, i, j) stand in the place of output positions (their
    offsets as the "corners"), the (image, position) pairs in the place of taps (each pair's
    window corner as its "tap offset"), and ``g`` as [O, N * P] in the place of the weights. The
    sum runs over the pairs in order (images, then positions), in one call, or for a large
    gradient in fixed blocks of images in parallel (:func:`_sum_over_image_blocks`). A fresh
    [O, C, kH, kW] float32 array.

    Example::

        >>> import numpy as np
        >>> from burn_flex import jit
        >>> from burn_flex.kernels.conv_direct import direct_grad_weight
        >>> k = jit.kernels()
        >>> x, g = np.ones((2, 1, 3, 3), np.float32), np.ones((2, 1, 2, 2), np.float32)
        >>> gw = None if k is None else direct_grad_weight(k, x, g, (1, 1), (0, 0, 0, 0), (1, 1), (2, 2))
        >>> gw is None or gw.tolist() == [[[[8.0, 8.0], [8.0, 8.0]]]]
        True
    """
    n, c = x.shape[:2]
    c_out, out_hw = g.shape[1], tuple(g.shape[2:])
    taps = c * kernel[0] * kernel[1]
    p_len = out_hw[0] * out_hw[1]
    if n * p_len == 0 or taps == 0:
        return np.zeros((c_out, c) + tuple(kernel), np.float32)
    xp = _padded(k, x, padding)
    r, b, width = _call_tile(k, c_out, False)
    corners, tap_offsets = _geometry(c, xp.shape[2:], tuple(kernel), tuple(stride), tuple(dilation), out_hw, 1)
    # the taps as "positions" (padded to whole tiles with offset 0), the pairs as "taps"
    as_positions = _zero_padded(tap_offsets, r)
    blocks = -(-c_out // (width * b)) * b
    _, no_bias = _epilogue_args(None, False, blocks * width)     # FLAGS 0: read by the kernel, not used
    g3 = np.ascontiguousarray(g, dtype=np.float32).reshape(n, c_out, p_len)
    if blocks * width != c_out:
        g3 = np.concatenate([g3, np.zeros((n, blocks * width - c_out, p_len), np.float32)], axis=1)

    def images(a, e):
        pairs = (np.arange(a, e, dtype=np.int64)[:, None] * xp[0].size + corners[None, :p_len]).reshape(-1)
        # g as the kernel's weights, wt[blk, (image, position), lane] = g[image, blk * width + lane, position]:
        # one transposing copy (channels past O are zero blocks)
        wt = np.ascontiguousarray(g3[a:e].reshape(e - a, blocks, width, p_len).transpose(1, 0, 3, 2))
        part = np.empty((1, c_out, taps), np.float32)
        d = np.array([1, pairs.size, 0, taps, c_out, blocks // b, 0], np.int64)
        return (xp, wt, part, d, as_positions, pairs, no_bias), lambda: part[0]
    return _sum_over_image_blocks(k.direct_conv[r, b, width], n, c_out * taps * p_len,
                                  images).reshape((c_out, c) + tuple(kernel))


# the rows kernel's tile (direct.ll's grad_weight_rows_o4k3_f32): 4 output channels x 3 taps
_ROWS_TILE = (4, 3)


def grad_weight_rows_ok(k, dt, groups, stride, c_out, taps) -> bool:
    """Whether ``conv2d_grad_weight`` takes :func:`grad_weight_rows` (float32, one group, stride 1)
    where the swapped direct kernel does not pay (fewer than ``_GRAD_WEIGHT_MIN_OUTPUTS`` output
    channels or ``_GRAD_WEIGHT_MIN_TAPS`` taps: a first layer on 1 or 3 channels)."""
    if not ENABLED or k is None or dt != np.float32 or groups != 1 or tuple(stride) != (1, 1):
        return False
    return c_out < _GRAD_WEIGHT_MIN_OUTPUTS or taps < _GRAD_WEIGHT_MIN_TAPS


def grad_weight_rows(k, x, g, padding, dilation, kernel):
    """The weight gradient of a stride-1 convolution by direct.ll's rows kernel: lane-wise sums
    over (image, output row, block of 8 output columns) of g times the shifted input row, per
    (output channel, tap), in tiles of 4 channels x 3 taps, then the 8 lanes added. A fresh
    [O, C, kH, kW] float32 array.

    Example::

        >>> import numpy as np
        >>> from burn_flex import jit
        >>> from burn_flex.kernels.conv_direct import grad_weight_rows
        >>> k = jit.kernels()
        >>> x, g = np.ones((2, 1, 3, 3), np.float32), np.ones((2, 1, 2, 2), np.float32)
        >>> gw = None if k is None else grad_weight_rows(k, x, g, (0, 0, 0, 0), (1, 1), (2, 2))
        >>> gw is None or gw.tolist() == [[[[8.0, 8.0], [8.0, 8.0]]]]
        True
    """
    n, c = x.shape[:2]
    c_out, oh, ow = g.shape[1:]
    taps = c * kernel[0] * kernel[1]
    if n * oh * ow == 0 or taps == 0:
        return np.zeros((c_out, c) + tuple(kernel), np.float32)
    xp = _padded(k, x, padding)
    ot, kt = _ROWS_TILE
    o4, k3 = -(-c_out // ot) * ot, -(-taps // kt) * kt
    _, koff = _geometry(c, xp.shape[2:], tuple(kernel), (1, 1), tuple(dilation), (oh, ow), 1)
    koff = _zero_padded(koff, kt)                                   # taps past K read offset 0
    g = np.ascontiguousarray(g, dtype=np.float32)

    def images(a, e):
        acc = np.zeros((o4, k3, 8), np.float32)
        d = np.array([e - a, c_out, taps, oh, ow, xp[0].size, xp.shape[3], o4, k3], np.int64)
        return (xp[a:e], g[a:e], acc, d, koff), lambda: acc[:c_out, :taps].sum(axis=2, dtype=np.float32)
    return _sum_over_image_blocks(k.grad_weight_rows, n, c_out * taps * oh * ow,
                                  images).reshape((c_out, c) + tuple(kernel))


# a weight gradient this large (milliseconds) sums fixed blocks of images, their kernel calls on the
# native pool (flex's Python pool without one)
_GRAD_WEIGHT_BLOCKS = 16


def _sum_over_image_blocks(kernel, n, macs_per_image, images):
    """The [O, K] sum over all ``n`` images of ``kernel``'s partial sums: ``images(a, e)`` gives the
    arrays of the kernel call summing images a..e-1 and a function reading its [O, K] result
    after the call. One call, or for a large gradient (``_POOL_MACS`` multiply-adds)
    ``_GRAD_WEIGHT_BLOCKS`` fixed blocks of images run in parallel, their sums added in block
    order. The blocks depend on the sizes only, so the result is the same on any number of
    threads."""
    if n * macs_per_image < _POOL_MACS or n < 2:
        arrays, result = images(0, n)
        kernel(*arrays)
        return result()
    n_blocks = min(n, _GRAD_WEIGHT_BLOCKS)
    bounds = [n * i // n_blocks for i in range(n_blocks + 1)]
    calls = [images(bounds[i], bounds[i + 1]) for i in range(n_blocks)]
    if native_pool.pool() is not None:
        native_pool.run_calls(kernel, [arrays for arrays, _ in calls])
    else:
        threads.parallel_for(n_blocks, lambda i0, i1: [kernel(*calls[i][0]) for i in range(i0, i1)], 1)
    total = calls[0][1]()
    for _, result in calls[1:]:
        total += result()
    return total
