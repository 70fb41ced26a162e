"""Issue 24, item 8: a broker that goes down while Keel watches.

Its last registration (rack, host, endpoints) survives in the live view (core.zk.tree, `Broker.remembered`), so
Brokers › Racks keeps it in its rack and no rack changes colour; the Broker page's even share counts it while it
holds replicas (core.shares). Real ZooKeeper; the pages through AppTest on a sandbox cluster whose broker is
stopped while the dashboard's live connection runs.
"""

from __future__ import annotations

import json

import pytest

from core import zkformat as zf
from core.model import Broker, ClusterSnapshot, Partition, Topic
from sandbox.seed import SandboxSpec
from core.shares import even_share
from core.zk.session import ZkSession
from core.zk.watcher import LiveCluster
from dashboard import charts
from tests.support.kafka_tree import write_broker, write_cluster, write_topic
from tests.support.sandbox_helpers import running_sandbox, wait_until
from tests.dashboard.test_dashboard_actions import ok, open_page
from tests.dashboard.test_dashboard_apptest import live_connection, texts  # noqa: F401


def test_the_live_view_keeps_the_last_registration_of_a_broker_that_went_down(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2"}, controller=1)
        write_broker(s, 3, "r3")
        write_topic(s, "t", {0: [1, 2, 3], 1: [3, 4]})  # 4: referenced, never registered
        live = LiveCluster(ZkSession.open(zk_connect), cluster="c").start()
        try:
            up = live.snapshot().broker_by_id[3]
            assert up == Broker(3, "r3", "host3", 9092, ("PLAINTEXT://host3:9092",), alive=True, remembered=False)
            s.delete(zf.broker_path(3))
            snap = live.wait_for(lambda x: not x.broker_by_id[3].alive)
            down = snap.broker_by_id[3]
            assert down == Broker(3, "r3", "host3", 9092, ("PLAINTEXT://host3:9092",), alive=False, remembered=True)
            assert snap.broker_by_id[4] == Broker(4, alive=False)  # never seen: nothing to remember
            assert snap.as_read().broker_by_id[3] == Broker(3, alive=False)  # what a fresh read knows
            # the snapshot JSON carries the marker (only where it is true), and reads back
            doc = json.loads(snap.to_json())
            assert [b.get("remembered") for b in doc["brokers"]] == [None, None, True, None]
            assert ClusterSnapshot.from_json(snap.to_json()).broker_by_id[3] == down
            # a re-read after a reconnect (a fresh tree) still knows it
            live._reload()
            assert live.snapshot().broker_by_id[3] == down
            # back, with another rack: the current registration, not the memory
            write_broker(s, 3, "r9")
            back = live.wait_for(lambda x: x.broker_by_id[3].alive).broker_by_id[3]
            assert back.rack == "r9" and not back.remembered
        finally:
            live.stop()
            live.session.close()


def test_snapshot_json_stays_compatible():
    snap = ClusterSnapshot("c", "2026-01-01T00:00:00Z", "z", (Broker(1, "r1"), Broker(2, alive=False)),
                           (Topic("t", (Partition("t", 0, (1, 2)),)),))
    assert "remembered" not in snap.to_json()  # a file written before the field exists is written the same
    old = json.loads(snap.to_json())
    assert ClusterSnapshot.from_dict(old) == snap
    old["brokers"][0]["remembered"] = True  # an alive broker is never remembered
    with pytest.raises(Exception, match="'remembered' must be true only for a broker that is not alive"):
        ClusterSnapshot.from_dict(old)


def test_even_share_counts_the_brokers_that_hold_replicas():
    """4 brokers holding 3 replicas each, broker 4 down: 3 each is even (the alive-only figure said 4). An empty
    alive broker takes a share; a down broker holding nothing does not."""
    parts = tuple(Partition("t", i, r) for i, r in enumerate([(1, 2, 3), (2, 3, 4), (3, 4, 1), (4, 1, 2)]))
    brokers = (Broker(1), Broker(2), Broker(3), Broker(4, alive=False))
    snap = ClusterSnapshot("c", "", "", brokers, (Topic("t", parts),))
    share = even_share(snap)
    assert (share.replicas, share.brokers, share.down_holding, share.per_broker) == (12, 4, (4,), 3.0)
    snap = ClusterSnapshot("c", "", "", brokers + (Broker(5), Broker(6, alive=False)), (Topic("t", parts),))
    assert (even_share(snap).brokers, even_share(snap).per_broker) == (5, 12 / 5)


FIVE_RACKS = SandboxSpec(brokers=5, racks=5, topics=6, seed=5)  # one broker per rack: rack-a .. rack-e


def rack_colours(at) -> dict[str, str]:
    """Legend entry (rack) -> bar colour of the Overview's replicas chart."""
    [chart] = [c for c in at.get("plotly_chart") if c.key == "replicas_chart"]
    return {t["name"]: t["marker"]["color"] for t in json.loads(chart.proto.spec)["data"]}


def test_pages_after_a_broker_went_down(zk_connect, tmp_path, monkeypatch):
    with running_sandbox(zk_connect, FIVE_RACKS) as sb:
        assert sb.emulator.wait_idle(10)
        at = open_page(sb, zk_connect, tmp_path, monkeypatch, "views/overview.py")
        before = rack_colours(at)
        assert set(before) == {"rack-a", "rack-b", "rack-c", "rack-d", "rack-e"}
        sb.stop_broker(2)  # rack-b, while the dashboard watches
        sb.emulator.wait_idle(10)
        conn = live_connection("demo")
        wait_until(lambda: not conn.snapshot().broker_by_id[2].alive, timeout=10, message="broker 2 down")
        snap = conn.snapshot()
        assert snap.broker_by_id[2].rack == "rack-b" and snap.broker_by_id[2].remembered

        # no rack changes colour (rack-c took rack-b's colour when rack-b went with its broker)
        at.switch_page("views/overview.py").run()
        ok(at)
        after = rack_colours(at)
        assert {r: c for r, c in after.items() if r != charts.DOWN} == {r: c for r, c in before.items()
                                                                       if r != "rack-b"}
        # Create topic colours its racks the same way
        at.switch_page("views/create_topic.py").run()
        at.text_input(key="ct_name").input("colours").run()
        ok(at)
        [ct] = [c for c in at.get("plotly_chart") if c.key == "ct_replicas_chart"]
        assert {t["name"]: t["marker"]["color"] for t in json.loads(ct.proto.spec)["data"]} == \
            {r: c for r, c in before.items() if r != "rack-b"}

        # Brokers › Racks: broker 2 in rack-b, down; no "no rack" row
        at.switch_page("views/brokers.py").run()
        ok(at)
        racks = next(t.value for t in at.dataframe if "Down" in t.value.columns).set_index("Rack")
        assert charts.NO_RACK not in racks.index
        assert (racks.loc["rack-b", "Brokers"], racks.loc["rack-b", "Down"]) == (1, 1)

        # Broker 2's page: its last seen rack and endpoints; the even share counts it (it holds replicas)
        at.query_params["broker"] = "2"
        at.switch_page("views/broker.py").run()
        ok(at)
        assert {m.label: m.value for m in at.metric}["Rack"] == "rack-b"
        endpoints = next(t.value for t in at.dataframe if "Endpoint (last seen)" in t.value.columns)
        assert endpoints["Endpoint (last seen)"].tolist() == ["PLAINTEXT://127.0.0.1:9094"]
        assert "last registration Keel saw" in texts(at.warning)
        held = sum(2 in p.replicas for p in snap.partitions())
        assert held > 0
        even = snap.replica_count / 5
        assert f"An even share would be {even:,.0f} replicas per broker ({snap.replica_count:,} replicas over 5 " \
               f"brokers, 1 of them down but holding replicas)." in texts(at.caption)
