"""The Fleet page's "Imbalance over time": each cluster's fleet metrics per capture kept in STORE/history/
(core.fleet.history scores them with the fleet job's definitions), one line per cluster, one metric at a time.

Read with pandas, cached per history state (a new capture changes the stamp): looking never starts Spark.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.colors as plotly_colors
import plotly.graph_objects as go
import streamlit as st

from core.errors import KeelError
from core.fleet.history import METRICS, History, history_stamp, latest_first, load_history
from dashboard.text import md_text
from dashboard.text import plotly as esc

K_METRIC, K_CLUSTERS = "fleet_history_metric", "fleet_history_clusters"
K_AUTO = "fleet_history_auto"  # the clusters last chosen for the person: followed until they pick their own
DEFAULT_LINES = 8  # clusters drawn at first: the worst by their latest score (a legend of 40 hides the chart)
LABELS = {"imbalance_score": "Imbalance score", "replica_cv": "Replica CV", "leader_cv": "Leader CV",
          "under_replicated": "Under-replicated partitions", "offline": "Offline partitions",
          "rack_violations": "Rack violations", "brokers_over_leader_threshold": "Brokers over leader threshold",
          "partitions": "Partitions", "alive_brokers": "Alive brokers"}
# qualitative and readable with common colour-vision deficiencies (the theme's blues told two clusters apart badly)
PALETTE = plotly_colors.qualitative.Safe


def trend_figure(scores: pd.DataFrame, metric: str, clusters: list[str]) -> go.Figure:
    """One line per cluster of `clusters` (in that order) of `metric` over captured_at; markers, so that a
    cluster with one capture shows as a point."""
    fmt = ".3f" if metric in ("replica_cv", "leader_cv") else ".1f" if metric == "imbalance_score" else ","
    fig = go.Figure()
    for i, name in enumerate(clusters):
        rows = scores[scores["cluster"] == name].sort_values("captured_at")
        fig.add_trace(go.Scatter(
            x=rows["captured_at"], y=rows[metric], name=esc(name), mode="lines+markers", marker=dict(size=6),
            line=dict(color=PALETTE[i % len(PALETTE)]),
            hovertemplate=f"{esc(name)}<br>%{{x|%Y-%m-%d %H:%M:%S}} UTC<br>{LABELS[metric]}: %{{y:{fmt}}}"
                          "<extra></extra>"))
    fig.update_layout(
        title=dict(text=f"{LABELS[metric]} per capture", x=0, xanchor="left", font=dict(size=15)),
        height=380, margin=dict(l=10, r=10, t=45, b=10), plot_bgcolor="rgba(0,0,0,0)",
        paper_bgcolor="rgba(0,0,0,0)", hoverlabel=dict(namelength=-1, align="left"),
        # the legend under the plot, not beside it: at 900 px a side legend took a third of the width
        legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0),
    )
    fig.update_xaxes(title_text="captured_at (UTC)", gridcolor="rgba(128,128,128,0.2)")
    fig.update_yaxes(title_text=metric, gridcolor="rgba(128,128,128,0.2)", rangemode="tozero",
                     range=[0, 100] if metric == "imbalance_score" else None)
    return fig


@st.cache_data(show_spinner=False, max_entries=4)
def _load(store: str, stamp: str) -> History:
    return load_history(store)


def show_history(store_path: Path | None) -> None:
    """The section: a metric, the clusters, their lines; an invitation to collect when there is no history."""
    st.subheader("Imbalance over time", anchor=False)
    if store_path is None:
        return
    stamp = history_stamp(store_path)
    if stamp == "none":
        st.info("No history in this store yet: **Collect now** above keeps one capture of every configured cluster "
                "per click, and `python -m core fleet collect --every 15m --out STORE` one per round.",
                icon=":material/timeline:")
        return
    try:
        hist = _load(str(store_path.resolve()), stamp)
    except (KeelError, OSError, ValueError) as e:  # a damaged capture must not take the page down
        st.error(md_text(f"Cannot read the history of `{store_path}`: {e}"), icon=":material/error:")
        return
    if hist.scores.empty:
        st.info("The store's history holds no complete capture yet.", icon=":material/timeline:")
        return
    order = latest_first(hist.scores)
    # stacked, not side by side: at 900 px a column of the clusters' chips cut the third one
    metric = st.selectbox("Metric", list(METRICS), key=K_METRIC, format_func=LABELS.get,
                          help="The fleet ranking's definitions, computed for every capture", width=320)
    current = st.session_state.get(K_CLUSTERS)
    kept = [c for c in current or [] if c in order]
    if not kept or current == st.session_state.get(K_AUTO):  # untouched: the worst ones, as the history grows
        st.session_state[K_CLUSTERS] = st.session_state[K_AUTO] = order[:DEFAULT_LINES]
    elif kept != current:
        st.session_state[K_CLUSTERS] = kept  # a cluster gone from the history is dropped, not an error
    chosen = st.multiselect("Clusters", order, key=K_CLUSTERS,
                            help=f"Ordered by the latest imbalance score, worst first; the {DEFAULT_LINES} worst "
                                 "are drawn at first")
    st.plotly_chart(trend_figure(hist.scores, metric, chosen), key="fleet_history_chart",
                    config={"displayModeBar": False}, width="stretch")
    first, last = hist.scores["captured_at"].min(), hist.scores["captured_at"].max()
    st.caption(f"{LABELS[metric]}: {METRICS[metric]}. {hist.captures:,} captures of {len(order):,} clusters, "
               f"{first:%Y-%m-%d %H:%M} – {last:%Y-%m-%d %H:%M} UTC, from `{store_path}/history/`.")
