"""JBOD log dirs (core.logdirs): the view per broker and directory, imbalance, balancing plans with `log_dirs`, and
the checks before executing one. Real brokers: tests/kafka/test_ops_real.py."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.errors import PlanError
from core.logdirs import parse_dir_plan, parse_log_dirs_view, plan_balance, view_from_document


def doc(dirs: dict[int, dict[str, dict[str, int]]], errors: dict[str, str] | None = None, future=()) -> dict:
    return {"version": 1, "brokers": [
        {"broker": b, "logDirs": [{"logDir": path, "error": (errors or {}).get(path),
                                   "partitions": [{"partition": tp, "size": size, "offsetLag": 0,
                                                   "isFuture": (path, tp) in future} for tp, size in parts.items()]}
                                  for path, parts in ds.items()]} for b, ds in dirs.items()]}


DOC = doc({1: {"/d1/a": {"t-0": 900, "t-1": 500, "t-2": 100}, "/d1/b": {}},
           2: {"/d2/a": {"t-0": 900}, "/d2/b": {"t-1": 500, "t-2": 100}}})
REPLICAS = {("t", 0): (1, 2), ("t", 1): (2, 1), ("t", 2): (1, 2)}


def test_view_per_broker_and_directory():
    text = "Querying brokers for log directories information\nReceived ...\n" + json.dumps(DOC)
    v = parse_log_dirs_view(text)
    b1, b2 = v.per_broker()
    assert [(d.path, d.partitions, d.bytes) for d in b1.dirs] == [("/d1/a", 3, 1500), ("/d1/b", 0, 0)]
    assert b1.spread == 1500 and b1.imbalance == 2.0 and b2.imbalance == pytest.approx(300 / 750)
    brokers, cols, values, paths = v.heatmap()
    assert brokers == [1, 2] and cols == ["dir 1", "dir 2"] and values == [[1500, 0], [900, 600]]
    assert v.to_document()["brokers"][0]["logDirs"][0]["partitions"][0] == \
        {"partition": "t-0", "size": 900, "offsetLag": 0, "isFuture": False}


def test_plan_evens_out_each_brokers_directories_with_log_dirs():
    v = view_from_document(DOC)
    plan = plan_balance(v, REPLICAS)
    assert [(m.topic, m.partition, m.broker, m.source, m.target) for m in plan.moves] == \
        [("t", 0, 1, "/d1/a", "/d1/b")]  # 900 -> the gap of 1500 becomes 300 (no better single move)
    assert plan.after[(1, "/d1/a")] == 600 and plan.after[(1, "/d1/b")] == 900
    assert plan.document(REPLICAS) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d1/b", "any"]}]}
    # a busy partition and a replica the broker does not hold per the metadata are left alone
    busy = plan_balance(v, REPLICAS, busy={("t", 0)})
    assert all(m.partition != 0 for m in busy.moves) and any("in flight" in s for s in busy.skipped)
    assert plan_balance(v, REPLICAS, max_moves=0).moves == ()
    assert plan_balance(v, REPLICAS, brokers={2}).moves == ()  # broker 2's gap 300 cannot narrow with 100..900


def test_offline_directory_is_never_a_target_and_future_replicas_count_as_in_flight():
    v = view_from_document(doc({1: {"/a": {"t-0": 900, "t-2": 100}, "/b": {}, "/c": {}}},
                               errors={"/c": "KafkaStorageException"}))
    assert all(m.target != "/c" for m in plan_balance(v, {("t", 0): (1,), ("t", 2): (1,)}).moves)
    moving = view_from_document(doc({1: {"/a": {"t-0": 900}, "/b": {"t-0": 10}}}, future={("/b", "t-0")}))
    assert moving.future() == {("t", 0, 1): "/b"} and moving.location() == {("t", 0, 1): "/a"}
    assert plan_balance(moving, {("t", 0): (1,)}).moves == ()


def test_executing_a_plan_is_checked_against_the_assignment_and_the_directories():
    v = view_from_document(DOC)
    reqs, notes = parse_dir_plan(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d1/b", "/d2/a"]}]}), REPLICAS, v)
    assert [(r.broker, r.current, r.target) for r in reqs] == [(1, "/d1/a", "/d1/b")]
    assert notes == ["t-0 on broker 2 is already in /d2/a"]

    def refused(entry, needle):
        with pytest.raises(PlanError) as e:
            parse_dir_plan({"version": 1, "partitions": [entry]}, REPLICAS, v)
        assert needle in str(e.value), str(e.value)
    refused({"topic": "t", "partition": 0, "replicas": [2, 1], "log_dirs": ["any", "/d1/b"]},
            "are not the current ones [1, 2]")
    refused({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d1/b"]},
            "Size of replicas list [1, 2] is different from size of log dirs list ['/d1/b'] for partition t-0")
    refused({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/elsewhere", "any"]},
            "/elsewhere is not a log directory of broker 1 (its log dirs: /d1/a, /d1/b)")
    refused({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["rel", "any"]}, "absolute path")
    refused({"topic": "nope", "partition": 0, "replicas": [1], "log_dirs": ["any"]}, "does not exist")
    with pytest.raises(PlanError, match="cannot be empty"):
        parse_dir_plan('{"version":1,"partitions":[]}', REPLICAS, v)
    offline = view_from_document(doc({1: {"/a": {"t-0": 1}, "/b": {}}}, errors={"/b": "KafkaStorageException"}))
    with pytest.raises(PlanError, match="offline"):
        parse_dir_plan({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/b", "any"]}]},
                       REPLICAS, offline)


@pytest.mark.parametrize("text, needle", [
    ("no json here", "holds no JSON object"),
    ('{"brokers": 3}', '"brokers" list'),
    ('{"brokers":[{"broker":1,"logDirs":[{"logDir":"/a","partitions":[{"partition":"x","size":1}]}]}]}',
     'must look like "<topic>-<number>"'),
])
def test_bad_log_dirs_files(text, needle):
    with pytest.raises(PlanError, match=needle):
        parse_log_dirs_view(text)


def test_log_dirs_commands_from_a_file(tmp_path, capsys):
    f = tmp_path / "logdirs.json"
    f.write_text(json.dumps(DOC))
    assert main(["log-dirs", "--log-dirs-file", str(f)]) == 0
    out = capsys.readouterr().out
    assert "/d1/a" in out and "imbalance between its directories: 200% of the mean" in out
    from core.model import ClusterSnapshot
    snap = ClusterSnapshot.from_dict({"format": "keel.snapshot/1", "brokers": [{"id": 1}, {"id": 2}], "topics": [
        {"name": "t", "partitions": [{"partition": p, "replicas": list(r)} for (_, p), r in REPLICAS.items()]}]})
    s = tmp_path / "snap.json"
    s.write_text(snap.to_json())
    plan = tmp_path / "plan.json"
    assert main(["log-dirs-plan", "--log-dirs-file", str(f), "--snapshot", str(s), "-o", str(plan)]) == 0
    assert json.loads(plan.read_text())["partitions"][0]["log_dirs"] == ["/d1/b", "any"]
    assert main(["log-dirs", "--log-dirs-file", str(f), "--bootstrap-server", "h:1"]) == 1
    assert "not both" in capsys.readouterr().err


def test_the_engine_refuses_log_dir_moves_for_a_partition_being_reassigned_or_under_kraft(tmp_path):
    """Issue 25 item 2: one executor for JBOD plans (core.kafka.jbod.execute), used by the CLI and the page, refuses
    before asking the brokers anything (no admin is needed to refuse) and records nothing."""
    from core.errors import KRaftControllerError, ReassignmentInProgressError
    from core.kafka.jbod import execute
    from core.model import TopicPartitionReplicas
    from core.audit.store import Store
    from tests.domain.test_topics import snapshot, topic

    store = Store(tmp_path / "keel.sqlite")
    plan = json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2],
                                                      "log_dirs": ["/d2", "any"]}]})
    moving = snapshot([1, 2, 3], [topic("t", {0: [1, 2]}, adding={0: [3]})])
    with pytest.raises(ReassignmentInProgressError, match="t-0 are being reassigned between brokers"):
        execute(None, store, plan, moving, cluster="c")
    listed = snapshot([1, 2, 3], [topic("t", {0: [1, 2]})],
                      reassignment=[TopicPartitionReplicas("t", 0, (2, 3))])
    with pytest.raises(ReassignmentInProgressError):
        execute(None, store, plan, listed, cluster="c")
    with pytest.raises(KRaftControllerError):
        execute(None, store, plan, snapshot([1, 2], [topic("t", {0: [1, 2]})], kraft_epoch=4), cluster="c")
    with pytest.raises(PlanError, match="not valid JSON"):
        execute(None, store, b"{nope", snapshot([1, 2], [topic("t", {0: [1, 2]})]), cluster="c")
    assert store.actions() == []
