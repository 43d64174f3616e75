"""burn.capture replays on wgpu: pre-bound kernels (the backend's ``prepare_replay`` hook).

The first :data:`WARMUP` replays of a graph run its fusion plan (compiling every kernel).
The next one is *recorded*: it runs the plan while the device context records every
command it enqueues (kernel launches with their arguments, uploads, fills) and keeps every
block the pool hands out. From the recording each kernel launch gets its own ``cl.Kernel``
object with its arguments set once; a replay then only rebinds the arguments that name the
replay's inputs (the graph's sources: arguments, state, constants, host values) and its
results (fresh blocks from the pool), and enqueues the commands again. The intermediates
stay in the blocks of the recording (pinned: the pool never moves them), so no Python runs
per op beyond one enqueue.

The recording is declined (every replay runs the plan; :meth:`PreBound.describe` says why)
when the graph has random ops (their key is a kernel argument that changes per replay), a
step reads a value back (a download: a host-side computation a replay of device commands
would skip; a kernel's error flag, ``DeviceContext.flag_set``, is read again instead, and a
set flag makes that replay run the plan, which fails as eager does), a result's memory
comes from outside the step, or a kernel reads a buffer the step did not make (a cache the
replay could not keep alive). While recording the pool grows pages instead of moving live
blocks. A replay whose inputs have other layouts (shape, strides, offset, dtype) than
the recorded ones runs the plan.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from . import runtime
from .memory import Pool
from .native import WTensor

__all__ = ["PreBound", "Recorder", "WARMUP"]

WARMUP = 2


class _Decline(Exception):
    pass


class Recorder:
    """What a recorded replay enqueued (``DeviceContext.recorder`` while recording).

    Example:
        >>> r = Recorder()
        >>> r.fill("buf", 16); r.refuse("a download"); r.refuse("later reasons are dropped")
        >>> assert r.commands == [("f", "buf", 16)] and r.why == "a download"
    """

    def __init__(self):
        self.commands = []      # ("k", kernel, gsize, lsize, args) / ("u", host, buf, off) / ("f", buf, n)
        self.blocks = []        # every block allocated while recording (kept alive)
        self.why = None         # why the recording cannot be replayed (None: it can)

    def kernel(self, kernel, gsize, lsize, args):
        self.commands.append(("k", kernel, tuple(gsize), tuple(lsize) if lsize else None, tuple(args)))

    def upload(self, array, buf, offset):
        self.commands.append(("u", np.array(array, order="C", copy=True), buf, offset))

    def fill(self, buf, nbytes):
        self.commands.append(("f", buf, nbytes))

    def check(self, buf):
        self.commands.append(("c", buf))

    def refuse(self, why):
        if self.why is None:
            self.why = why


class _Program:
    """A recording turned into pre-bound commands (see the module docstring)."""

    def __init__(self, rec, prep, dc):
        self.dc = dc
        src = {}
        self.layouts = []
        for i, (_, h) in enumerate(prep.sources):
            x = h.data
            if not isinstance(x, WTensor):
                raise _Decline(f"input {i} is a {type(x).__name__}, not a wgpu array")
            if id(x.block.buf) in src:
                raise _Decline("two of the graph's inputs share one buffer")
            src[id(x.block.buf)] = i
            self.layouts.append((x.shape, x.strides, x.offset, x.dtype))
        made = {id(b.buf): b for b in rec.blocks if b.buf is not None}
        out_of = {}                 # id(buf of a result block of the recording) -> k
        self.out_sizes, self.results = [], []
        for key, h in prep.held.items():
            x = h.data
            if not isinstance(x, WTensor):
                raise _Decline(f"result {key} is not a wgpu array (a failed value?)")
            b = id(x.block.buf)
            if b in made:
                if b not in out_of:
                    out_of[b] = len(self.out_sizes)
                    self.out_sizes.append(x.block.size)
                self.results.append((h, "out", out_of[b], x.shape, x.strides, x.offset, x.dtype))
            elif b in src:
                self.results.append((h, "src", src[b], x.shape, x.strides, x.offset, x.dtype))
            else:
                raise _Decline(f"result {key}'s memory comes from outside the step")

        def role(buf, what):
            b = id(buf)
            if b in src:
                return ("src", src[b])
            if b in out_of:
                return ("out", out_of[b])
            if b in made:
                return None         # an intermediate: bound once, kept
            raise _Decline(f"{what} uses a buffer the step did not make (a cache the replay cannot keep)")

        self.commands, self.rebind, self.launches = [], [], 0
        self._flag = np.zeros(1, np.int32)
        for c in rec.commands:
            if c[0] == "k":
                _, kernel, gsize, lsize, args = c
                k = cl.Kernel(kernel.program, kernel.function_name)
                k.set_args(*args)
                for j, a in enumerate(args):
                    if isinstance(a, cl.MemoryObjectHolder):
                        r = role(a, f"kernel '{kernel.function_name}'")
                        if r is not None:
                            self.rebind.append((k, j) + r)
                self.commands.append(["k", k, gsize, lsize])
                self.launches += 1
            else:
                r = role(c[2] if c[0] == "u" else c[1], {"u": "an upload", "f": "a fill", "c": "a check"}[c[0]])
                self.commands.append(list(c) + [r])
        # the intermediates live as long as this program, where the commands wrote them
        self.keep = [b for b in rec.blocks if b.buf is not None and id(b.buf) not in out_of]
        for b in self.keep:
            dc.pool.pin(b)

    def run(self, prep):
        srcs = []
        for (_, h), lay in zip(prep.sources, self.layouts):
            x = h.data
            if x.__class__ is not WTensor or (x.shape, x.strides, x.offset, x.dtype) != lay:
                return False
            srcs.append(x.block)
        if len({id(b) for b in srcs}) != len(srcs):
            return False
        dc = self.dc
        outs = [dc.pool.alloc(n) for n in self.out_sizes]
        blocks = {"src": srcs, "out": outs}
        for k, j, kind, i in self.rebind:
            k.set_arg(j, blocks[kind][i].buf)
        q = dc.queue
        try:
            for c in self.commands:
                if c[0] == "k":
                    cl.enqueue_nd_range_kernel(q, c[1], c[2], c[3])
                    continue
                r = c[-1]
                if c[0] == "u":
                    buf = c[2] if r is None else blocks[r[0]][r[1]].buf
                    cl.enqueue_copy(q, buf, c[1], dst_offset=c[3], is_blocking=True)
                elif c[0] == "c":
                    # a kernel's check failed (an index out of range): the plan runs this replay
                    # again from the start and fails its dependents exactly as eager does
                    buf = c[1] if r is None else blocks[r[0]][r[1]].buf
                    cl.enqueue_copy(q, self._flag, buf, is_blocking=True)
                    if self._flag[0]:
                        return False
                else:
                    buf = c[1] if r is None else blocks[r[0]][r[1]].buf
                    cl.enqueue_fill_buffer(q, buf, _ZERO, 0, c[2])
        except cl.Error as e:
            raise dc.error("replaying a captured graph's pre-bound kernels", e) from None
        dc.stats["launches"] += self.launches
        for h, kind, i, shape, strides, offset, dtype in self.results:
            h.data = WTensor(dc, blocks[kind][i], shape, dtype, strides, offset)
        return True


_ZERO = np.uint8(0)


class PreBound:
    """The wgpu replay runner of one prepared graph on one device (see the module docstring).

    Example:
        >>> import burn
        >>> try:
        ...     dev = burn.Device.wgpu()
        ...     _ = burn.ones((1,), device=dev).tolist()
        ... except burn.BurnError:
        ...     dev = None                          # no OpenCL device here
        >>> if dev is not None:
        ...     g = burn.capture.trace(lambda x: (x * 2).exp(), burn.ones((4,), device=dev))
        ...     for _ in range(4):
        ...         y = g(burn.ones((4,), device=dev))
        ...     assert g._prepared["wgpu"].describe(dev.index).startswith("pre-bound kernels")
    """

    def __init__(self, prepared, index):
        self.index = index
        self.count = 0
        self.program = None
        self.why = None
        if prepared.rng:
            self.why = (f"{len(prepared.rng)} random op(s): their key is a kernel argument that changes "
                        f"at every replay")

    def describe(self) -> str:
        if self.program is not None:
            p = self.program
            return f"pre-bound kernels ({p.launches} launches, {len(p.rebind)} arguments rebound per replay)"
        if self.why is not None:
            return f"fusion plan (pre-bound replay declined: {self.why})"
        return f"fusion plan (warm-up {self.count} of {WARMUP}, then recording)"

    def run(self, prep, index) -> bool:
        if self.program is not None:
            return self.program.run(prep)
        if self.why is not None:
            return False
        self.count += 1
        if self.count <= WARMUP:
            return False
        dc = runtime.context(index)
        if not isinstance(dc.pool, Pool):
            self.why = "the memory pool is not burn's (BURN_WGPU_POOL)"
            return False
        rec = Recorder()
        dc.recorder = rec
        dc.pool.can_move = False    # recorded commands name buffers: grow pages rather than move them
        try:
            prep.plan.run(prep.nodes, prep.externals, index)     # a real replay: its results stand
        finally:
            dc.recorder = None
            del dc.pool.can_move
        if rec.why is None:
            try:
                self.program = _Program(rec, prep, dc)
            except _Decline as e:
                rec.why = str(e)
        self.why = rec.why
        return True


def prepare_replay(prepared, index):
    """The hook ``WgpuBackend.prepare_replay`` answers with."""
    return PreBound(prepared, index)
