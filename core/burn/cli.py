"""The ``burn`` command: ``burn info`` lists plugins, backends, devices and extension ops; plugins add
their own subcommands through the hook ``burn_register_cli`` (e.g. ``burn remote serve``)."""
from __future__ import annotations

import argparse
import sys


def info_text() -> str:
    """The text ``burn info`` prints.

    Example:
        >>> import burn.cli
        >>> assert "plugins:" in burn.cli.info_text()
    """
    import burn
    from burn import plugins
    from burn.dispatch import registry
    lines = [f"burn {burn.__version__}", "", "plugins:"]
    recs = plugins.report()
    if not recs:
        lines.append("  (none found in entry point group 'burn.plugins')")
    for r in recs:
        lines.append(f"  {r.name:<16} {r.distribution} {r.version}  [{r.status}]  ({r.module})")
        if r.error:
            lines.append(f"      error: {r.error}")
        for k, v in (r.info or {}).items():
            lines.append(f"      {k}: {v}")
    registry.resolve_all()      # lazily registered kernels: import them to say which run on the host
    for entry in list(registry.namespaces.values()):   # lazy namespaces declare their extension ops
        try:
            entry.resolve()
        except Exception as e:  # shown, not raised: burn info must list everything else
            lines.append(f"  namespace burn.{entry.name} failed to import: {type(e).__name__}: {e}")
    lines += ["", "namespaces (burn.<name>: plugin):"]
    if not registry.namespaces:
        lines.append("  (none)")
    for name, entry in sorted(registry.namespaces.items()):
        lines.append(f"  burn.{name:<14} {entry.plugin}")
    lines += ["", "backends and devices (default_priority):"]
    for name, entry in registry.backends.items():
        be = registry.try_backend(name)
        if be is None:
            err = entry.error
            lines.append(f"  {name:<8} (plugin {entry.plugin}) unavailable: {type(err).__name__}: {err}")
            continue
        try:
            devs = be.describe_devices()
            idx = be.device_indices()
            reason = None if idx else be.unavailable_reason(0)
        except Exception as e:  # show, don't crash
            devs, reason = [], f"{type(e).__name__}: {e}"
        lines.append(f"  {name:<8} (plugin {entry.plugin}, default_priority {entry.default_priority})"
                     + (f" cannot run: {reason}" if reason else ""))
        for d in devs:
            lines.append(f"      {d}")
    lines += ["", "extension ops (backend: plugin[, priority][, host fallback]; first wins):"]
    exts = [op for op in registry.ops.values() if getattr(op, "is_extension", False)]
    if not exts:
        lines.append("  (none)")
    for op in sorted(exts, key=lambda o: o.name):
        parts = []
        for b in op.backend_names():
            es = registry.kernel_entries(op.name, b)
            parts.append(f"{b}: {_describe_entries(es)}")
        where = "; ".join(parts) if parts else "reference definition only"
        lines.append(f"  {op.name:<28} defined by {op.plugin}; kernels: {where}")
    # kernels of core primitives that more than one plugin provides (e.g. a
    # third-party faster flex kernel): say which one runs
    contested = [(op, b, es) for (op, b), es in sorted(registry.kernels.items())
                 if len(es) > 1 and not getattr(registry.ops.get(op), "is_extension", False)]
    if contested:
        lines += ["", "kernel overrides (op on backend: plugin[, priority]; first wins):"]
        for op, b, es in contested:
            lines.append(f"  {op} on {b}: {_describe_entries(es)}")
    return "\n".join(lines)


def _describe_entries(entries) -> str:
    parts = [f"{e.plugin}" + (f" p={e.priority}" if e.priority else "") +
             (" host-fallback" if e.host_fallback else "") for e in entries]
    if len(parts) > 1:
        parts[0] += " (wins)"
    return ", ".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="burn", description="burn for Python")
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("info", help="plugins, backends, devices and extension ops")
    from burn import plugins
    plugins.register_cli(sub)      # plugins' subcommands (hook burn_register_cli), e.g. `burn remote`
    args = parser.parse_args(argv)
    if args.cmd == "info":
        print(info_text())
        return 0
    command = getattr(args, "burn_command", None)
    if command is not None:
        return int(command(args) or 0)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
