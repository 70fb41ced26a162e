"""Issue 28 items 1-2 on the Reassign page, against the real ZooKeeper-mode cluster with bootstrap: for the same
samples, the page shows the numbers `python -m core status --json` prints (the samples file the CLI wrote is put in
the page's session); then the throttle is raised from the page (the brokers' rates, History with the old rate), and
a cluster without `bootstrap` is told what byte progress needs. KRaft: `status` and `throttle` with
--bootstrap-server alone, followed to 100 %."""

from __future__ import annotations

import json
import uuid

import pytest

from core import zkformat as zf
from core.audit.store import Store
from core.kafka.admin import KafkaAdmin
from core.reassign_progress import format_bytes, format_seconds, samples_from_json
from dashboard.reassign import progress as bytes_view
from tests.dashboard.test_dashboard_apptest import app, metrics, texts, write_config  # noqa: F401
from tests.kafka.realkafka import (RealKafka, config_znodes, eventually, keel_zk, needs_kafka, require,
                                   running_reassignments)
from tests.kafka.test_reassign_progress_real import _moving

pytestmark = [needs_kafka("2.4", "listPartitionReassignments (KIP-455)"), pytest.mark.usefixtures("fresh_connections")]

PAGE = "reassign/page.py"
CLUSTER = "kafka"
ACTOR = "dana@keel-test"


@pytest.fixture
def page_env(healthy: RealKafka, tmp_path, monkeypatch) -> RealKafka:
    write_config(tmp_path, monkeypatch, {CLUSTER: {"zk": healthy.zk_connect, "bootstrap": healthy.bootstrap}},
                 role="operator")
    monkeypatch.setenv("KEEL_STORE", str(healthy.store))
    monkeypatch.setenv("KEEL_ACTOR", ACTOR)
    yield healthy
    if healthy.zk.exists(zf.REASSIGN) or healthy.admin.list_partition_reassignments():
        keel_zk(healthy, "cancel", "--bootstrap-server", healthy.bootstrap, "--all", "--cluster", CLUSTER)


def _open(samples=None):
    at = app()
    if samples is not None:
        at.session_state[bytes_view.SAMPLES] = (CLUSTER, samples)
    at.run()
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _table(at, column: str):
    [df] = [d.value for d in at.dataframe if column in d.value.columns]
    return df


def test_the_page_and_the_cli_show_the_same_numbers_then_the_page_raises_the_throttle(page_env: RealKafka, tmp_path,
                                                                                      monkeypatch):
    kafka = page_env
    # 8 MB a partition: about a minute at 200 kB/s, so that the copy still runs when the page's click arrives
    # (4 MB had ended once under CI's load, and the page, with no copy left, no longer drew the throttle's outcome)
    topic, plan = _moving(kafka, tmp_path, "pagebytes", rate=200_000, size=8_000_000)
    held = tmp_path / "samples.json"
    out = kafka.keel_ok("status", "--zk", kafka.zk_connect, "--bootstrap-server", kafka.bootstrap, "--json",
                        "--samples", str(held), "--cluster", CLUSTER)
    cli = json.loads(out)
    assert cli["running"] == 2 and cli["samples"] == 2 and cli["rate"] is not None, cli
    samples = samples_from_json(json.loads(held.read_text()), CLUSTER)
    monkeypatch.setattr(bytes_view, "SAMPLE_EVERY", 1e9)  # the page measures the CLI's samples, and no new one

    at = _open(samples)
    shown = metrics(at)
    assert shown["Copied"] == format_bytes(cli["copied"]) and shown["Remaining"] == format_bytes(cli["remaining"])
    assert shown["Copy rate"] == f"{format_bytes(cli['rate'])}/s" and shown["ETA"] == format_seconds(cli["eta_seconds"])
    bar = at.get("progress")[0]
    assert f"({cli['percent']:.1f} %)" in bar.proto.text, bar.proto.text
    brokers = _table(at, "Broker")
    assert [(r["Broker"], r["Partitions"], r["Copied (bytes)"], r["Total (bytes)"], r["%"], r["Rate (B/s)"])
            for r in brokers.to_dict("records")] == \
        [(b["broker"], b["partitions"], b["copied"], b["total"], b["percent"], b["rate"]) for b in cli["brokers"]]
    parts = _table(at, "To broker(s)")
    assert [(r["Topic"], r["Partition"], r["Copied (bytes)"], r["Total (bytes)"], r["%"], r["Rate (B/s)"])
            for r in parts.to_dict("records")] == \
        [(p["topic"], p["partition"], p["copied"], p["total"], p["percent"], p["rate"]) for p in cli["partitions"]]
    assert "`python -m core status` prints the same" in texts(at.caption)

    # the throttle raised from the page: every broker moving data, History with the rate it replaced
    at.number_input(key="ra_throttle_mb").set_value(3.0)
    at.button(key="ra_throttle_change").click().run()
    assert not at.exception, at.exception
    assert not at.error, texts(at.error)
    said = texts(at.success)
    assert "Throttle 3,000,000 B/s on broker(s) 1,2,3" in said and "it was 200,000 B/s" in said, said
    rates = {p: c.get("follower.replication.throttled.rate") for p, c in config_znodes(kafka, []).items()}
    assert rates == {zf.broker_config_path(b): "3000000" for b in (1, 2, 3)}
    [row] = Store(kafka.store).actions(CLUSTER, kind="throttle", limit=1)
    assert (row.actor, row.payload["throttle"], row.payload["previous_throttle"]) == (ACTOR, 3_000_000, 200_000)
    eventually(lambda: require(not running_reassignments(kafka, topic)), timeout=60)
    kafka.keel_ok("verify", "--zk", kafka.zk_connect, "--reassignment-json-file", plan, "--store", str(kafka.store),
                  "--cluster", CLUSTER)


def test_without_bootstrap_the_page_says_what_byte_progress_needs(healthy: RealKafka, tmp_path, monkeypatch):
    kafka = healthy
    write_config(tmp_path, monkeypatch, {CLUSTER: {"zk": kafka.zk_connect}}, role="operator")
    monkeypatch.setenv("KEEL_STORE", str(kafka.store))
    topic, plan = _moving(kafka, tmp_path, "nobootstrap", rate=100_000, size=2_000_000)
    try:
        at = _open()
        assert "Progress in bytes needs the cluster's `bootstrap` servers in keel.toml" in texts(at.caption)
        assert any("status" in c.value and "--watch" in c.value for c in at.code)
    finally:
        keel_zk(kafka, "cancel", "--bootstrap-server", kafka.bootstrap, "--all")


def test_kraft_status_and_throttle_through_the_brokers_alone(kraft, tmp_path):
    """KRaft: which partitions move comes from the controller (listPartitionReassignments), the bytes from
    describeLogDirs; `throttle` and `status --watch` with --bootstrap-server alone."""
    from tests.kafka.test_kraft_reassign_writes import _create, _produce

    boot = kraft.bootstrap_servers
    store = str(tmp_path / "keel.sqlite")
    topic = f"kbytes-{uuid.uuid4().hex[:6]}"
    a, b, c = 1, 2, 3
    with KafkaAdmin(boot, timeout=20) as admin:
        _create(admin, topic, {0: [a, b]})
        _produce(kraft, topic, [0], 4)
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0,
                                                                  "replicas": [c, b]}]}))

        def keel(*argv):
            from core.cli import main
            import contextlib
            import io

            o, e = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
                code = main(list(argv))
            return code, o.getvalue(), e.getvalue()

        code, out, err = keel("execute", "--bootstrap-server", boot, "--reassignment-json-file", str(plan),
                              "--throttle", "200000", "--store", store)
        assert code == 0, err
        try:
            code, out, err = keel("throttle", "--bootstrap-server", boot, "--rate", "2000000", "--store", store)
            assert code == 0, err
            assert f"The inter-broker throttle limit was set to 2000000 B/s on brokers {a},{b},{c}" in out, out
            assert "it was 200,000 B/s" in out, out
            code, out, err = keel("status", "--bootstrap-server", boot, "--watch", "1", "--json")
            assert code == 0, err
            lines = [json.loads(x) for x in out.splitlines()]
            copied = [x["copied"] for x in lines]
            assert copied == sorted(copied) and lines[-1]["percent"] == 100.0 and lines[-1]["running"] == 0, lines
            assert lines[-1]["total"] == pytest.approx(4_000_000, rel=0.05)
            assert [x["broker"] for x in lines[-1]["brokers"]] == [c]
        finally:
            keel("verify", "--bootstrap-server", boot, "--reassignment-json-file", str(plan), "--store", store)
            admin._admin.delete_topics([topic])  # noqa: SLF001
