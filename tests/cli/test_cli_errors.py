"""Issue 12, items 6 and 10: bad input ends in one `error: ...` line and exit 1 (2 for usage), never a traceback,
and writes nothing; corrupt znodes are named; kazoo's connection chatter stays off a successful command's stderr.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import zkformat as zf
from core.cli import main
from core.errors import KeelError, SnapshotFormatError
from core.balance.sizes import MAX_LOG_DIRS_BYTES
from core.model import MAX_SNAPSHOT_BYTES, ClusterSnapshot
from core.plans import MAX_PLAN_BYTES
from core.audit.store import Store
from core.zk.session import TlsOptions, ZkSession, ZkSettings
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic

ROOT = Path(__file__).resolve().parents[2]
DEEP = '{"partitions":' + "[" * 100_000 + "]" * 100_000 + "}"  # RecursionError in json.loads


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1]}, config={"min.insync.replicas": "2"})
    return zk_connect


@pytest.fixture
def zk(cluster):
    with ZkSession.open(cluster) as s:
        yield s


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def snapshot_doc(**partition_overrides) -> dict:
    part = {"partition": 0, "replicas": [1, 2], "leader": 1, "isr": [1, 2], "leader_epoch": 0,
            "adding_replicas": [], "removing_replicas": []}
    return {"format": "keel.snapshot/1", "cluster": "c", "captured_at": "2026-01-01T00:00:00Z", "source": "s",
            "controller": {"broker_id": 1, "epoch": 1},
            "brokers": [{"id": i, "rack": f"r{i}", "host": "h", "port": 9092, "endpoints": [], "alive": True}
                        for i in (1, 2, 3)],
            "topics": [{"name": "t", "topic_id": None, "config": {},
                        "partitions": [part | partition_overrides,
                                       part | {"partition": 1, "replicas": [2, 3], "leader": 2, "isr": [2, 3]}]}],
            "in_progress": {"reassignment": [], "preferred_election": [], "deletion": []}}


@pytest.fixture
def snap_file(tmp_path):
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(snapshot_doc()))
    return p


# --- input files: missing, a directory, too large, too deeply nested -----------------------------------------------


def _file_commands(cluster, store, snap_file, out, path):
    return {
        "execute": ["execute", "--zk", cluster, "--reassignment-json-file", path, "--store", store],
        "verify": ["verify", "--zk", cluster, "--reassignment-json-file", path, "--store", store],
        "elect": ["elect", "--zk", cluster, "--path-to-json-file", path, "--store", store],
        "plan --sizes": ["plan", "--snapshot", snap_file, "--sizes", path, "-o", out],
        "plan --snapshot": ["plan", "--snapshot", path, "-o", out],
        "plan --topics-to-move": ["plan", "--snapshot", snap_file, "--topics-to-move-json-file", path, "-o", out],
    }


COMMANDS = ["execute", "verify", "elect", "plan --sizes", "plan --snapshot", "plan --topics-to-move"]


@pytest.mark.parametrize("which", COMMANDS)
def test_missing_file_or_directory_is_an_error(which, cluster, zk, snap_file, tmp_path, capsys):
    before = dump_tree(zk)
    store, out = tmp_path / "keel.sqlite", tmp_path / "plan.json"
    missing = tmp_path / "nope.json"
    code, _, err = run(capsys, *_file_commands(cluster, store, snap_file, out, missing)[which])
    assert code == 1 and err.startswith("error:") and str(missing) in err and "does not exist" in err
    code, _, err = run(capsys, *_file_commands(cluster, store, snap_file, out, tmp_path)[which])
    assert code == 1 and err.startswith("error:") and str(tmp_path) in err and "is a directory" in err
    assert dump_tree(zk) == before and not out.exists()


@pytest.mark.parametrize("which", COMMANDS)
def test_deeply_nested_json_is_an_error(which, cluster, zk, snap_file, tmp_path, capsys):
    before = dump_tree(zk)
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    out = tmp_path / "plan.json"
    code, _, err = run(capsys, *_file_commands(cluster, tmp_path / "keel.sqlite", snap_file, out, deep)[which])
    assert code == 1 and err.startswith("error:") and "nested too deeply" in err
    assert dump_tree(zk) == before and not out.exists()


@pytest.mark.parametrize("which,limit", [("execute", MAX_PLAN_BYTES), ("elect", MAX_PLAN_BYTES),
                                         ("plan --topics-to-move", MAX_PLAN_BYTES),
                                         ("plan --sizes", MAX_LOG_DIRS_BYTES),
                                         ("plan --snapshot", MAX_SNAPSHOT_BYTES)])
def test_oversized_input_files_are_refused_before_reading(which, limit, cluster, snap_file, tmp_path, capsys):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(limit + 1)  # sparse: refused from its size, never read
    started = time.monotonic()
    code, _, err = run(capsys, *_file_commands(cluster, tmp_path / "keel.sqlite", snap_file, tmp_path / "o.json",
                                               big)[which])
    assert code == 1 and f"{limit + 1:,} bytes" in err and f"{limit // 2**20} MiB" in err
    assert time.monotonic() - started < 2


def test_nested_json_inside_the_engine_parsers_is_a_typed_error():
    from core.balance.sizes import parse_log_dirs
    from core.plans import parse_election, parse_reassignment, parse_topics_to_move

    for parse in (parse_reassignment, parse_election, parse_topics_to_move, parse_log_dirs, ClusterSnapshot.from_json):
        with pytest.raises(KeelError, match="nested too deeply"):
            parse(DEEP)


def test_nested_toml_is_a_config_error(tmp_path):
    from core.policy.config import ConfigError, load_config

    p = tmp_path / "keel.toml"
    p.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(p, env={})


# --- outputs: a missing directory, a directory, a path under a file -----------------------------------------------


@pytest.mark.parametrize("option", ["-o", "--rollback-output", "--report"])
def test_plan_output_into_a_missing_directory_writes_nothing(option, snap_file, tmp_path, capsys):
    outputs = {"-o": tmp_path / "plan.json", "--rollback-output": tmp_path / "rollback.json",
               "--report": tmp_path / "report.json"}
    bad = tmp_path / "no-such-dir" / "x.json"
    outputs[option] = bad
    args = [a for opt, path in outputs.items() for a in (opt, path)]
    code, _, err = run(capsys, "plan", "--snapshot", snap_file, "--exclude-brokers", "3", *args)
    assert code == 1 and err.startswith("error:") and str(bad.parent) in err and "does not exist" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.json"]  # checked before any output is written


def test_snapshot_output_errors(cluster, tmp_path, capsys):
    bad = tmp_path / "missing" / "snap.json"
    code, _, err = run(capsys, "snapshot", "--zk", cluster, "-o", bad)
    assert code == 1 and str(bad.parent) in err and "does not exist" in err
    code, _, err = run(capsys, "snapshot", "--zk", cluster, "-o", tmp_path)
    assert code == 1 and str(tmp_path) in err and "is a directory" in err
    (tmp_path / "afile").write_text("x")
    code, _, err = run(capsys, "snapshot", "--zk", cluster, "-o", tmp_path / "afile" / "snap.json")
    assert code == 1 and "is not a directory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.parametrize("argv", [
    ["fleet", "export", "--snapshot", "{snap}", "--out", "{under_file}"],
    ["fleet", "generate", "--clusters", "1", "--partitions-total", "50", "--out", "{under_file}", "--quiet"],
    ["fleet", "export", "--snapshot", "{tmp}", "--out", "{tmp}/store"],
    ["fleet", "export", "--snapshot", "{snap}", "--sizes", "{tmp}/nope.json", "--out", "{tmp}/store"],
])
def test_fleet_paths_are_checked(argv, snap_file, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    fill = dict(snap=snap_file, under_file=tmp_path / "afile" / "store", tmp=tmp_path)
    code, _, err = run(capsys, *[a.format(**fill) for a in argv])
    assert code == 1 and err.startswith("error:")
    assert not (tmp_path / "store").exists()


# --- the action history (KEEL_STORE / --store) ----------------------------------------------------------------------


def _bad_stores(tmp_path):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not a SQLite database\n" * 200)
    (tmp_path / "afile").write_text("x")
    return {"corrupt": (corrupt, "not a SQLite database"),
            "directory": (tmp_path, "is a directory"),
            "under a file": (tmp_path / "afile" / "keel.sqlite", "not a directory"),
            "unwritable": ("/proc/keel-test.sqlite", "cannot be opened")}


@pytest.mark.parametrize("kind", ["corrupt", "directory", "under a file", "unwritable"])
def test_bad_store_is_a_typed_error(kind, tmp_path):
    path, needle = _bad_stores(tmp_path)[kind]
    with pytest.raises(KeelError, match=needle) as e:
        Store(path)
    assert str(path) in str(e.value) and "KEEL_STORE" in str(e.value)


@pytest.mark.parametrize("how", ["--store", "KEEL_STORE"])
@pytest.mark.parametrize("kind", ["corrupt", "directory", "under a file", "unwritable"])
def test_cli_with_a_bad_store_writes_nothing(kind, how, cluster, zk, tmp_path, capsys, monkeypatch):
    path, needle = _bad_stores(tmp_path)[kind]
    extra = ["--store", path] if how == "--store" else []
    if how == "KEEL_STORE":
        monkeypatch.setenv("KEEL_STORE", str(path))
    before = dump_tree(zk)
    code, _, err = run(capsys, "create-topic", "--zk", cluster, "--topic", "fresh", "--partitions", "1",
                       "--replication-factor", "1", *extra)
    assert code == 1 and err.startswith("error:") and needle in err and str(path) in err
    assert dump_tree(zk) == before


def test_a_good_store_still_opens_and_is_sqlite(tmp_path):
    s = Store(tmp_path / "deeper" / "keel.sqlite")
    assert s.actions() == []
    with sqlite3.connect(s.path) as db:
        assert {r[0] for r in db.execute("SELECT name FROM sqlite_master")} >= {"actions"}


# --- TLS files are checked up front, naming the file ---------------------------------------------------------------


@pytest.fixture(scope="module")
def pem_pair(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "key.pem"),
                    "-out", str(d / "cert.pem"), "-days", "1", "-subj", "/CN=keel-test"],
                   check=True, capture_output=True, timeout=60)
    (d / "not-pem.txt").write_text("hello\n")
    return d


@pytest.mark.parametrize("opts,file,needle", [
    (["--zk-tls-ca", "{d}/missing.pem"], "{d}/missing.pem", "does not exist"),
    (["--zk-tls-ca", "{d}"], "{d}", "is a directory"),
    (["--zk-tls-ca", "{d}/not-pem.txt"], "{d}/not-pem.txt", "no PEM certificate"),
    (["--zk-tls-ca", "{d}/key.pem"], "{d}/key.pem", "no PEM certificate"),
    (["--zk-tls-ca", "{d}/cert.pem", "--zk-tls-cert", "{d}/cert.pem"], "{d}/cert.pem", "--zk-tls-key"),
    (["--zk-tls-ca", "{d}/cert.pem", "--zk-tls-key", "{d}/key.pem"], "{d}/key.pem", "--zk-tls-cert"),
    (["--zk-tls-cert", "{d}/cert.pem", "--zk-tls-key", "{d}/not-pem.txt"], "{d}/not-pem.txt", "no PEM private key"),
    (["--zk-tls-cert", "{d}/not-pem.txt", "--zk-tls-key", "{d}/key.pem"], "{d}/not-pem.txt", "no PEM certificate"),
])
def test_tls_files_are_checked_before_connecting(opts, file, needle, pem_pair, cluster, capsys):
    started = time.monotonic()
    code, _, err = run(capsys, "describe", "--zk", cluster, *[o.format(d=pem_pair) for o in opts])
    assert code == 1 and err.startswith("error:") and file.format(d=pem_pair) in err and needle in err
    assert "check that ZooKeeper is running" not in err and "Connection dropped" not in err
    assert time.monotonic() - started < 2


def test_tls_check_in_the_session_and_for_keel_toml_clusters(pem_pair, tmp_path):
    from core.policy.config import check_cluster_tls, check_tls_files, load_config
    from core.errors import TlsFileError

    d = pem_pair
    check_tls_files(str(d / "cert.pem"), str(d / "cert.pem"), str(d / "key.pem"))  # good files pass
    both = tmp_path / "both.pem"
    both.write_bytes((d / "cert.pem").read_bytes() + (d / "key.pem").read_bytes())
    check_tls_files(None, str(both), None)  # certificate and key in one PEM: no key file needed
    with pytest.raises(TlsFileError, match="does not exist"):
        ZkSession(ZkSettings(connect="127.0.0.1:1", tls=TlsOptions(ca=str(tmp_path / "ca.pem"))))
    (tmp_path / "keel.toml").write_text(
        '[clusters.good]\nzk = "h:2181"\ntls = { ca = "%s" }\n'
        '[clusters.bad]\nzk = "h:2181"\ntls = { ca = "certs/missing.pem" }\n' % (pem_pair / "cert.pem"))
    cfg = load_config(tmp_path / "keel.toml", env={})  # one cluster's missing CA does not hide the others
    check_cluster_tls(cfg, "good")
    with pytest.raises(KeelError) as e:
        check_cluster_tls(cfg, "bad")
    assert "clusters.bad.tls.ca" in str(e.value) and str(tmp_path / "certs" / "missing.pem") in str(e.value)


# --- snapshot files are validated strictly ---------------------------------------------------------------------------


@pytest.mark.parametrize("override,needle", [
    ({"replicas": "x"}, "'replicas' must be a list of broker ids"),
    ({"replicas": [1, 1, 99]}, "more than once"),
    ({"replicas": [1, True]}, "'replicas' must be a list of broker ids"),
    ({"isr": [1, "2"]}, "'isr' must be a list of broker ids"),
    ({"leader": "1"}, "'leader' must be an integer"),
    ({"partition": 1}, "partition 1 appears more than once"),
    ({"partition": -1}, "'partition' must be"),
])
def test_snapshot_files_are_validated_strictly(override, needle, tmp_path, capsys):
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_doc(**override)))
    code, _, err = run(capsys, "plan", "--snapshot", snap, "-o", tmp_path / "plan.json",
                       "--rollback-output", tmp_path / "rollback.json")
    assert code == 1 and err.startswith("error:") and needle in err and "topic 't'" in err
    assert not (tmp_path / "plan.json").exists() and not (tmp_path / "rollback.json").exists()
    with pytest.raises(SnapshotFormatError, match=needle):
        ClusterSnapshot.from_json(snap.read_text())


def test_snapshot_duplicate_topics_and_brokers():
    doc = snapshot_doc()
    doc["topics"].append(doc["topics"][0])
    with pytest.raises(SnapshotFormatError, match="topic 't' appears more than once"):
        ClusterSnapshot.from_dict(doc)
    doc = snapshot_doc()
    doc["brokers"].append(doc["brokers"][0])
    with pytest.raises(SnapshotFormatError, match="broker 1 appears more than once"):
        ClusterSnapshot.from_dict(doc)


def test_snapshot_round_trip_still_loads(cluster, tmp_path, capsys):
    code, _, _ = run(capsys, "snapshot", "--zk", cluster, "-o", tmp_path / "s.json")
    assert code == 0
    snap = ClusterSnapshot.from_json((tmp_path / "s.json").read_text())
    assert ClusterSnapshot.from_json(snap.to_json()).to_dict() == snap.to_dict()


# --- corrupt znodes are named ----------------------------------------------------------------------------------------


def test_partition_gap_is_reported(cluster, zk, capsys, tmp_path):
    zk.create(zf.topic_path("gap"), b'{"version":1,"partitions":{"0":[1],"2":[2]}}')
    code, out, err = run(capsys, "describe", "--zk", cluster)
    assert code == 0
    assert "warning: /brokers/topics/gap: partitions are not 0..n-1: missing 1" in err
    assert "Topic: gap" in out  # still shown: hiding it would hide its partitions' health too
    before = dump_tree(ZkSession.open(cluster))
    code, _, err = run(capsys, "add-partitions", "--zk", cluster, "--topic", "gap", "--partitions", "3",
                       "--store", str(tmp_path / "s.sqlite"))
    assert code == 1 and "has no partition 1" in err and "would overwrite" in err
    assert dump_tree(ZkSession.open(cluster)) == before


def test_decode_topic_names_a_partition_gap():
    assert zf.decode_topic("t", b'{"version":1,"partitions":{"0":[1],"2":[1],"4":[1]}}').gap == \
        "partitions are not 0..n-1: missing 1,3"
    assert zf.decode_topic("t", b'{"version":1,"partitions":{"1":[1],"0":[2]}}').gap is None


def test_deeply_nested_znodes_are_reported_not_raised(cluster, zk, capsys):
    deep = DEEP.encode()
    zk.create(zf.topic_path("deep"), deep)
    zk.set(zf.state_path("orders", 0), deep)
    code, out, err = run(capsys, "describe", "--zk", cluster)
    assert code == 0 and "Topic: orders" in out
    assert "warning: /brokers/topics/deep: JSON nested too deeply" in err
    assert "warning: /brokers/topics/orders/partitions/0/state: JSON nested too deeply" in err


def test_empty_partition_state_is_reported(cluster, zk, capsys):
    zk.set(zf.state_path("orders", 1), b"")
    code, out, err = run(capsys, "describe", "--zk", cluster)
    assert code == 0 and "warning: /brokers/topics/orders/partitions/1/state: empty payload" in err


def test_plan_failure_names_the_unreadable_broker(cluster, zk, tmp_path, capsys):
    zk.set(zf.broker_path(3), b"{not json")
    code, _, err = run(capsys, "plan", "--zk", cluster, "-o", tmp_path / "plan.json")
    assert code == 1 and "/brokers/ids/3" in err
    assert not (tmp_path / "plan.json").exists()


def test_create_topic_failure_names_the_unreadable_broker(cluster, zk, capsys):
    zk.set(zf.broker_path(3), b"{not json")
    before = dump_tree(zk)
    code, _, err = run(capsys, "create-topic", "--zk", cluster, "--topic", "x", "--partitions", "3",
                       "--replication-factor", "3", "--dry-run")
    assert code == 1 and "Not all brokers have rack information" in err and "/brokers/ids/3" in err
    assert dump_tree(zk) == before


# --- kazoo's chatter ---------------------------------------------------------------------------------------------------


def test_kazoo_connection_chatter_stays_off_a_successful_command(cluster):
    # A real process (pytest's own log capture would hide the lines), with kazoo's host shuffle pinned so that
    # it tries the dead server of the connect string first, every time.
    host, chroot = cluster.split("/", 1)
    code = ("import sys, kazoo.protocol.connection as c; c.random.shuffle = lambda hosts: None\n"
            "from core.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "describe", "--zk", f"127.0.0.1:1,{host}/{chroot}",
                           "--topic", "orders"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "Topic: orders" in proc.stdout
    assert proc.stderr == ""


# --- item 6: huge counts fail fast, with the limit and why ------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["create-topic", "--zk", "{c}", "--topic", "huge", "--partitions", "10000000", "--replication-factor", "3",
     "--dry-run"],
    ["create-topic", "--zk", "{c}", "--topic", "huge", "--partitions", "10000000", "--replication-factor", "3"],
    ["add-partitions", "--zk", "{c}", "--topic", "orders", "--partitions", "10000000", "--dry-run"],
    ["add-partitions", "--zk", "{c}", "--topic", "orders", "--partitions", "10000000"],
    ["assign", "--brokers", "0,1,2", "--partitions", "10000000", "--replication-factor", "3"],
])
def test_huge_partition_counts_fail_fast(argv, cluster, zk, tmp_path, capsys):
    from core.topics import MAX_NEW_PARTITIONS

    before = dump_tree(zk)
    started = time.monotonic()
    code, _, err = run(capsys, *[a.format(c=cluster) for a in argv], *(["--store", tmp_path / "s.sqlite"]
                                                                       if argv[0] != "assign" else []))
    assert time.monotonic() - started < 2
    assert code == 1 and err.startswith("error:") and f"{MAX_NEW_PARTITIONS:,}" in err and "ZooKeeper" in err
    assert dump_tree(zk) == before
