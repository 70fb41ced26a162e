"""Issue 19, item 1: a corpus of bad input, every way in, against a real ZooKeeper.

One table, CASES: each case is a command line (`python -m core ...`), an optional setup (files to generate, or
corruption planted in the cluster), the fragment its message must contain and its exit status. Every case runs
against a fresh chroot holding a small Kafka tree (brokers 1-3 on racks r1-r3; topics `orders` (2 partitions,
RF 3, min.insync.replicas=2), `a.b`, and `gap` (partitions 0 and 2 only)), and asserts:

- the message: an `error: ...` line naming the problem (Kafka's wording where Kafka has one), no traceback;
  a read command facing a corrupt znode instead succeeds and names the znode in a `warning: ...` line;
- the exit status: 1 for a refusal, 2 for a usage error (argparse), 0 for those reads;
- nothing was written: a byte-for-byte dump of the whole chroot (tests/support/kafka_tree.dump_tree) before and after
  is equal, no output file appeared, and the action history holds no applied or pending action.

Input files live in tests/data/bad/ (one small file per case); the 50 MB ones are generated into tmp_path.
For corrupt znodes the input is the cluster: a write command against the corrupt tree must refuse and name the
znode. The page cases (an error shown in the browser) are not in this file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from core import zkformat as zf
from core.cli import main
from sandbox.processes.zkserver import free_port
from core.audit.store import Store
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic

DATA = Path(__file__).resolve().parents[1] / "data" / "bad"
BIG_BYTES = 50 * 1024 * 1024


# --- setups: corrupt znodes and generated files -----------------------------------------------------------------


def corrupt(path: str, data: bytes) -> Callable[[ZkSession, Path], None]:
    def setup(zk: ZkSession, tmp: Path) -> None:
        if zk.exists(path):
            zk.set(path, data)
        else:
            zk.create(path, data, makepath=True)
    setup.__name__ = f"corrupt {path}"
    return setup


def big_reassignment(zk: ZkSession, tmp: Path) -> None:
    """A real 50 MB reassignment (not sparse: it is read and parsed, under Keel's 64 MiB bound) of ~300,000
    partitions of topics that do not exist (long names keep the entry count, and the test's time, down)."""
    entry = '{"topic":"%s-%%07d","partition":0,"replicas":[1,2,3]}' % ("missing" * 16)
    with open(tmp / "big.json", "w") as f:
        f.write('{"version":1,"partitions":[')
        i, size = 0, 0
        while size < BIG_BYTES:
            piece = ("," if i else "") + entry % i
            f.write(piece)
            size += len(piece)
            i += 1
        f.write("]}")


def big_election(zk: ZkSession, tmp: Path) -> None:
    entry = '{"topic":"nope","partition":%d}'
    with open(tmp / "big.json", "w") as f:
        f.write('{"partitions":[')
        i, size = 0, 0
        while size < BIG_BYTES:
            piece = ("," if i else "") + entry % i
            f.write(piece)
            size += len(piece)
            i += 1
        f.write("]}")


def big_log_dirs(zk: ZkSession, tmp: Path) -> None:
    """kafka-log-dirs.sh --describe of 50 MB, whose last replica is malformed."""
    entry = '{"partition":"orders-%d","size":123,"offsetLag":0,"isFuture":false}'
    with open(tmp / "big.json", "w") as f:
        f.write('{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,"partitions":[')
        i, size = 0, 0
        while size < BIG_BYTES:
            f.write(entry % i + ",")
            size += len(entry)
            i += 1
        f.write('{"partition":"orders-x","size":1}]}]}]}')


# Issue 23, item 10: numbers of thousands of digits (Python's int() refuses more than 4,300 with a traceback).
DIGITS = "9" * 5000


def huge_number_files(zk: ZkSession, tmp: Path) -> None:
    """Documents each holding one 5,000-digit number where Kafka's own would hold a small one."""
    files = {
        "reassign.json": '{"version":1,"partitions":[{"topic":"orders","partition":%s,"replicas":[1,2,3]}]}',
        "replicas.json": '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2,%s]}]}',
        "election.json": '{"partitions":[{"topic":"orders","partition":%s}]}',
        "topics.json": '{"version":%s,"topics":[{"topic":"orders"}]}',
        "log-dirs.json": '{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,"partitions":'
                         '[{"partition":"orders-0","size":%s,"offsetLag":0,"isFuture":false}]}]}]}',
        "snap.json": '{"format":"keel.snapshot/1","cluster":"c","captured_at":"x","source":"s",'
                     '"controller":{"broker_id":%s,"epoch":1},"brokers":[],"topics":[]}',
        "keel.toml": '[clusters.prod]\nzk = "127.0.0.1:1"\nconnect_timeout = %s\n',
    }
    for name, text in files.items():
        (tmp / name).write_text(text % DIGITS)


def good_snapshot(zk: ZkSession, tmp: Path) -> None:
    part = {"partition": 0, "replicas": [1, 2], "leader": 1, "isr": [1, 2], "leader_epoch": 0,
            "adding_replicas": [], "removing_replicas": []}
    doc = {"format": "keel.snapshot/1", "cluster": "c", "captured_at": "2026-01-01T00:00:00Z", "source": "s",
           "controller": {"broker_id": 1, "epoch": 1},
           "brokers": [{"id": i, "rack": f"r{i}", "host": "h", "port": 9092, "endpoints": [], "alive": True}
                       for i in (1, 2, 3)],
           "topics": [{"name": "t", "topic_id": None, "config": {}, "partitions": [part]}],
           "in_progress": {"reassignment": [], "preferred_election": [], "deletion": []}}
    (tmp / "snap.json").write_text(json.dumps(doc))


def gap(zk: ZkSession, tmp: Path) -> None:
    """Topic `gap` with partitions 0 and 2 only (as no Kafka writes it)."""
    write_topic(zk, "gap", {0: [1, 2], 2: [2, 3]})


def empty_chroot(zk: ZkSession, tmp: Path) -> None:
    zk.ensure_path("/no-kafka-here")


# --- the table --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # placeholders: {zk} {server} {closed} {data} {tmp} {store}
    expect: str  # a fragment of the message
    code: int = 1
    setup: Callable[[ZkSession, Path], None] | None = None
    stdout: bool = False  # the fragment is on stdout (fleet collect prints one line per cluster there)


def case(id: str, argv: str, expect: str, code: int = 1, setup=None, stdout: bool = False) -> Case:
    return Case(id, tuple(argv.split()), expect, code, setup, stdout)


ZK = "--zk {zk} --store {store}"
CREATE = "create-topic " + ZK
EXECUTE = "execute " + ZK + " --reassignment-json-file {data}/"
ELECT = "elect " + ZK + " --no-wait --path-to-json-file {data}/"
PLAN = "plan --zk {zk} -o {tmp}/plan.json"

CASES: list[Case] = [
    # connect strings
    Case("connect-empty", ("describe", "--zk", ""), "empty ZooKeeper connect string"),
    case("connect-garbage", "describe --zk not~a~host!", "invalid ZooKeeper host"),
    case("connect-port-out-of-range", "describe --zk 127.0.0.1:70000", "invalid port 70000"),
    case("connect-bad-chroot", "describe --zk {server}/a/../b", "invalid chroot"),
    case("connect-closed-port", "describe --zk 127.0.0.1:{closed} --connect-timeout 1",
         "could not connect to ZooKeeper at 127.0.0.1:"),
    case("connect-ipv6-loopback-closed", "describe --zk [::1]:{closed} --connect-timeout 1",
         "could not connect to ZooKeeper at [::1]:"),
    case("connect-chroot-without-kafka", "describe --zk {zk}/no-kafka-here", "no Kafka brokers are registered under",
         setup=empty_chroot),
    case("connect-chroot-without-kafka-write", CREATE.replace("{zk}", "{zk}/no-kafka-here")
         + " --topic t --partitions 1 --replication-factor 1", "no Kafka brokers are registered under",
         setup=empty_chroot),
    # topic names
    Case("topic-empty", ("create-topic", "--zk", "{zk}", "--store", "{store}", "--topic", "", "--partitions", "1",
                         "--replication-factor", "1"), "Topic name is invalid: the empty string is not allowed"),
    case("topic-dot", CREATE + " --topic . --partitions 1 --replication-factor 1",
         "Topic name is invalid: '.' is not allowed"),
    case("topic-dotdot", CREATE + " --topic .. --partitions 1 --replication-factor 1",
         "Topic name is invalid: '..' is not allowed"),
    case("topic-250-chars", CREATE + f" --topic {'x' * 250} --partitions 1 --replication-factor 1",
         "is longer than the max allowed length 249"),
    case("topic-slash", CREATE + " --topic a/b --partitions 1 --replication-factor 1",
         "Topic name is invalid: 'a/b' contains one or more characters other than"),
    case("topic-collision", CREATE + " --topic a_b --partitions 1 --replication-factor 1",
         "Topic 'a_b' collides with existing topics: a.b"),
    case("topic-exists", CREATE + " --topic orders --partitions 1 --replication-factor 1",
         "Topic 'orders' already exists."),
    case("topic-unknown-add-partitions", "add-partitions " + ZK + " --topic nope --partitions 3",
         "Topic 'nope' does not exist"),
    case("topic-unknown-delete", "delete-topic " + ZK + " --topic nope", "Topic 'nope' does not exist"),
    case("topic-unknown-alter-config", "alter-config " + ZK + " --topic nope --add-config retention.ms=1",
         "Topic 'nope' does not exist"),
    # partitions and replication factors
    case("partitions-zero", CREATE + " --topic t --partitions 0 --replication-factor 1",
         "The partitions must be greater than 0"),
    case("partitions-negative", CREATE + " --topic t --partitions -3 --replication-factor 1",
         "The partitions must be greater than 0"),
    case("partitions-not-a-number", CREATE + " --topic t --partitions ten --replication-factor 1",
         "argument --partitions: invalid int value: 'ten'", code=2),
    case("rf-zero", CREATE + " --topic t --partitions 1 --replication-factor 0",
         "The replication factor must be between 1 and 32767 inclusive"),
    case("rf-negative", CREATE + " --topic t --partitions 1 --replication-factor -1",
         "The replication factor must be between 1 and 32767 inclusive"),
    case("rf-10-million", CREATE + " --topic t --partitions 1 --replication-factor 10000000",
         "The replication factor must be between 1 and 32767 inclusive"),
    case("rf-above-live-brokers", CREATE + " --topic t --partitions 3 --replication-factor 4",
         "Replication factor: 4 larger than available brokers: 3."),
    # (10^7 partitions for create-topic, add-partitions and assign: tests/cli/test_cli_errors.py)
    case("assign-rf-10-million", "assign --brokers 0,1,2 --partitions 1 --replication-factor 10000000",
         "Replication factor: 10000000 larger than available brokers: 3."),
    case("add-partitions-decrease", "add-partitions " + ZK + " --topic orders --partitions 1",
         "Topic currently has 2 partitions, which is higher than the requested 1."),
    case("add-partitions-same", "add-partitions " + ZK + " --topic orders --partitions 2",
         "Topic already has 2 partitions."),
    case("plan-rf-above-brokers", PLAN + " --replication-factor 5",
         "larger than available brokers"),
    # configs
    case("config-unknown-key", CREATE + " --topic t --partitions 1 --replication-factor 1 --config foo.bar=1",
         "Unknown topic config name: foo.bar"),
    case("config-wrong-type", CREATE + " --topic t --partitions 1 --replication-factor 1 --config retention.ms=abc",
         "Invalid value abc for configuration retention.ms"),
    case("config-out-of-range", CREATE + " --topic t --partitions 1 --replication-factor 1 "
         "--config min.insync.replicas=0", "Invalid value 0 for configuration min.insync.replicas"),
    case("config-bad-enum", CREATE + " --topic t --partitions 1 --replication-factor 1 --config cleanup.policy=purge",
         "Invalid value purge for configuration cleanup.policy"),
    case("config-min-isr-above-rf", CREATE + " --topic t --partitions 1 --replication-factor 2 "
         "--config min.insync.replicas=3", "need an explicit confirmation"),
    case("config-no-equals", CREATE + " --topic t --partitions 1 --replication-factor 1 --config retention.ms",
         "expected key=value"),
    case("alter-config-wrong-type", "alter-config " + ZK + " --topic orders --add-config segment.bytes=big",
         "Invalid value big for configuration segment.bytes"),
    case("alter-config-min-isr-above-rf", "alter-config " + ZK + " --topic orders --add-config min.insync.replicas=4",
         "need an explicit confirmation"),
    # explicit replica assignments
    case("assignment-duplicate-broker", CREATE + " --topic t --replica-assignment 1:1,2:3",
         "Partition replica lists may not contain duplicate entries: 1"),
    case("assignment-unknown-broker", CREATE + " --topic t --replica-assignment 1:9,2:3",
         "9"),
    case("assignment-uneven-rf", CREATE + " --topic t --replica-assignment 1:2,3", "replication factor"),
    case("assignment-garbage", CREATE + " --topic t --replica-assignment a:b", "replica assignment"),
    case("assignment-with-partitions", CREATE + " --topic t --replica-assignment 1:2 --partitions 1",
         "Both numPartitions or replicationFactor and replicasAssignments were set"),
    case("add-partitions-assignment-unknown-broker", "add-partitions " + ZK + " --topic orders --partitions 3 "
         "--replica-assignment 1:2:3,2:3:1,1:2:7", "7"),
    # reassignment JSON (execute / verify / plan --import)
    case("reassign-not-json", EXECUTE + "reassign-not-json.json", "The input string is not a valid JSON"),
    case("reassign-version-2", EXECUTE + "reassign-version-2.json", "Not supported version field value 2"),
    case("reassign-duplicate-partition", EXECUTE + "reassign-duplicate-partition.json",
         "Partition reassignment contains duplicate topic partitions: orders-0"),
    case("reassign-unknown-topic", EXECUTE + "reassign-unknown-topic.json",
         "The proposed assignment contains non-existent partitions: nope-0"),
    case("reassign-no-such-partition", EXECUTE + "reassign-no-such-partition.json",
         "The proposed assignment contains non-existent partitions: orders-7"),
    case("reassign-empty-replicas", EXECUTE + "reassign-empty-replicas.json",
         "Partition replica list cannot be empty"),
    case("reassign-duplicate-replica", EXECUTE + "reassign-duplicate-replica.json",
         "orders-0 contains multiple entries for 2"),
    case("reassign-unknown-broker", EXECUTE + "reassign-unknown-broker.json",
         "The proposed assignment contains non-existent brokerIDs: 9"),
    case("reassign-log-dirs-mismatch", EXECUTE + "reassign-log-dirs-mismatch.json",
         "is different from size of log dirs list"),
    case("reassign-empty-list", EXECUTE + "reassign-empty-list.json", "Partition reassignment data file is empty"),
    case("reassign-partition-string", EXECUTE + "reassign-partition-string.json", '"partition" must be an integer'),
    case("reassign-top-level-array", EXECUTE + "reassign-top-level-array.json", "must be a JSON object"),
    case("reassign-empty-file", EXECUTE + "reassign-empty-file.json", "is empty"),
    case("reassign-not-utf8", EXECUTE + "reassign-not-utf8.json", "not UTF-8"),
    case("reassign-50MB", "execute " + ZK + " --reassignment-json-file {tmp}/big.json",
         "The proposed assignment contains non-existent partitions: " + "missing" * 16 + "-0000000-0,",
         setup=big_reassignment),
    case("reassign-verify-not-json", "verify " + ZK + " --reassignment-json-file {data}/reassign-not-json.json",
         "The input string is not a valid JSON"),
    case("reassign-import-unknown-broker", PLAN + " --import {data}/reassign-unknown-broker.json",
         "non-existent brokerIDs: 9"),
    case("reassign-throttle-negative", EXECUTE + "reassign-orders-0.json --throttle -5",
         "--throttle must be a positive number"),
    # election JSON
    case("election-not-json", ELECT + "election-not-json.json", "Preferred replica election data is empty"),
    case("election-duplicates", ELECT + "election-duplicates.json",
         "Preferred replica election data contains duplicate partitions: orders-0"),
    case("election-unknown-partitions", ELECT + "election-unknown-partition.json",
         "The following partitions do not exist in the cluster: nope-0, orders-9"),
    case("election-empty", ELECT + "election-empty.json", "Preferred replica election data is empty"),
    case("election-negative-partition", ELECT + "election-partition-negative.json", '"partition" must be an integer'),
    case("election-50MB", "elect " + ZK + " --no-wait --path-to-json-file {tmp}/big.json",
         "The following partitions do not exist in the cluster: nope-0, nope-1,", setup=big_election),
    case("election-unknown-topic-flag", "elect " + ZK + " --no-wait --topic nope", "nope"),
    # topics-to-move JSON
    case("topics-to-move-not-json", PLAN + " --topics-to-move-json-file {data}/topics-to-move-not-json.json",
         "The input string is not a valid JSON"),
    case("topics-to-move-version-2", PLAN + " --topics-to-move-json-file {data}/topics-to-move-version-2.json",
         "Not supported version field value 2"),
    case("topics-to-move-empty", PLAN + " --topics-to-move-json-file {data}/topics-to-move-empty.json",
         "List of topics to reassign is empty"),
    case("topics-to-move-unknown-topic", PLAN + " --topics-to-move-json-file {data}/topics-to-move-unknown-topic.json",
         "Topic nope not found."),
    case("topics-to-move-duplicates", PLAN + " --topics-to-move-json-file {data}/topics-to-move-duplicates.json",
         "List of topics to reassign contains duplicate entries: orders"),
    # kafka-log-dirs JSON
    case("log-dirs-not-json", PLAN + " --sizes {data}/log-dirs-not-json.json", "log-dirs data"),
    case("log-dirs-bad-partition-name", PLAN + " --sizes {data}/log-dirs-bad-partition-name.json",
         '"partition" must look like "<topic>-<number>"'),
    case("log-dirs-negative-size", PLAN + " --sizes {data}/log-dirs-negative-size.json",
         '"size" must be a non-negative integer'),
    case("log-dirs-no-brokers", PLAN + " --sizes {data}/log-dirs-no-brokers.json", '"brokers"'),
    case("log-dirs-50MB", PLAN + " --sizes {tmp}/big.json", '"partition" must look like "<topic>-<number>"',
         setup=big_log_dirs),
    # Kafka's --generate keeps the listed brokers that exist (getBrokerMetadata), then finds too few of them.
    case("plan-unknown-target-broker", "plan --snapshot {tmp}/snap.json --broker-list 1,9 -o {tmp}/plan.json",
         "Replication factor: 2 larger than available brokers: 1.", setup=good_snapshot),
    case("plan-exclude-brokers-garbage", "plan --snapshot {tmp}/snap.json --exclude-brokers one -o {tmp}/plan.json",
         "--exclude-brokers must be comma-separated broker ids", setup=good_snapshot),
    case("plan-no-output", "plan --snapshot {tmp}/snap.json", "-o FILE", setup=good_snapshot),
    # snapshot files
    case("snapshot-truncated", "plan --snapshot {data}/snapshot-truncated.json -o {tmp}/plan.json", "snapshot"),
    case("snapshot-wrong-format", "plan --snapshot {data}/snapshot-wrong-format.json -o {tmp}/plan.json",
         "keel.snapshot/9"),
    case("snapshot-empty", "plan --snapshot {data}/snapshot-empty.json -o {tmp}/plan.json", "snapshot"),
    case("snapshot-describe-output", "plan --snapshot {data}/snapshot-describe-output.txt -o {tmp}/plan.json",
         "snapshot"),
    case("snapshot-fleet-export-wrong-format", "fleet export --snapshot {data}/snapshot-wrong-format.json "
         "--out {tmp}/fleet", "keel.snapshot/9"),
    # keel.toml (read by fleet collect --config and by the dashboard)
    case("keel-toml-bad-role", "fleet collect --config {data}/keel-bad-role.toml --out {tmp}/fleet", "keel.role"),
    case("keel-toml-missing-zk", "fleet collect --config {data}/keel-missing-zk.toml --out {tmp}/fleet",
         "clusters.prod"),
    case("keel-toml-missing-tls-file", "fleet collect --config {data}/keel-missing-tls.toml --out {tmp}/fleet",
         "no-such-ca.pem", stdout=True),
    case("keel-toml-not-toml", "fleet collect --config {data}/keel-not-toml.toml --out {tmp}/fleet",
         "keel-not-toml.toml"),
    case("keel-toml-unknown-key", "fleet collect --config {data}/keel-unknown-key.toml --out {tmp}/fleet",
         "zookeeper_timeout"),
    case("keel-toml-missing-file", "fleet collect --config {data}/no-such-keel.toml --out {tmp}/fleet",
         "no-such-keel.toml"),
    # corrupt znodes: writes refuse naming the znode, reads warn naming it
    case("znode-state-invalid-json-elect", ELECT + "election-orders-0.json",
         "/brokers/topics/orders/partitions/0/state", setup=corrupt(zf.state_path("orders", 0), b"{not json")),
    case("znode-state-invalid-json-execute", EXECUTE + "reassign-orders-0.json",
         "/brokers/topics/orders/partitions/0/state", setup=corrupt(zf.state_path("orders", 0), b"{not json")),
    case("znode-state-invalid-json-describe", "describe --zk {zk}",
         "warning: /brokers/topics/orders/partitions/0/state", code=0,
         setup=corrupt(zf.state_path("orders", 0), b"{not json")),
    case("znode-state-wrong-types-elect", "elect " + ZK + " --no-wait --topic orders",
         "/brokers/topics/orders/partitions/1/state",
         setup=corrupt(zf.state_path("orders", 1),
                       b'{"version":1,"leader":"2","leader_epoch":0,"controller_epoch":1,"isr":"2,3,1"}')),
    case("znode-topic-wrong-types-add-partitions", "add-partitions " + ZK + " --topic orders --partitions 3",
         "/brokers/topics/orders", setup=corrupt(zf.topic_path("orders"),
                                                 b'{"version":1,"partitions":{"0":"1,2,3","1":[2,3,1]}}')),
    case("znode-topic-wrong-types-execute", EXECUTE + "reassign-orders-0.json", "/brokers/topics/orders",
         setup=corrupt(zf.topic_path("orders"), b'{"version":1,"partitions":{"0":"1,2,3","1":[2,3,1]}}')),
    case("znode-topic-wrong-types-snapshot", "snapshot --zk {zk} -o {tmp}/snap.json",
         "warning: /brokers/topics/orders", code=0,
         setup=corrupt(zf.topic_path("orders"), b'{"version":1,"partitions":{"0":"1,2,3","1":[2,3,1]}}')),
    case("znode-gap-elect", "elect " + ZK + " --no-wait --topic gap",
         "corrupt znode /brokers/topics/gap: partitions are not 0..n-1: missing 1", setup=gap),
    case("znode-gap-execute", EXECUTE + "reassign-gap-topic.json",
         "corrupt znode /brokers/topics/gap: partitions are not 0..n-1: missing 1", setup=gap),
    case("znode-topic-wrong-types-delete", "delete-topic " + ZK + " --topic orders", "corrupt znode /brokers/topics/orders",
         setup=corrupt(zf.topic_path("orders"), b'{"version":1,"partitions":{"0":"1,2,3","1":[2,3,1]}}')),
    case("znode-topic-wrong-types-elect", "elect " + ZK + " --no-wait --topic orders",
         "corrupt znode /brokers/topics/orders",
         setup=corrupt(zf.topic_path("orders"), b'{"version":1,"partitions":{"0":"1,2,3","1":[2,3,1]}}')),
    case("znode-state-invalid-json-elect-all", "elect " + ZK + " --no-wait --all",
         "corrupt znode /brokers/topics/orders/partitions/0/state",
         setup=corrupt(zf.state_path("orders", 0), b"{not json")),
    case("znode-config-invalid-json-delete-config", "alter-config " + ZK + " --topic orders "
         "--delete-config min.insync.replicas", "corrupt znode /config/topics/orders",
         setup=corrupt(zf.topic_config_path("orders"), b'{"version":1,"config":{"retention.ms":5}}')),
    case("znode-config-invalid-json-execute-throttle", EXECUTE + "reassign-orders-0.json --throttle 1000",
         "corrupt znode /config/topics/orders", setup=corrupt(zf.topic_config_path("orders"), b"retention.ms=5")),
    case("znode-config-invalid-json-alter", "alter-config " + ZK + " --topic orders --add-config retention.ms=1000",
         "/config/topics/orders", setup=corrupt(zf.topic_config_path("orders"), b"retention.ms=5")),
    case("znode-reassign-node-invalid-json-execute", EXECUTE + "reassign-orders-0.json",
         "There is an existing assignment running.", setup=corrupt(zf.REASSIGN, b"{oops")),
    case("znode-election-node-invalid-json-elect", ELECT + "election-orders-0.json",
         zf.PREFERRED_ELECTION, setup=corrupt(zf.PREFERRED_ELECTION, b"{oops")),
    case("znode-controller-invalid-json-execute", EXECUTE + "reassign-orders-0.json", zf.CONTROLLER,
         setup=corrupt(zf.CONTROLLER, b"{oops")),
    case("znode-broker-invalid-json-create", CREATE + " --topic t --partitions 3 --replication-factor 3",
         "/brokers/ids/2", setup=corrupt(zf.broker_path(2), b"{oops")),
    # issue 23, item 10: numbers bounded before they are converted; the message names the field, quotes a long
    # value cut to its start and length, and never suggests sys.set_int_max_str_digits
    case("digits-config-int", CREATE + f" --topic t --partitions 1 --replication-factor 1 --config segment.bytes={DIGITS}",
         "(5,000 characters) for configuration segment.bytes: Not a number of type INT"),
    case("digits-config-long", "alter-config " + ZK + f" --topic orders --add-config retention.ms={DIGITS}",
         "(5,000 characters) for configuration retention.ms: Not a number of type LONG"),
    case("digits-config-double", "alter-config " + ZK + f" --topic orders --add-config min.cleanable.dirty.ratio="
         f"{'9' * 50000}x", "(50,001 characters) for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
    case("digits-config-leading-zeros-too-large", "alter-config " + ZK + " --topic orders --add-config "
         f"min.insync.replicas={'0' * 5000}{DIGITS[:20]}", "for configuration min.insync.replicas: Not a number of type INT"),
    case("digits-assignment-create", CREATE + f" --topic t --replica-assignment 1:{DIGITS}",
         "partition 0 has a broker id that is not an integer"),
    case("digits-assignment-add-partitions", "add-partitions " + ZK + " --topic orders --partitions 3 "
         f"--replica-assignment 1:2:3,2:3:1,1:2:{DIGITS}", "partition 2 has a broker id that is not an integer"),
    case("digits-partitions-option", CREATE + f" --topic t --partitions {DIGITS} --replication-factor 1",
         "argument --partitions: invalid int value: '9999", code=2),
    case("digits-throttle-option", EXECUTE + f"reassign-orders-0.json --throttle {DIGITS}",
         "argument --throttle: invalid int value", code=2),
    case("digits-rollback-action", "rollback " + ZK + f" --action {'9' * 30}",
         "argument --action: must be a whole number between", code=2),
    case("digits-exclude-brokers", PLAN + f" --exclude-brokers 1,{DIGITS}",
         "--exclude-brokers must be comma-separated broker ids, got '1,999"),
    case("digits-assign-brokers", f"assign --brokers 0,1,{DIGITS} --partitions 1 --replication-factor 1",
         "is not a non-negative integer of at most 2147483647"),
    case("digits-reassign-partition", EXECUTE.replace("{data}/", "{tmp}/") + "reassign.json",
         '"partition" must be an integer from 0 to 2147483647, got Infinity', setup=huge_number_files),
    case("digits-reassign-replica", EXECUTE.replace("{data}/", "{tmp}/") + "replicas.json",
         '"replicas" must hold broker ids from 0 to 2147483647, got Infinity', setup=huge_number_files),
    case("digits-election-partition", ELECT.replace("{data}/", "{tmp}/") + "election.json",
         '"partition" must be an integer from 0 to 2147483647, got Infinity', setup=huge_number_files),
    case("digits-topics-to-move-version", PLAN + " --topics-to-move-json-file {tmp}/topics.json",
         '"version" must be an integer, got Infinity', setup=huge_number_files),
    case("digits-log-dirs-size", PLAN + " --sizes {tmp}/log-dirs.json", '"size" must be a non-negative integer',
         setup=huge_number_files),
    case("digits-snapshot", "plan --snapshot {tmp}/snap.json -o {tmp}/plan.json",
         "'broker_id' must be an integer or null, got Infinity", setup=huge_number_files),
    case("digits-keel-toml", "fleet collect --config {tmp}/keel.toml --out {tmp}/fleet",
         "a number in it has thousands of digits", setup=huge_number_files),
    # ... and the time options: nan, inf, <= 0 and absurd values refused while the command line is parsed
    *(case(f"timeout-connect-{v}", f"describe --zk {{zk}} --connect-timeout {v}",
           f"argument --connect-timeout: must be a number of seconds in (0, 300], got '{v}'", code=2)
      for v in ("nan", "inf", "-1", "0", "1e300")),
    case("timeout-write-inf", "alter-config " + ZK + " --topic orders --add-config retention.ms=5 --write-timeout inf",
         "argument --write-timeout: must be a number of seconds in (0, 3600], got 'inf'", code=2),
    case("timeout-write-nan", "alter-config " + ZK + " --topic orders --add-config retention.ms=5 --write-timeout nan",
         "argument --write-timeout: must be a number of seconds in (0, 3600], got 'nan'", code=2),
    case("timeout-kafka-nan", "consumer-groups --bootstrap-server 127.0.0.1:{closed} --kafka-timeout nan",
         "argument --kafka-timeout: must be a number of seconds in (0, 3600], got 'nan'", code=2),
    case("timeout-elect-negative", "elect " + ZK + " --topic orders --timeout -5",
         "argument --timeout: must be a number of seconds in (0, 86400], got '-5'", code=2),
    case("timeout-restart-check-wait-nan", "restart-check --zk {zk} --broker 1 --wait nan",
         "argument --wait: must be a number of seconds in (0, 86400], got 'nan'", code=2),
]


# --- running a case ---------------------------------------------------------------------------------------------


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1]}, config={"min.insync.replicas": "2"})
        write_topic(s, "a.b", {0: [1, 2]})
        yield zk_connect, s


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as e:  # argparse: usage errors
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def test_corpus_has_at_least_60_cases_with_unique_ids():
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_input(c: Case, cluster, tmp_path, capsys, monkeypatch):
    connect, zk = cluster
    monkeypatch.delenv("KEEL_CONFIG", raising=False)
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "default.sqlite"))
    store = tmp_path / "keel.sqlite"
    if c.setup is not None:
        c.setup(zk, tmp_path)
    fill = dict(zk=connect, server=connect.split("/", 1)[0], closed=free_port(), data=DATA, tmp=tmp_path,
                store=store)
    argv = [a.format(**fill) for a in c.argv]
    files_before = sorted(p.name for p in tmp_path.iterdir())
    before = dump_tree(zk)

    code, out, err = run_cli(capsys, argv)

    assert "Traceback" not in err and "Traceback" not in out, err
    assert code == c.code, f"exit {code}, expected {c.code}\nstdout: {out[:2000]}\nstderr: {err[:2000]}"
    if c.code == 0:
        assert f"{c.expect}:" in err or c.expect in err, err[:2000]
    else:
        lines = [line for line in err.splitlines() if re.match(r"^(\S.*: )?error: ", line)]
        assert lines, f"no `error:` line in stderr:\n{err[:2000]}"
        assert c.expect in (out + err if c.stdout else err), f"expected {c.expect!r} in:\n{err[:2000]}"
        assert len(err) < 4000, f"a message of {len(err):,} characters is not one a person can read:\n{err[:1000]}"
    assert dump_tree(zk) == before, "the ZooKeeper tree changed"
    new_files = sorted(set(p.name for p in tmp_path.iterdir()) - set(files_before) - {"keel.sqlite",
                                                                                       "default.sqlite"})
    new_files = [n for n in new_files if not n.startswith(("keel.sqlite-", "default.sqlite-"))]
    allowed = {"snap.json"} if c.code == 0 and "snapshot" in argv[0] else set()
    assert set(new_files) <= allowed, f"files were written: {new_files}"
    for path in (store, tmp_path / "default.sqlite"):
        if path.exists():
            assert not [a for a in Store(path).actions() if a.status != "failed"], Store(path).actions()
