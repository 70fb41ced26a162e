"""Small building blocks every page shares: rows of metrics that stay readable at any width, and links between
views (a topic, a broker, an action in History) that are URLs too.

Metrics: a row is a wrapping horizontal container and each metric takes the width of its own label and value, so
a narrow window (900 px with the sidebar open leaves ~550 px) moves metrics to the next line instead of cutting
"Replicas moved 226" to "2.". Labels are short; the long form goes in the help tooltip.

Links: every view's state that matters is in its URL (widgets bound to query parameters: `?topic=`, `?broker=`,
`?goal=` ...), so a link is a page plus query parameters; st.page_link keeps the session (no reload).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

OVERVIEW = "views/overview.py"
TOPICS = "views/topics.py"
BROKERS = "views/brokers.py"
BROKER = "views/broker.py"
LEADERS = "views/leaders.py"
REASSIGN = "reassign/page.py"
HISTORY = "views/history.py"


def metric_row(container: Any = None):
    """A row of metrics that wraps onto more lines when the window is narrow."""
    return (container or st).container(horizontal=True, gap="small")


def metric(row, label: str, value: Any, *, help: str | None = None, **kwargs) -> None:
    """A bordered metric as wide as its label and value (never truncated)."""
    row.metric(label, value, help=help, border=True, width="content", **kwargs)


def broker_link(broker_id: int, *, label: str | None = None, container: Any = None, help: str | None = None
                ) -> None:
    (container or st).page_link(BROKER, label=label or f"Broker {broker_id}", icon=":material/dns:",
                                query_params={"broker": str(broker_id)}, help=help)


def broker_links(broker_ids, *, alive=None, container: Any = None) -> None:
    """One link per broker, in a wrapping row: "Broker 3", "Broker 2 (down)"."""
    row = (container or st).container(horizontal=True, gap="small")
    alive = set(broker_ids) if alive is None else set(alive)
    for b in broker_ids:
        broker_link(b, label=f"Broker {b}" + ("" if b in alive else " (down)"), container=row)


def topic_link(topic: str, *, container: Any = None, label: str | None = None) -> None:
    from dashboard.text import md

    (container or st).page_link(TOPICS, label=label or md(topic), icon=":material/topic:",
                                query_params={"topic": topic})


def action_link(action_id: int, *, container: Any = None, label: str | None = None) -> None:
    """"Action #N in History": opens History at that action (`?action=N`)."""
    (container or st).page_link(HISTORY, label=label or f"Action #{action_id} in History", icon=":material/history:",
                                query_params={"action": str(action_id)})


def selected_row(event, df) -> dict | None:
    """The row a single-row selection of st.dataframe points at (None when nothing is selected)."""
    try:
        rows = event.selection.rows
    except AttributeError:
        return None
    if not rows or rows[0] >= len(df):
        return None
    return df.iloc[rows[0]].to_dict()
