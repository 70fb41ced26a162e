"""Issue 27's Migration page in AppTest, on ZooKeeper trees of each phase planted in the test's chroot: the phase,
what Kafka does, the next step, the revert steps, readiness (verdicts and fixes) and the timeline; the banner and
the ZooKeeper write refusal stay on every page."""

from __future__ import annotations

from dashboard.text import unescape

import time

import pytest

from core import zkformat as zf
from core.audit.migration_timeline import timeline
from core.audit.store import Store
from core.migration_phases import REVERT_MIGRATING_BROKERS, REVERT_MIGRATION_MODE, REVERT_PROVISIONING
from core.zk.session import ZkSession
from dashboard import migration_banner
from tests.dashboard.test_dashboard_apptest import app, live_connection, table_with, texts, write_config  # noqa: F401
from tests.zk.test_migration_phases_cli import plant

PAGE = "views/migration.py"
EXPECTED = {"none": ("No migration", None), "controllers-ready": ("waiting for the brokers", REVERT_PROVISIONING),
            "metadata-load": ("Initial metadata load", REVERT_MIGRATION_MODE),
            "brokers-to-kraft": ("brokers being rolled to KRaft", REVERT_MIGRATING_BROKERS),
            "dual-write": ("Dual-write phase", REVERT_MIGRATING_BROKERS)}


def open_page(zk_connect, tmp_path, monkeypatch, phase: str):
    with ZkSession.open(zk_connect) as s:
        plant(s, phase)
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "k.sqlite"))
    write_config(tmp_path, monkeypatch, {"mig": {"zk": zk_connect}})
    at = app().run()
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("phase", list(EXPECTED))
def test_the_page_shows_each_phase(phase, zk_connect, tmp_path, monkeypatch):
    at = open_page(zk_connect, tmp_path, monkeypatch, phase)
    name, steps = EXPECTED[phase]
    assert name in texts(at.subheader)
    body = texts(at.markdown)
    assert "What Kafka is doing:" in body and "Next step:" in body
    if steps is not None:
        shown = texts(at.success)
        assert "Rollback possible" in shown and all(step.split(" (")[0] in shown for step in steps)
        assert "ZooKeeper → KRaft migration" in texts(at.error) + texts(at.warning)  # the banner stays
        assert "Writes through ZooKeeper are disabled" in migration_banner.block_text(live_connection("mig"))
    assert [s.key for s in timeline(Store(tmp_path / "k.sqlite"), "mig")] == [phase]


def test_readiness_table_and_timeline_of_changes(zk_connect, tmp_path, monkeypatch):
    at = open_page(zk_connect, tmp_path, monkeypatch, "none")
    with ZkSession.open(zk_connect) as s:
        s.create(zf.MIGRATION, b'{"version":0}')  # malformed (KAFKA-19480)
        s.create(f"{zf.DELETE_TOPICS}/orders")
    at.text_input(key="mig_controller_ids").input("2,3000").run()
    at.button(key="mig_check").click().run()
    assert not at.exception, at.exception
    table = table_with(at, "Verdict", "table")  # a static table: long details and fixes wrap, never cut
    rows = dict(zip(table.index, table["Verdict"]))
    assert rows["KRaft controller ids collide with no broker id"] == "✗ FAIL"
    assert rows["/migration is absent or well-formed"] == "✗ FAIL"
    assert rows["No topic deletion in flight"] == "✗ FAIL"
    assert rows["Every broker runs Kafka 3.9"] == "? unknown"  # no bootstrap: said, not passed
    fixes = unescape(" ".join(table["Detail and fix"]))  # the cells are markdown: cluster text escaped
    assert "rmr /migration" in fixes and "bootstrap" in fixes
    at.text_input(key="mig_controller_ids").input("x").run()
    at.button(key="mig_check").click().run()
    assert "KRaft controller ids must be comma-separated" in texts(at.error)
    with ZkSession.open(zk_connect) as s:
        plant(s, "controllers-ready")
    deadline = time.monotonic() + 30  # the live view and the banner's /migration read (every 5 s) catch up
    while "waiting for the brokers" not in texts(at.run().subheader) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "waiting for the brokers" in texts(at.subheader)
    seen = table_with(at, "Phase", "dataframe")
    assert len(seen) == 2 and "No migration" in seen["Phase"].iloc[0]


def test_the_controllers_address_goes_to_the_quorum_check(zk_connect, tmp_path, monkeypatch, closed_port):
    """The page's input for the KRaft controllers' address (next to the controller ids): a malformed one is refused
    before anything is read; one where no controller answers makes the quorum check unknown with the reason (the
    real controllers' ok and fail: tests/kafka/test_quorum_readiness_real.py)."""
    at = open_page(zk_connect, tmp_path, monkeypatch, "none")
    at.text_input(key="mig_controllers").input("controller1").run()
    at.button(key="mig_check").click().run()
    assert "'controller1' is not host:port" in texts(at.error)
    nobody = closed_port
    at.text_input(key="mig_controllers").input(nobody).run()
    at.button(key="mig_check").click().run()
    assert not at.exception, at.exception
    table = table_with(at, "Verdict", "table")
    row = table.loc["KRaft quorum: a leader, every voter caught up"]
    assert row["Verdict"] == "? unknown"
    detail = unescape(row["Detail and fix"])
    assert nobody in detail and "ECONNREFUSED" in detail and "--bootstrap-controller" in detail
