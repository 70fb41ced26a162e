"""The drift section of the Migration page (issue 27, item 3): during dual-write, every difference between what
ZooKeeper holds and what the brokers serve, with its age, and a warning for those that last.

`drift_section(ctx)` draws it (the Migration page calls it; it is a fragment of its own, nested fine in a live
fragment, that reads both sides again every READ_SECONDS while the page is open). The reading and the tracker are the
engine's (core.cluster.drift, core.migration_drift); the tracker lives in the connection's memo, so every browser
session sees the same ages, and a read is shared by the sessions asking within READ_SECONDS. ZooKeeper is read
through the live view's session, the brokers through a short-lived Admin client (the cluster's command_config).
"""

from __future__ import annotations

import threading
import time

import pandas as pd
import streamlit as st

from core.errors import KeelError
from core.migration_drift import DEFAULT_LASTING, DriftReport, DriftTracker
from dashboard.frame import PageContext
from dashboard.text import md, md_text

READ_SECONDS = 10.0
MEMO = "migration_drift"


def _read(ctx: PageContext, lasting: float, force: bool) -> tuple[DriftReport | None, str | None, str | None]:
    """(report, error, read at) for the cluster: read again when the last read is older than READ_SECONDS."""
    memo = ctx.conn.memo(MEMO)
    lock = memo.setdefault("lock", threading.Lock())
    with lock:
        tracker = memo.get("tracker")
        if tracker is None or tracker.lasting_after != lasting:
            tracker = memo["tracker"] = DriftTracker(lasting_after=lasting)
            memo.pop("at", None)
        if force or memo.get("at") is None or time.monotonic() - memo["at"] >= READ_SECONDS:
            live = ctx.conn.zk_live  # the ZooKeeper view, also once the pages read the brokers (migrated)
            if live is None or live.status != "connected":
                return memo.get("report"), "not connected to ZooKeeper: the drift is read once the live view is", \
                    memo.get("shown")
            from core.cluster.drift import read_drift
            from core.kafka.admin import KafkaAdmin

            try:
                with KafkaAdmin.for_cluster(ctx.cluster) as admin:
                    memo["report"] = read_drift(live.session, admin, tracker, cluster=ctx.cluster.name)
                memo.pop("error", None)
            except KeelError as e:  # a side unreachable: said, the ages kept for the next read
                memo["error"] = str(e)
            memo["at"], memo["shown"] = time.monotonic(), time.strftime("%H:%M:%S")
        return memo.get("report"), memo.get("error"), memo.get("shown")


def _draw(ctx: PageContext, lasting: float) -> None:
    force = st.button("Read both sides again", icon=":material/refresh:", key="drift_read_now")
    report, error, shown = _read(ctx, lasting, force)
    if error:
        st.error(md_text(error), icon=":material/error:")
    if report is None:
        return
    st.caption(f"Read at {md(shown)} ({report.reads} read(s) since the page opened; again every "
               f"{READ_SECONDS:g} s while it is open). A difference seen for {lasting:g} s or more lasts.")
    if not report.aged:
        st.success("No drift: ZooKeeper and the brokers agree on topics, partition states and settings.",
                   icon=":material/check_circle:")
        return
    if report.lasting:
        first = report.lasting[0].drift
        st.warning(f"**{len(report.lasting)} difference(s) between ZooKeeper and the brokers lasted "
                   f"{lasting:g} s or more**, e.g. {md(first.text)}. During dual-write the KRaft controller "
                   "writes every change into ZooKeeper: a lasting difference is a write stuck behind (see the "
                   "controller's log and its ZkWriteBehindLag). Brokers still in ZooKeeper mode may act on the "
                   "old value.", icon=":material/sync_problem:")
    else:
        st.info(f"{len(report.aged)} difference(s) seen for less than {lasting:g} s: each side changes a moment "
                "apart; they are warned of if they last.", icon=":material/schedule:")
    st.dataframe(pd.DataFrame([{"Age (s)": round(a.age), "What": a.drift.what, "Key": a.drift.key,
                                "Field": a.drift.field, "ZooKeeper": a.drift.zookeeper, "Brokers": a.drift.brokers,
                                "Lasting": a.lasting} for a in report.aged]),
                 hide_index=True, key="drift_table")


@st.fragment(run_every=READ_SECONDS)
def _fragment(ctx: PageContext, lasting: float) -> None:
    _draw(ctx, lasting)


def drift_section(ctx: PageContext, *, lasting: float = DEFAULT_LASTING) -> None:
    """The drift table and the warning for lasting differences; needs the cluster's zk and bootstrap."""
    st.subheader("Drift between ZooKeeper and the brokers", anchor=False)
    cluster = ctx.cluster
    if not cluster.zk or not cluster.bootstrap:
        st.info("Drift compares ZooKeeper with the metadata the brokers serve: the cluster needs both `zk` and "
                '`bootstrap` in keel.toml (`bootstrap = "broker1:9092,..."`).', icon=":material/info:")
        return
    _fragment(ctx, lasting)


__all__ = ["READ_SECONDS", "drift_section"]
