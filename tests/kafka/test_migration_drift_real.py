"""Issue 27, item 3, on real brokers (the shared ZooKeeper-mode cluster, Kafka 3.9.1): a healthy cluster shows no drift
between ZooKeeper and the metadata the brokers serve; a dynamic setting written into ZooKeeper WITHOUT its change
notification (the brokers never learn it: a write stuck behind, as during a migration's dual-write) is reported by the
engine, the CLI and the dashboard's drift section with its age, and becomes lasting; written back and announced as
kafka-configs does, it goes away.

Why a broker setting and not a topic's: a ZooKeeper-mode broker answers DescribeConfigs for a TOPIC by reading
/config/topics/<t> at that moment (kafka.server.metadata.ZkConfigRepository), so a topic znode written without its
notification reads back the same through the brokers, as the test shows. A BROKER resource is answered from the
broker's own applied settings (DynamicBrokerConfig), which only a notification updates. (During dual-write the KRaft
brokers answer from their metadata image: a topic setting stuck behind shows there; tests/domain covers it.)"""

from __future__ import annotations

import json
import time
import uuid

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core import zkformat as zf
from core.cluster.drift import compare, read_drift
from core.kafka.admin import KafkaAdmin
from core.migration_drift import BROKER_CONFIG, DriftTracker
from core.zk.ops import Op
from tests.kafka.realkafka import RealKafka, create_topic, eventually

BROKER, KEY, PLANTED = "2", "follower.replication.throttled.rate", "7000000"
ENTITY = zf.broker_config_path(BROKER)


def drift_page(lasting: float) -> None:
    from dashboard import frame
    from dashboard.migration_drift import drift_section

    ctx = frame.page_context()
    frame.live_snapshot(ctx.conn, in_fragment=False)
    drift_section(ctx, lasting=lasting)


def _announce(kafka: RealKafka, path: str, config: dict[str, str] | None, entity: str) -> None:
    """As kafka-configs writes a change: the entity node (deleted for None: there was none), then the notification
    the brokers listen to."""
    write = (Op("set", path, zf.encode_config(config)) if config is not None else Op("delete", path))
    kafka.zk.multi([write, Op("create", zf.CONFIG_CHANGE_PREFIX, zf.encode_config_change(entity), sequence=True)])


@pytest.fixture
def broker_setting(healthy: RealKafka):
    """Broker 2's /config/brokers node as found (None: there is none), put back and announced afterwards."""
    found = healthy.zk.get(ENTITY).data
    original = None if found is None else zf.decode_config(found, ENTITY)
    yield original
    now = healthy.zk.get(ENTITY).data
    if (None if now is None else zf.decode_config(now, ENTITY)) != original:
        _announce(healthy, ENTITY, original, f"brokers/{BROKER}")


@pytest.fixture
def keel_toml(healthy: RealKafka, tmp_path, monkeypatch):
    config = tmp_path / "keel.toml"
    config.write_text(f'[keel]\nrole = "viewer"\n\n[clusters.real]\nzk = "{healthy.zk_connect}"\n'
                      f'bootstrap = "{healthy.bootstrap}"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()  # closes the live connection


def _page(lasting: float) -> AppTest:
    """The section as a page draws it, then "Read both sides again" (a page opened shows the read another session
    made within READ_SECONDS)."""
    at = AppTest.from_function(drift_page, kwargs={"lasting": lasting}, default_timeout=60).run()
    assert not at.exception, at.exception
    at.button(key="drift_read_now").click().run()
    assert not at.exception, at.exception
    return at


def _shown(at: AppTest) -> list[str]:
    return [str(e.value) for kind in (at.success, at.info, at.warning, at.error, at.caption) for e in kind]


def _none(found: list) -> None:
    assert found == [], [d.text for d in found]


def _rows(report) -> list[tuple]:
    return [(a.drift.what, a.drift.key, a.drift.field, a.drift.zookeeper, a.drift.brokers, a.lasting)
            for a in report.aged]


def test_a_healthy_cluster_has_no_drift_and_a_topic_setting_reads_through_zookeeper(healthy: RealKafka):
    topic = f"drift-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3]}, **{"retention.ms": "3600000"})
    path = zf.topic_config_path(topic)
    try:
        with KafkaAdmin(healthy.bootstrap, timeout=20) as admin:
            # the whole cluster reads the same both ways (the brokers follow ZooKeeper within moments)
            eventually(lambda: _none(compare(healthy.zk, admin)), timeout=30, interval=0.5)
            code, out, err = healthy.keel("migration-drift", "--zk", healthy.zk_connect,
                                          "--bootstrap-server", healthy.bootstrap)
            assert code == 0 and out.startswith("no drift: ZooKeeper and the brokers agree"), (out, err)
            # ZooKeeper-mode brokers describe a topic's settings from the znode itself: no drift to see there
            healthy.zk.set(path, zf.encode_config({"retention.ms": "1000"}))
            assert healthy.topic_configs(topic)["retention.ms"][0] == "1000"
            _none(compare(healthy.zk, admin))
    finally:
        healthy.admin.delete_topics([topic])
        eventually(healthy._metadata_agrees, timeout=60, interval=0.5)


def test_a_setting_stuck_behind_is_reported_lasts_and_goes_away(healthy: RealKafka, broker_setting, keel_toml):
    assert KEY not in (broker_setting or {}), "a test before left the setting planted here"
    with KafkaAdmin(healthy.bootstrap, timeout=20) as admin:
        eventually(lambda: _none(compare(healthy.zk, admin)), timeout=30, interval=0.5)
        at = _page(lasting=3)
        assert any(s.startswith("No drift") for s in _shown(at)), _shown(at)

        # a write stuck behind: the znode changes, no /config/changes notification, broker 2 never applies it
        notified = set(healthy.zk.children(zf.CONFIG_CHANGES) or ())
        healthy.zk.create(ENTITY, zf.encode_config({KEY: PLANTED})) if broker_setting is None else \
            healthy.zk.set(ENTITY, zf.encode_config({**broker_setting, KEY: PLANTED}))
        expected = (BROKER_CONFIG, f"broker {BROKER}", KEY, PLANTED, "(not set)")
        tracker = DriftTracker(lasting_after=3)
        assert _rows(read_drift(healthy.zk, admin, tracker)) == [(*expected, False)]
        time.sleep(3.2)
        later = read_drift(healthy.zk, admin, tracker)
        assert _rows(later) == [(*expected, True)] and later.aged[0].age >= 3 and len(later.lasting) == 1
        assert set(healthy.zk.children(zf.CONFIG_CHANGES) or ()) == notified  # nothing told the brokers

        # the CLI: --watch reads until a difference could have lasted --lasting seconds; exit 3
        code, out, err = healthy.keel("migration-drift", "--zk", healthy.zk_connect, "--bootstrap-server",
                                      healthy.bootstrap, "--watch", "1", "--lasting", "2")
        assert code == 3, (out, err)
        assert "1 difference(s) between ZooKeeper and the brokers, 1 lasting" in out, out
        row = next(line for line in out.splitlines() if KEY in line).split()
        assert row[2:] == ["broker", "config", "broker", BROKER, KEY, PLANTED, "(not", "set)", "LASTING"], row
        assert "read 3/3: 1 difference(s), 1 lasting" in err, err
        code, out, _ = healthy.keel("migration-drift", "--zk", healthy.zk_connect,
                                    "--bootstrap-server", healthy.bootstrap, "--json")
        doc = json.loads(out)
        assert code == 0 and doc["lasting"] == 0 and [
            (d["what"], d["key"], d["field"], d["zookeeper"], d["brokers"], d["lasting"])
            for d in doc["differences"]] == [(*expected, False)]

        # the dashboard: the difference at once, the warning once it has lasted (the tracker is the connection's)
        at = _page(lasting=3)
        table = at.dataframe[0].value
        assert list(table["Field"]) == [KEY] and list(table["ZooKeeper"]) == [PLANTED] and not table["Lasting"][0]
        assert not at.warning and any("seen for less than 3 s" in s for s in _shown(at)), _shown(at)
        time.sleep(3.2)
        at = _page(lasting=3)
        assert any("lasted 3 s or more" in str(w.value) and KEY in str(w.value) for w in at.warning), _shown(at)
        assert bool(at.dataframe[0].value["Lasting"][0]) and at.dataframe[0].value["Age (s)"][0] >= 3

        # written back and announced, as kafka-configs does: the difference goes away
        _announce(healthy, ENTITY, broker_setting, f"brokers/{BROKER}")
        gone = read_drift(healthy.zk, admin, tracker)
        assert gone.aged == () and gone.lasting == ()
        at = _page(lasting=3)
        assert any(s.startswith("No drift") for s in _shown(at)), _shown(at)
