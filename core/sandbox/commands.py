"""`python -m core sandbox ...`: seed a simulated cluster, run its controller, stop and start brokers.

    sandbox up --zk CONNECT [--brokers N --racks R --topics T --seed S --demo --force]
    sandbox controller --zk CONNECT [--auto-leader-rebalance --leader-imbalance-check-interval S
                       --leader-imbalance-percentage P --reassign-time-scale X --reassign-base-delay S
                       --no-topic-deletion]   (runs until SIGINT/SIGTERM, one line per reaction)
    sandbox broker stop|start ID --zk CONNECT [--timeout S]

Handlers return an exit status and raise KeelError for anything a person must fix (core.cli prints it).
Digest credentials come from $KEEL_ZK_DIGEST or --zk-digest-file like every command's: whoever starts these
(scripts/run.sh, tests) passes them through the environment, never on the command line, where `ps` shows them.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
import warnings

from core import zkformat as zf
from core.errors import KeelError
from core.sandbox.seed import SandboxSpec, seed_cluster


def register(subparsers) -> None:
    from core.cli.common import add_zk_options  # core.cli imports this module: import it back lazily

    p = subparsers.add_parser("sandbox", help="a simulated ZooKeeper-mode Kafka cluster in a real ZooKeeper",
                              description="Seed a simulated ZooKeeper-mode Kafka cluster, emulate its controller, "
                                          "and stop or start its brokers.")
    sub = p.add_subparsers(dest="sandbox_command", required=True, metavar="SUBCOMMAND")

    defaults = SandboxSpec()
    up = sub.add_parser("up", help="write a Kafka tree (brokers, topics, states) under the chroot")
    add_zk_options(up)
    up.add_argument("--brokers", type=int, default=defaults.brokers, metavar="N",
                    help=f"broker count, ids from 1 (default {defaults.brokers})")
    up.add_argument("--racks", type=int, default=defaults.racks, metavar="R",
                    help=f"racks rack-a, rack-b, ... assigned round robin; 0 for none (default {defaults.racks})")
    up.add_argument("--topics", type=int, default=defaults.topics, metavar="T",
                    help=f"user topics besides __consumer_offsets (default {defaults.topics})")
    up.add_argument("--seed", type=int, default=defaults.seed, metavar="S",
                    help=f"random seed: the same seed writes the same cluster (default {defaults.seed})")
    up.add_argument("--demo", action="store_true",
                    help="a cluster with something to show: a dead broker, an empty one, leaders off preferred, "
                         "under-replicated and under-min-ISR partitions")
    up.add_argument("--force", action="store_true", help="wipe the chroot first if it already holds a Kafka tree")
    up.add_argument("--keep-existing", action="store_true",
                    help="leave a chroot that already holds a Kafka tree as it is (exit 0); make run uses this")
    up.set_defaults(func=cmd_up)

    ctl = sub.add_parser("controller", help="run the controller emulator until interrupted")
    add_zk_options(ctl)
    ctl.add_argument("--auto-leader-rebalance", action="store_true",
                     help="elect preferred leaders back on brokers above the leader imbalance threshold "
                          "(Kafka's auto.leader.rebalance.enable; off unless given)")
    ctl.add_argument("--leader-imbalance-check-interval", type=float, default=300.0, metavar="S",
                     help="seconds between auto rebalance checks (leader.imbalance.check.interval.seconds, "
                          "default 300)")
    ctl.add_argument("--leader-imbalance-percentage", type=float, default=10.0, metavar="P",
                     help="per-broker leader imbalance that triggers a rebalance "
                          "(leader.imbalance.per.broker.percentage, default 10)")
    ctl.add_argument("--reassign-time-scale", type=float, default=1.0, metavar="X",
                     help="multiply every reassignment copy time by X (0 copies instantly; default 1)")
    ctl.add_argument("--reassign-base-delay", type=float, default=0.2, metavar="S",
                     help="seconds a new replica needs before copying its data (default 0.2); the copy adds "
                          "size over follower.replication.throttled.rate when a throttle is set")
    ctl.add_argument("--no-topic-deletion", action="store_true",
                     help="behave as delete.topic.enable=false: deletion requests are removed, topics stay")
    ctl.set_defaults(func=cmd_controller)

    b = sub.add_parser("broker", help="stop or start one broker (needs a running controller emulator)")
    b.add_argument("action", choices=("stop", "start"))
    b.add_argument("broker_id", type=int, metavar="ID")
    add_zk_options(b)
    b.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="wait at most S seconds for the emulator to act (default 10)")
    b.set_defaults(func=cmd_broker)


def cmd_up(args: argparse.Namespace) -> int:
    from core.cli.common import zk_session
    spec = SandboxSpec(brokers=args.brokers, racks=args.racks, topics=args.topics, seed=args.seed, demo=args.demo)
    spec.validate()  # before connecting: a typo should not wait for ZooKeeper
    with warnings.catch_warnings():
        # kazoo warns when the chroot does not exist yet; creating it is part of `up`
        warnings.filterwarnings("ignore", message="No chroot path exists")
        with zk_session(args) as session:
            if args.keep_existing and not args.force and session.exists(zf.TOPICS):
                print(f"{args.zk} already holds a Kafka tree: keeping it (make clean starts afresh)")
                return 0
            started = time.monotonic()
            result = seed_cluster(session, spec, force=args.force)
    print(f"{result.summary()} in {time.monotonic() - started:.2f} s")
    return 0


def cmd_controller(args: argparse.Namespace) -> int:
    from core.cli.common import zk_session
    from core.sandbox.controller import ControllerEmulator

    def say(line: str) -> None:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}", flush=True)

    options = dict(delete_topic_enable=not args.no_topic_deletion,
                   auto_leader_rebalance=args.auto_leader_rebalance,
                   leader_imbalance_check_interval_seconds=args.leader_imbalance_check_interval,
                   leader_imbalance_per_broker_percentage=args.leader_imbalance_percentage,
                   reassign_base_delay=args.reassign_base_delay, time_scale=args.reassign_time_scale)

    # Unlike a one-shot command, the emulator's log is where a ZooKeeper outage is diagnosed: keep kazoo's
    # connection warnings (core.cli silences them while a command runs).
    logging.getLogger("keel.kazoo").setLevel(logging.WARNING)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    done = threading.Event()
    previous = {s: signal.signal(s, lambda *_: done.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with zk_session(args) as session, ControllerEmulator(session, on_reaction=say, **options) as emulator:
            while not done.wait(0.5):
                if not emulator.running:
                    break
        if emulator.failed:
            raise KeelError(f"controller emulator stopped: {emulator.failed}")
        say("controller emulator stopped")
        return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def cmd_broker(args: argparse.Namespace) -> int:
    from core.cli.common import zk_session
    from core.sandbox.brokers import start_broker, stop_broker

    action = stop_broker if args.action == "stop" else start_broker
    with zk_session(args) as session:
        change = action(session, args.broker_id, timeout=args.timeout)
    print(change.message())
    return 0


__all__ = ["register", "cmd_up", "cmd_controller", "cmd_broker"]
