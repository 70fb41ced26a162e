"""The History page's data, pure (pandas, no streamlit): audit rows as a table, as CSV, payloads as JSON."""

from __future__ import annotations

import json
from typing import Any, Sequence

import pandas as pd

from core.audit.store import Action

COLUMNS = ["ID", "Time", "Actor", "Source", "Role", "Cluster", "Kind", "Target", "Status", "Summary", "Result",
           "Completed", "Link"]
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def when(ts: str | None) -> str:
    return "" if not ts else ts.replace("T", " ").rstrip("Z")


def link_text(a: Action) -> str:
    """How an action is linked to others: "rollback of #3", "rolled back by #7"."""
    parts = [f"rollback of #{a.rollback_of}"] if a.rollback_of else []
    parts += [f"rolled back by #{i}" for i in a.rolled_back_by]
    return ", ".join(parts)


def table(rows: Sequence[Action]) -> pd.DataFrame:
    return pd.DataFrame([{
        "ID": a.id, "Time": when(a.at), "Actor": a.actor, "Source": a.source or "", "Role": a.role or "",
        "Cluster": a.cluster or "—", "Kind": a.kind, "Target": a.target, "Summary": a.summary, "Status": a.status,
        # an applied action's result repeats its summary: only say something when there is something else to say
        "Result": "" if a.status == "applied" and a.result == a.summary else (a.result or ""),
        "Completed": when(a.completed_at), "Link": link_text(a),
    } for a in rows], columns=COLUMNS)


def to_csv(df: pd.DataFrame) -> str:
    """The table as CSV. A cell a spreadsheet would run as a formula (=, +, -, @: a topic name, a proxy header) is
    prefixed with a quote."""
    return df.map(lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA) else v).to_csv(index=False)


def readable(value: Any) -> Any:
    """JSON recorded as text (znode data, a reassignment plan, its rollback) as JSON, at any depth."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return readable(json.loads(value))
        except ValueError:
            return value
    if isinstance(value, list):
        return [readable(v) for v in value]
    if isinstance(value, dict):
        return {k: readable(v) for k, v in value.items()}
    return value
