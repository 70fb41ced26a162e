"""`python -m core kafka ...`: a REAL ZooKeeper-mode Kafka cluster on loopback (core.sandbox.kafka).

    kafka up     [--brokers N] [--racks R] [--zk CONNECT] [--dir DIR] [--version V] [--heap SIZE] [--timeout S]
    kafka down   [--dir DIR] [--timeout S]
    kafka status [--dir DIR]                                   exit 0 when every broker runs, 3 otherwise
    kafka broker stop|kill|start ID [--dir DIR]

`up` fetches the jars first when they are missing (scripts/kafka.sh fetch), starts the brokers in the background
and returns once all are registered and a controller is elected; it prints the bootstrap servers and the
ZooKeeper connect string. The brokers keep running until `down`.
"""

from __future__ import annotations

import argparse

from core.errors import KeelError


def _default_dir() -> str:
    from core.sandbox.kafka import run_dir

    return str(run_dir() / "kafka-cluster")


def register(subparsers) -> None:
    from core.sandbox.kafka import DEFAULT_HEAP, default_zk, kafka_version

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
    dir_option(up)
    up.add_argument("--version", default=kafka_version(), metavar="V",
                    help="Apache Kafka version (default $KAFKA_VERSION or 3.9.1)")
    up.add_argument("--heap", default=DEFAULT_HEAP, metavar="SIZE", help=f"-Xmx of each broker (default {DEFAULT_HEAP})")
    up.add_argument("--timeout", type=float, default=120.0, metavar="S",
                    help="give up when the cluster is not ready after S seconds (default 120)")
    up.set_defaults(func=cmd_up)

    down = sub.add_parser("down", help="stop every broker (controlled shutdown, then SIGKILL after --timeout)")
    dir_option(down)
    down.add_argument("--timeout", type=float, default=30.0, metavar="S")
    down.set_defaults(func=cmd_down)

    st = sub.add_parser("status", help="brokers, PIDs, alive, registered in ZooKeeper, controller")
    dir_option(st)
    st.set_defaults(func=cmd_status)

    b = sub.add_parser("broker", help="stop (controlled), kill (-9) or start one broker")
    b.add_argument("action", choices=("stop", "kill", "start"))
    b.add_argument("broker_id", type=int, metavar="ID")
    dir_option(b)
    b.add_argument("--timeout", type=float, default=90.0, metavar="S")
    b.set_defaults(func=cmd_broker)


def cmd_up(args: argparse.Namespace) -> int:
    from core.sandbox.kafka import KafkaCluster, KafkaNotFetchedError, fetch, lib_dir

    try:
        lib_dir(args.version)
    except KafkaNotFetchedError:
        print(f"Apache Kafka {args.version} is not fetched yet: fetching it (scripts/kafka.sh fetch)")
        fetch(args.version)
    try:
        cluster = KafkaCluster.load(args.dir)
    except KeelError:
        cluster = None
    if cluster is not None and any(cluster.is_alive(i) for i in cluster.broker_ids):
        if cluster.zk_connect != args.zk or len(cluster.brokers) != args.brokers:
            raise KeelError(f"a Kafka cluster already runs from {args.dir} ({len(cluster.brokers)} brokers in "
                            f"{cluster.zk_connect})", hint="stop it first with `python -m core kafka down`")
        print("Kafka cluster already running; starting any stopped broker")
    elif cluster is None or cluster.zk_connect != args.zk or len(cluster.brokers) != args.brokers \
            or cluster.version != args.version:
        cluster = KafkaCluster.create(args.dir, args.zk, brokers=args.brokers, racks=args.racks,
                                      version=args.version, heap=args.heap)
    cluster.start(timeout=args.timeout)
    ctl = cluster.controller()
    print(f"Kafka {cluster.version}: {len(cluster.brokers)} brokers up (controller {ctl}), run folder {cluster.dir}")
    for b in cluster.brokers:
        print(f"  broker {b.id}  {b.endpoint}  rack {b.rack or '-'}  pid {b.pid}")
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    print(f"zookeeper connect: {cluster.zk_connect}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from core.sandbox.kafka import KafkaCluster

    try:
        cluster = KafkaCluster.load(args.dir)
    except KeelError:
        print(f"no Kafka cluster in {args.dir}")
        return 0
    stopped = cluster.stop(timeout=args.timeout)
    if stopped:
        print(f"stopped broker(s) {', '.join(map(str, stopped))} ({cluster.dir})")
    else:
        print(f"no broker was running ({cluster.dir})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from core.sandbox.kafka import KafkaCluster

    cluster = KafkaCluster.load(args.dir)
    rows = cluster.status()
    print(f"Kafka {cluster.version} in {cluster.dir}; zookeeper connect {cluster.zk_connect}")
    print(f"{'broker':>6}  {'endpoint':<21} {'rack':<8} {'pid':>7}  {'alive':<5}  {'registered':<10}  controller")
    for r in rows:
        reg = "?" if r["registered"] is None else "yes" if r["registered"] else "no"
        print(f"{r['id']:>6}  {r['endpoint']:<21} {r['rack'] or '-':<8} {r['pid'] or '-':>7}  "
              f"{'yes' if r['alive'] else 'no':<5}  {reg:<10}  {'yes' if r['controller'] else ''}")
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    return 0 if all(r["alive"] for r in rows) else 3


def cmd_broker(args: argparse.Namespace) -> int:
    from core.sandbox.kafka import KafkaCluster

    cluster = KafkaCluster.load(args.dir)
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


__all__ = ["register", "cmd_up", "cmd_down", "cmd_status", "cmd_broker"]
