"""Issue 28 (noticed beside items 1-2): the Reassign page on a cluster without any topic says there is nothing to plan,
not an error box ("no partitions to plan"), against a real ZooKeeper."""

from __future__ import annotations

import pytest

from core.zk.session import ZkSession
from tests.dashboard.test_dashboard_apptest import texts
from tests.dashboard.test_reassign_cancel_page import cluster, open_reassign
from tests.support.kafka_tree import write_cluster

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")


def test_a_cluster_without_topics_has_nothing_to_plan(zk_connect, tmp_path, monkeypatch, store):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: None, 2: None, 3: None})
    at = open_reassign(tmp_path, monkeypatch, cluster(zk_connect))
    assert not at.error, texts(at.error)
    assert "Nothing to plan: the cluster has no topic yet" in texts(at.info)
