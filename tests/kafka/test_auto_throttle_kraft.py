"""Issue 28 item 3 on a KRaft cluster (no ZooKeeper): a reassignment started throttled through the Admin API engine,
the auto-throttle loop attached with `--bootstrap-server` alone. No producer: the receiving broker's other inbound is
~0, so the loop raises the starting rate to the budget (its ceiling) after its second measurement, the copy
finishes, and the loop removes the throttles (describeConfigs of every broker: no dynamic rate left) and records
the change and the removal in History."""

from __future__ import annotations

import contextlib
import io
import json
import time
import uuid

from core.audit.store import Store, ThrottleLoops
from core.kafka.admin import KafkaAdmin
from core.plans import FOLLOWER_RATE
from tests.kafka.realkafka import eventually

START, BUDGET = 100_000, 2_000_000  # B/s: 4 MB take 40 s at START, ~2 s at the budget


def _keel(*argv: str) -> tuple[int, str, str]:
    from core.cli import main

    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        code = main(list(argv))
    return code, o.getvalue(), e.getvalue()


def _dynamic_rates(admin: KafkaAdmin) -> dict[int, set[str]]:
    """Per broker, the replication rates set dynamically (what a throttle writes); asked again while the client's
    metadata lacks a broker of the cluster just started."""
    names = [FOLLOWER_RATE, "leader.replication.throttled.rate"]

    def ask() -> dict[int, set[str]]:
        out = {}
        for b, answer in admin.broker_configs([1, 2, 3], names).items():
            assert not isinstance(answer, str), answer
            out[b] = {f"{n}={v}" for n, (v, source, _) in answer.items() if v and "DYNAMIC" in source}
        return out
    return eventually(ask, timeout=15, interval=0.3)


def test_kraft_auto_throttle_through_the_brokers_alone(kraft, tmp_path, monkeypatch, fresh_connections):
    from tests.kafka.test_kraft_reassign_writes import _create, _produce

    boot = kraft.bootstrap_servers
    store = str(tmp_path / "keel.sqlite")
    topic = f"kauto-{uuid.uuid4().hex[:6]}"
    with KafkaAdmin(boot, timeout=20) as admin:
        _create(admin, topic, {0: [1, 2]})
        _produce(kraft, topic, [0], 4)
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0,
                                                                  "replicas": [3, 2]}]}))
        code, out, err = _keel("execute", "--bootstrap-server", boot, "--reassignment-json-file", str(plan),
                               "--throttle", str(START), "--store", store, "--cluster", "kr")
        assert code == 0, out + err
        try:
            assert {f"{FOLLOWER_RATE}={START}"} <= _dynamic_rates(admin)[3]
            _page_says_how_to_verify(boot, store, tmp_path, monkeypatch)
            t0 = time.monotonic()
            code, out, err = _keel("auto-throttle", "--bootstrap-server", boot, "--budget", str(BUDGET),
                                   "--interval", "1", "--store", store, "--cluster", "kr")
            took = time.monotonic() - t0
            print(out, f"loop attached to its end in {took:.1f} s")
            assert code == 0, out + err
            assert f"auto-throttle: {START:,} B/s" in out and f"-> {BUDGET:,} B/s" in out, out
            assert "auto-throttle: nothing is copied any more: throttles removed" in out, out
            assert not admin.reassignments(), "the reassignment still runs"
            assert _dynamic_rates(admin) == {1: set(), 2: set(), 3: set()}
            history = Store(store)
            [change] = history.actions("kr", kind="throttle", limit=5)
            assert change.status == "applied", change
            assert (change.payload["previous_throttle"], change.payload["throttle"]) == (START, BUDGET), change.payload
            [removal] = history.actions("kr", kind="remove-throttles", limit=5)
            assert removal.status == "applied" and removal.result == "removed", removal
            [row] = ThrottleLoops(history).of("kr")
            assert row.rate == BUDGET and row.end_reason.startswith("nothing is copied any more"), row
            code, out, err = _keel("verify", "--bootstrap-server", boot, "--reassignment-json-file", str(plan),
                                   "--store", store, "--cluster", "kr")
            assert code == 0 and "auto-throttle" not in err, out + err
        finally:
            _keel("cancel", "--bootstrap-server", boot, "--all", "--store", store)
            _keel("verify", "--bootstrap-server", boot, "--reassignment-json-file", str(plan), "--store", store)
            admin._admin.delete_topics([topic])  # noqa: SLF001


def _page_says_how_to_verify(boot: str, store: str, tmp_path, monkeypatch) -> None:
    """The Reassign page of the KRaft cluster (AppTest), its reassignment running: the command it offers reaches the
    cluster through its brokers (it read `verify --zk None`)."""
    from tests.dashboard.test_dashboard_apptest import app, write_config

    write_config(tmp_path, monkeypatch, {"kr": {"bootstrap": boot}}, role="operator")
    monkeypatch.setenv("KEEL_STORE", store)
    at = app()
    at.run()
    at.switch_page("reassign/page.py").run()
    assert not at.exception, at.exception
    shown = [c.value for c in at.code if "verify" in c.value]
    assert shown and all(f"--bootstrap-server {boot}" in c and "--zk" not in c for c in shown), shown
