"""`python -m sandbox ...`: every command of the sandbox, in one module (Keel's own are `python -m core ...`).

A simulated cluster in a real ZooKeeper (seed.py, the controller emulator in emulator/):

    up --zk CONNECT [--brokers N --racks R --topics T --seed S --demo --force --keep-existing]
    controller --zk CONNECT [--auto-leader-rebalance --leader-imbalance-check-interval S
               --leader-imbalance-percentage P --reassign-time-scale X --reassign-base-delay S
               --no-topic-deletion]   (runs until SIGINT/SIGTERM, one line per reaction)
    broker stop|start ID --zk CONNECT [--timeout S]

A REAL Kafka cluster on loopback: ZooKeeper mode (processes/kafka.py) or, with --kraft, KRaft combined
broker + controller nodes and no ZooKeeper (processes/kraft.py):

    kafka up     [--brokers N] [--racks R] [--zk CONNECT | --kraft] [--dir DIR] [--version V] [--heap SIZE]
                 [--timeout S]
    kafka down   [--dir DIR] [--timeout S]
    kafka status [--dir DIR]                                   exit 0 when every broker runs, 3 otherwise
    kafka broker stop|kill|start ID [--dir DIR]
    demo-topics  --bootstrap-server B [--zk CONNECT --cluster NAME --store PATH]

`kafka up` fetches the jars first when they are missing (scripts/kafka.sh fetch), starts the brokers in the
background and returns once all are registered and a controller is elected; it prints the bootstrap servers and
the ZooKeeper connect string (KRaft: the controller quorum). The brokers keep running until `kafka down`; down,
status and broker read which kind of cluster the run folder holds. `demo-topics` creates make run's demo topics
(sandbox/demo.py: through Keel with --zk, else through the Admin API) and fills them with data.

Handlers return an exit status and raise KeelError for anything a person must fix (printed as `error: ...`, exit
1, like `python -m core`: core.cli.common.run_command). Digest credentials come from $KEEL_ZK_DIGEST or
--zk-digest-file like every core command's: whoever starts these (scripts/run.sh, tests) passes them through the
environment, never on the command line, where `ps` shows them.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
import warnings
from pathlib import Path

from core import zkformat as zf
from core.cli import exits
from core.cli.common import add_zk_options, run_command, zk_session
from core.errors import KeelError
from sandbox.seed import SandboxSpec, seed_cluster

# The statuses a sandbox command adds to every command's 0, 1, 2 and 130 (core.cli.exits puts them in --help).
SPECIFIC: dict[str, dict[int, str]] = {
    "kafka status": {3: "a broker of the local cluster is not running"},
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sandbox",
                                     description="Keel's sandbox: a simulated ZooKeeper-mode Kafka cluster (seeded, "
                                                 "with a controller emulator) or real Kafka brokers on loopback.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    register_simulated(sub)
    register_kafka(sub)
    register_demo(sub)
    exits.add_epilogs(parser, SPECIFIC)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


# --- the simulated cluster -----------------------------------------------------------------------------------


def register_simulated(sub) -> None:
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
    up.set_defaults(func=cmd_seed)

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
    b.set_defaults(func=cmd_sandbox_broker)


def cmd_seed(args: argparse.Namespace) -> int:
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
    from sandbox.emulator.controller import ControllerEmulator

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


def cmd_sandbox_broker(args: argparse.Namespace) -> int:
    from sandbox.emulator.brokers import start_broker, stop_broker

    action = stop_broker if args.action == "stop" else start_broker
    with zk_session(args) as session:
        change = action(session, args.broker_id, timeout=args.timeout)
    print(change.message())
    return 0


# --- real Kafka brokers -------------------------------------------------------------------------------------


def _default_dir() -> str:
    from sandbox.processes.kafka import run_dir

    return str(run_dir() / "kafka-cluster")


def register_kafka(subparsers) -> None:
    from sandbox.processes.kafka import DEFAULT_HEAP, default_zk, kafka_version

    p = subparsers.add_parser("kafka", help="a REAL ZooKeeper-mode Apache Kafka cluster on 127.0.0.1 (JVM brokers)",
                              description="Start, stop and inspect real Apache Kafka brokers (ZooKeeper mode) "
                                          "fetched from Maven Central, in a chroot of a local ZooKeeper.")
    sub = p.add_subparsers(dest="kafka_command", required=True, metavar="SUBCOMMAND")

    def dir_option(q: argparse.ArgumentParser) -> None:
        q.add_argument("--dir", default=_default_dir(), metavar="DIR",
                       help="run folder: configs, data, logs, pids (default $RUN_DIR/kafka-cluster)")

    up = sub.add_parser("up", help="start the brokers and wait until they are registered and a controller is elected")
    up.add_argument("--brokers", type=int, default=3, metavar="N", help="broker count, ids from 1 (default 3)")
    up.add_argument("--racks", type=int, default=None, metavar="R",
                    help="racks rack-a, rack-b, ... round robin; 0 for none (default min(3, N))")
    up.add_argument("--zk", default=default_zk(), metavar="CONNECT",
                    help="ZooKeeper connect string with the cluster's chroot (default 127.0.0.1:$ZK_PORT/keel-kafka)")
    up.add_argument("--kraft", action="store_true",
                    help="KRaft mode: combined broker + controller nodes, every one a quorum voter; no ZooKeeper "
                         "(Kafka 3.9 and later)")
    dir_option(up)
    up.add_argument("--version", default=kafka_version(), metavar="V",
                    help="Apache Kafka version (default $KAFKA_VERSION or 3.9.1)")
    up.add_argument("--heap", default=DEFAULT_HEAP, metavar="SIZE", help=f"-Xmx of each broker (default {DEFAULT_HEAP})")
    up.add_argument("--timeout", type=float, default=120.0, metavar="S",
                    help="give up when the cluster is not ready after S seconds (default 120)")
    up.set_defaults(func=cmd_kafka_up)

    down = sub.add_parser("down", help="stop every broker (controlled shutdown, then SIGKILL after --timeout)")
    dir_option(down)
    down.add_argument("--timeout", type=float, default=30.0, metavar="S")
    down.set_defaults(func=cmd_kafka_down)

    st = sub.add_parser("status", help="brokers, PIDs, alive, registered in ZooKeeper, controller")
    dir_option(st)
    st.set_defaults(func=cmd_kafka_status)

    b = sub.add_parser("broker", help="stop (controlled), kill (-9) or start one broker")
    b.add_argument("action", choices=("stop", "kill", "start"))
    b.add_argument("broker_id", type=int, metavar="ID")
    dir_option(b)
    b.add_argument("--timeout", type=float, default=90.0, metavar="S")
    b.set_defaults(func=cmd_kafka_broker)


def load_cluster(dir: str):
    """The cluster of a run folder, ZooKeeper mode or KRaft (its cluster.json says which)."""
    import json

    from sandbox.processes.kafka import STATE_NAME, KafkaCluster
    from sandbox.processes.kraft import KraftCluster

    try:
        mode = json.loads((Path(dir) / STATE_NAME).read_text()).get("mode")
    except (OSError, ValueError):
        mode = None
    return (KraftCluster if mode == "kraft" else KafkaCluster).load(dir)


def cmd_kafka_up(args: argparse.Namespace) -> int:
    from sandbox.processes.kafka import KafkaNotFetchedError, fetch, lib_dir

    try:
        lib_dir(args.version)
    except KafkaNotFetchedError:
        print(f"Apache Kafka {args.version} is not fetched yet: fetching it (scripts/kafka.sh fetch)")
        fetch(args.version)
    cluster = _kraft_up(args) if args.kraft else _zk_up(args)
    cluster.start(timeout=args.timeout)
    ctl = cluster.controller()
    kind = "KRaft nodes (broker + controller)" if args.kraft else "brokers"
    print(f"Kafka {cluster.version}: {len(cluster.brokers)} {kind} up (controller {ctl}), run folder {cluster.dir}")
    for b in cluster.brokers:
        print(f"  broker {b.id}  {b.endpoint}  rack {b.rack or '-'}  pid {b.pid}")
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    if args.kraft:
        print(f"controller quorum: {','.join(f'{b.id}@{b.controller_endpoint}' for b in cluster.brokers)}")
    else:
        print(f"zookeeper connect: {cluster.zk_connect}")
    return 0


def _running(dir: str):
    """The cluster of `dir` when any of its brokers runs, else None."""
    try:
        cluster = load_cluster(dir)
    except KeelError:
        return None
    return cluster if any(cluster.is_alive(i) for i in cluster.broker_ids) else None


def _zk_up(args: argparse.Namespace):
    from sandbox.processes.kafka import KafkaCluster
    from sandbox.processes.kraft import KraftCluster

    cluster = _running(args.dir)
    if cluster is not None:
        if isinstance(cluster, KraftCluster) or cluster.zk_connect != args.zk or len(cluster.brokers) != args.brokers:
            raise KeelError(f"a Kafka cluster already runs from {args.dir} ({len(cluster.brokers)} brokers"
                            + ("" if isinstance(cluster, KraftCluster) else f" in {cluster.zk_connect}") + ")",
                            hint="stop it first with `python -m sandbox kafka down`")
        print("Kafka cluster already running; starting any stopped broker")
        return cluster
    try:
        cluster = load_cluster(args.dir)
    except KeelError:
        cluster = None
    if cluster is None or isinstance(cluster, KraftCluster) or cluster.zk_connect != args.zk \
            or len(cluster.brokers) != args.brokers or cluster.version != args.version:
        cluster = KafkaCluster.create(args.dir, args.zk, brokers=args.brokers, racks=args.racks,
                                      version=args.version, heap=args.heap)
    return cluster


def _kraft_up(args: argparse.Namespace):
    from sandbox.processes.kraft import KraftCluster

    cluster = _running(args.dir)
    if cluster is not None:
        if not isinstance(cluster, KraftCluster) or len(cluster.brokers) != args.brokers:
            raise KeelError(f"a Kafka cluster already runs from {args.dir} ({len(cluster.brokers)} brokers)",
                            hint="stop it first with `python -m sandbox kafka down`")
        print("KRaft cluster already running; starting any stopped node")
        return cluster
    try:
        cluster = load_cluster(args.dir)
    except KeelError:
        cluster = None
    if not isinstance(cluster, KraftCluster) or len(cluster.brokers) != args.brokers \
            or cluster.version != args.version:
        cluster = KraftCluster.create(args.dir, nodes=args.brokers, racks=args.racks, version=args.version,
                                      heap=args.heap)
    return cluster


def cmd_kafka_down(args: argparse.Namespace) -> int:
    try:
        cluster = load_cluster(args.dir)
    except KeelError:
        print(f"no Kafka cluster in {args.dir}")
        return 0
    stopped = cluster.stop(timeout=args.timeout)
    if stopped:
        print(f"stopped broker(s) {', '.join(map(str, stopped))} ({cluster.dir})")
    else:
        print(f"no broker was running ({cluster.dir})")
    return 0


def cmd_kafka_status(args: argparse.Namespace) -> int:
    cluster = load_cluster(args.dir)
    rows = cluster.status()
    where = f"zookeeper connect {cluster.zk_connect}" if cluster.zk_connect else "KRaft (no ZooKeeper)"
    print(f"Kafka {cluster.version} in {cluster.dir}; {where}")
    print(f"{'broker':>6}  {'endpoint':<21} {'rack':<8} {'pid':>7}  {'alive':<5}  {'registered':<10}  controller")
    for r in rows:
        reg = "?" if r["registered"] is None else "yes" if r["registered"] else "no"
        print(f"{r['id']:>6}  {r['endpoint']:<21} {r['rack'] or '-':<8} {r['pid'] or '-':>7}  "
              f"{'yes' if r['alive'] else 'no':<5}  {reg:<10}  {'yes' if r['controller'] else ''}")
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    return 0 if all(r["alive"] for r in rows) else 3


def cmd_kafka_broker(args: argparse.Namespace) -> int:
    cluster = load_cluster(args.dir)
    b = cluster.broker(args.broker_id)
    if args.action == "start":
        was = cluster.is_alive(b.id)
        cluster.start_broker(b.id, timeout=args.timeout)
        print(f"broker {b.id} {'already running' if was else 'started'} (pid {b.pid}, {b.endpoint})")
    elif args.action == "stop":
        done = cluster.stop_broker(b.id, timeout=min(args.timeout, 30.0))
        print(f"broker {b.id} {'stopped' if done else 'was not running'}")
    else:
        done = cluster.kill_broker(b.id)
        print(f"broker {b.id} {'killed (SIGKILL)' if done else 'was not running'}")
    return 0


# --- make run's demo topics -----------------------------------------------------------------------------


def register_demo(sub) -> None:
    p = sub.add_parser("demo-topics", help="create make run's demo topics on real brokers and fill them with data",
                       description="Create the demo topics of sandbox/demo.py (through Keel with --zk, else through "
                                   "the Admin API of --bootstrap-server), then write data to the ones created. "
                                   "Topics an earlier run left are kept.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    p.add_argument("--zk", default=None, metavar="CONNECT",
                   help="a ZooKeeper-mode cluster: create through `python -m core create-topic` on this chroot")
    p.add_argument("--cluster", default="real", metavar="NAME", help="the keel.toml cluster (with --zk)")
    p.add_argument("--store", default=None, metavar="PATH", help="the action history (with --zk)")
    p.set_defaults(func=cmd_demo_topics)


def cmd_demo_topics(args: argparse.Namespace) -> int:
    from sandbox.demo import seed_demo_topics

    if args.zk is not None and args.store is None:
        raise KeelError("--zk needs --store: Keel records the topics it creates in the action history")
    seed_demo_topics(args.bootstrap_server, zk=args.zk, cluster=args.cluster, store=args.store)
    return 0


__all__ = ["SPECIFIC", "build_parser", "load_cluster", "main"]
