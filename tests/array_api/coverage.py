"""The Array API coverage table of docs/array_api.md, per backend, from the dispatch registry.

Every function of the standard (the names in the ``__all__`` of the spec's stub modules in the
array-api-tests copy, ``linalg`` and ``fft`` included) is called once on flex with small
inputs (the first of a few argument patterns it accepts); the primitives the call records on
the lazy graph are collected, and for each backend the registry says how each one runs:

- **native**: every primitive has a kernel of the backend that is not a declared host fallback;
- **host**: some primitive runs as a declared host fallback (``burn info`` lists them);
- **refused**: some primitive has no kernel on the backend (the call raises there);
- **without kernels**: the call records no primitive (``result_type``, ``finfo``: Python only);
- **no call**: no argument pattern was accepted (a function that needs inputs of its own).

Usage::

    .venv/bin/python tests/array_api/coverage.py            # print the table
    .venv/bin/python tests/array_api/coverage.py --write    # replace it in docs/array_api.md
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(os.environ.get("BURN_ARRAY_API_TESTS", ROOT.parent / "shared" / "third_party" / "array-api-tests"))
STUBS = SUITE / "array-api" / "src" / "array_api_stubs" / "_2024_12"
DOC = ROOT / "docs" / "array_api.md"
BEGIN, END = "<!-- coverage:begin (tests/array_api/coverage.py --write) -->", "<!-- coverage:end -->"
SKIP_MODULES = {"__init__", "_types", "array_object", "constants", "data_types", "info"}


def standard_names():
    """``{area: [name, ...]}`` from the stubs' ``__all__`` (read with ast, not imported)."""
    out = {}
    for path in sorted(STUBS.glob("*.py")):
        if path.stem in SKIP_MODULES:
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                names = [ast.literal_eval(e) for e in node.value.elts]
                prefix = path.stem + "." if path.stem in ("linalg", "fft") else ""
                out[path.stem] = [prefix + n for n in names]
    out["burn's extensions beyond the standard"] = EXTRAS
    return out


# functions burn adds where the standard has none (issue 12 asked for them)
EXTRAS = ["linalg.eig", "linalg.eigvals", "make_complex"]


def _patterns(burn):
    F = burn.tensor(np.array([[1.5, 0.25, 2.0], [0.5, 3.0, 0.75], [1.0, 0.5, 2.5]]))
    F = F.astype(burn.float64)
    v = burn.tensor([0.5, 1.5, 2.5], dtype=burn.float64)
    Int = burn.tensor([[3, 1, 2], [0, 5, 4], [2, 2, 7]])
    B = Int > 2
    C = F.astype(burn.complex128)
    return [(F,), (F, F), (v,), (v, v), (Int,), (Int, Int), (B,), (C,), (B, F, F), (F, F, F), ([F, F],),
            ((3, 3),), (3,), (0.0, 1.0, 5), ((3, 3), 1.0), (F, (9,)), (F, (2, 3, 3)), (F, 0), (F, Int[0]),
            (Int[0], Int[0] % 3), (F, burn.float32), (burn.float64,), (burn.float64, burn.float32),
            (F, F, 0), (v, v, v), (v, 3), (F, 0, 1), (F, (1, 0))]


def _resolve(burn, name):
    obj = burn
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def trace(burn, name):
    """The primitive names one call of ``name`` records (None: no pattern was accepted)."""
    from burn.graph import LazyGraph, graph_for
    fn = _resolve(burn, name)
    if fn is None:
        return None
    g = graph_for(burn.Device.flex())
    seen = []
    real_flush = LazyGraph.flush

    def flush(self):
        seen.extend(n.prim.name for n in self.pending)
        return real_flush(self)
    patterns = _patterns(burn)
    for args in patterns:          # the inputs' own ops are not the call's
        for a in args:
            if isinstance(a, burn.Tensor):
                a.numpy()
    g.flush()
    LazyGraph.flush = flush
    try:
        for args in patterns:
            seen.clear()
            try:
                out = fn(*args)
                for t in (out if isinstance(out, tuple) else (out,)):
                    if isinstance(t, burn.Tensor):
                        t.numpy()
                return sorted(set(seen))
            except Exception:
                g.pending.clear()
                continue
        return None
    finally:
        LazyGraph.flush = real_flush


def how(registry, ops, backend):
    if ops is None:
        return "no call"
    if not ops:
        return "without kernels"
    state = "native"
    for op in ops:
        entries = registry.kernel_entries(op, backend)
        if not entries:
            return "refused"
        e = entries[0]
        try:
            e.resolve()
        except Exception:
            return "refused"
        if e.host_fallback:
            state = "host"
    return state


def table():
    import burn
    from burn.dispatch import registry
    registry.ensure_loaded()
    backends = [b for b in ("flex", "wgpu", "cuda") if b in registry.backend_names()]
    rows = []
    counts = {b: {} for b in backends}
    for area, names in standard_names().items():
        per = {b: {} for b in backends}
        for name in names:
            ops = trace(burn, name)
            for b in backends:
                s = how(registry, ops, b)
                per[b].setdefault(s, []).append(name)
                counts[b][s] = counts[b].get(s, 0) + 1
        cells = []
        for b in backends:
            parts = [f"{len(per[b]['native'])} native"] if per[b].get("native") else []
            if per[b].get("without kernels"):
                parts.append(f"{len(per[b]['without kernels'])} without kernels")
            for s in ("host", "refused", "no call"):
                if per[b].get(s):
                    parts.append(f"{s}: " + ", ".join(f"`{n}`" for n in per[b][s]))
            cells.append("; ".join(parts))
        rows.append(f"| {area.replace('_', ' ')} ({len(names)}) | " + " | ".join(cells) + " |")
    head = ["| area (functions) | " + " | ".join(backends) + " |", "|---" * (len(backends) + 1) + "|"]
    total = ["| **all** | " + " | ".join(", ".join(f"{n} {s}" for s, n in sorted(counts[b].items()))
                                      for b in backends) + " |"]
    return "\n".join(head + rows + total)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help=f"replace the table between the markers in {DOC.name}")
    args = ap.parse_args(argv)
    text = table()
    if not args.write:
        print(text)
        return 0
    doc = DOC.read_text()
    if BEGIN not in doc or END not in doc:
        print(f"{DOC}: no {BEGIN} ... {END} markers", file=sys.stderr)
        return 1
    pre, rest = doc.split(BEGIN, 1)
    post = rest.split(END, 1)[1]
    DOC.write_text(pre + BEGIN + "\n" + text + "\n" + END + post)
    print(f"wrote the coverage table into {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
