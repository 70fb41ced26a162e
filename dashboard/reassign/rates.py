"""The Reassign page's partition write rates (issue 28, item 4): with the cluster's `bootstrap`, "Measure write rates"
samples every replica's log size twice, N seconds apart (core.kafka.rates, as `plan --sample-rates N` does), and the
plan then evens out the bytes written per broker (the balanced planner's write-rate goal). One measurement per
connection, shared by every session, until measured again or forgotten; the cost panel shows bytes-in per broker
before and after.
"""

from __future__ import annotations

import threading
import time

import streamlit as st

from core.balance.rates import RateEstimate
from core.errors import KeelError

MEMO = "reassign.write_rates"  # Connection.memo: bootstrap -> (RateEstimate, time.time() of the measurement)
DEFAULT_SECONDS = 10


def measure(cluster, seconds: float) -> RateEstimate:
    from core.kafka.admin import KafkaAdmin  # kafka-python is loaded only where a cluster has brokers to ask
    from core.kafka.rates import sample_rates

    with KafkaAdmin.for_cluster(cluster) as admin:
        return sample_rates(admin, seconds, 2)


def panel(conn, cluster) -> tuple[dict | None, str | None]:
    """(rates, their key for the plan cache) when measured on this connection; the button that measures them."""
    if not cluster.bootstrap:
        return None, None
    memo = conn.memo(MEMO)
    lock = memo.setdefault("lock", threading.Lock())
    row = st.container(horizontal=True, vertical_alignment="center")
    seconds = row.number_input("Sampling seconds", min_value=1, max_value=300, value=DEFAULT_SECONDS, step=1,
                               key="ra_rates_seconds", label_visibility="collapsed", width=110)
    if row.button(f"Measure write rates ({seconds} s)", key="ra_rates_measure", icon=":material/speed:",
                  help="Two samples of every replica's log size (describeLogDirs: one request per broker each), "
                       f"{seconds} s apart; the plan then evens out the bytes written per broker (every replica "
                       "writes its partition's bytes-in) within 10 %"):
        with lock, st.spinner(f"Measuring write rates over {seconds} s…", show_time=True):
            try:
                memo[cluster.bootstrap] = (measure(cluster, float(seconds)), time.time())
            except KeelError as e:
                st.error(f"Write rates could not be measured: {e}", icon=":material/error:")
    hit = memo.get(cluster.bootstrap)
    if hit is None:
        row.caption("Without write rates the plan balances replicas, leaders, racks and bytes.")
        return None, None
    est, at = hit
    row.caption(f"Write rates: {len(est.rates):,} partitions, {sum(est.rates.values()):,.0f} B/s in total, measured "
                f"over {est.seconds:.0f} s at {time.strftime('%H:%M:%S', time.localtime(at))}"
                + (f"; {len(est.dropped)} shrank (retention), those intervals left out" if est.dropped else ""))
    if row.button("Forget", key="ra_rates_forget", help="Plan without write rates"):
        memo.pop(cluster.bootstrap, None)
        st.rerun()
    return est.rates, f"rates@{at:.6f}"
