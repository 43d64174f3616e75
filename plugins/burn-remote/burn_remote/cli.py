"""``burn remote``: ``serve`` runs a server, ``id`` prints this machine's client endpoint id.

Example:
    >>> import argparse
    >>> from burn_remote.cli import add_commands
    >>> sub = argparse.ArgumentParser(prog="burn").add_subparsers(dest="cmd")
    >>> add_commands(sub)
    >>> args = sub.choices["remote"].parse_args(["serve", "--device", "flex", "--allow-any"])
    >>> assert args.device == "flex" and args.allow_any and args.allow == []
"""
from __future__ import annotations

import sys

__all__ = ["add_commands"]


def add_commands(subparsers) -> None:
    """Add ``remote`` (with ``serve`` and ``id``) to the ``burn`` command's subparsers."""
    p = subparsers.add_parser("remote", help="remote devices over Iroh: serve a device, print this client's id")
    sub = p.add_subparsers(dest="remote_cmd")
    s = sub.add_parser("serve", help="serve a local device to allowed clients; prints a ticket")
    s.add_argument("--device", default="flex", help="the local device that runs clients' work (flex, wgpu:0, cuda:0)")
    s.add_argument("--allow", action="append", default=[], metavar="ENDPOINT_ID",
                   help="a client endpoint id allowed to connect (repeat; `burn remote id` prints a client's)")
    s.add_argument("--allow-any", action="store_true",
                   help="serve any endpoint holding the ticket (a warning: anyone with it may run code here)")
    s.add_argument("--ticket-file", default=None, help="also write the ticket to this file")
    s.add_argument("--key-file", default=None, help="the server's secret key (created if missing): a stable ticket")
    s.add_argument("--relay", action="store_true", help="use iroh's relays and discovery (default: direct only)")
    s.add_argument("--bind", default=None, help="UDP address to bind (default 127.0.0.1:0 without --relay)")
    s.set_defaults(burn_command=_serve)
    i = sub.add_parser("id", help="print this client's endpoint id (for a server's --allow)")
    i.add_argument("--key-file", default=None, help="the client's key file (default BURN_REMOTE_KEY_FILE or "
                   "~/.config/burn/remote/client.key)")
    i.set_defaults(burn_command=_id)
    p.set_defaults(burn_command=lambda args: p.print_help() or 2)


def _serve(args) -> int:
    from .server import serve
    try:
        serve(args.device, args.allow, allow_any=args.allow_any, ticket_file=args.ticket_file,
              key_file=args.key_file, relay=args.relay, bind_addr=args.bind)
    except ValueError as e:
        print(f"burn remote serve: {e}", file=sys.stderr)
        return 2
    return 0


def _id(args) -> int:
    from .transport import client_endpoint_id
    print(client_endpoint_id(args.key_file))
    return 0
