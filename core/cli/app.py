"""`python -m core ...` (also the `keel` console script): every engine feature without the browser.

Each subcommand parses its arguments, calls the engine, prints, and returns an exit status:
0 success, 1 a KeelError (printed as `error: ...` on stderr), 2 a usage error (argparse), 130 interrupted, and 3
for the few commands that answer "not yet" or "not safe" (core.cli.exits: every command's --help lists its own).
"""

from __future__ import annotations

import argparse

from core.cli import auto_throttle, cluster, drift, exits, groups, leaders, ops, peek, reassign, security, topics
from core.cli.common import run_command
from core.cli import fleet as fleet_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="Keel: a console for ZooKeeper-mode Kafka.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (cluster, topics, leaders, reassign, auto_throttle, fleet_commands):
        module.register(sub)
    ops.register(sub)  # issue 18: capacity, racks, rolling restarts, JBOD, state changes, consumer groups, migration
    drift.register(sub)  # issue 27: ZooKeeper against the brokers during a migration's dual-write
    security.register(sub)  # issue 29: ACLs and client quotas
    peek.register(sub)  # issue 30: a partition's messages (the data permission)
    groups.register(sub)  # issue 30: reset / delete consumer-group offsets, delete a group
    exits.add_epilogs(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    return run_command(parser.parse_args(argv))
