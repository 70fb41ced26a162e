"""What every write action in the browser shares: the operator gate, the confirmation, running the engine's
apply function, and showing its result (or its KeelError) where the action is.

The pattern a page follows:

* compute the draft / selection from the live snapshot and draw it (the preview);
* a confirmation widget whose key contains `fingerprint(draft)`: a different draft (the cluster changed, an
  input changed) gets a fresh, unticked confirmation;
* the apply button calls `run(...)` from its `on_click`, with the draft bound as an argument at render time:
  the write uses exactly the draft the operator looked at (the engine re-validates it against live state);
* `show(...)` draws the stored result on the next run;
* the button also carries a `guard(...)` of the form as drawn: a text field commits its value when it loses
  focus, so typing a new value and clicking at once sends both in one request, and the click would otherwise run
  with the draft drawn *before* the edit (measured: a topic created with 6 partitions while the field said 12).
  `run(..., form=)` refuses such a click, and one whose confirmation is not ticked any more, writing nothing.

Nothing here imports kazoo: writes go through core.zk.* with the connection's session (frame.Connection).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pandas as pd
import streamlit as st

from core.policy import access, gate
from core.policy.config import KeelConfig
from core.errors import KeelError, PermissionDeniedError
from core.model import ClusterSnapshot
from core.audit.store import Store
from core.topics import TOPIC_CONFIGS
from dashboard import frame, identity
from dashboard.text import md, md_text

log = logging.getLogger(__name__)

CONFIG_COLUMNS = ["Key", "Value"]


# --- who may act, and as whom ------------------------------------------------------------------------


def blocked_reason(cfg: KeelConfig, action: str = "change the cluster", needs: access.Role | None = None
                   ) -> str | None:
    """Why the person at the keyboard may not `action` on the selected cluster (core.policy.access.check's message, as
    markdown: it can name a topic), or None. The role needed follows from the action (deleting and rolling back
    are the admin's, core.policy.access.needed_role) unless `needs` says."""
    try:
        _check(cfg, action, needs)
    except PermissionDeniedError as e:
        return md_text(e)
    return _migration_block(cfg)


def _migration_block(cfg: KeelConfig, plain: bool = False) -> str | None:
    """Issue 18: no ZooKeeper write while a ZooKeeper -> KRaft migration is under way (dashboard.migration_banner)."""
    from dashboard import migration_banner

    try:
        conn = frame.connection(frame.selected_cluster(cfg))
        return migration_banner.block_text(conn) if plain else migration_banner.block_reason(conn)
    except Exception:  # no connection yet: the write itself reports that
        return None


def _check(cfg: KeelConfig, action: str, needs: access.Role | None) -> access.Decision:
    cluster = frame.selected_cluster(cfg).name
    return access.check(identity.session_identity(), cfg, cluster, needs or access.needed_role(action), action,
                        exposed=identity.exposed())


def _admit(cfg: KeelConfig, action: str, needs: access.Role | None, who: access.Identity) -> gate.Admission:
    """core.policy.gate at click time: the role against keel.toml as it is *now* (re-read: an instance switched to
    read-only, or a role taken away, refuses a click on a page that was open before) and the cluster's migration
    state read from ZooKeeper (or, for KRaft, its controller quorum from the brokers) now, not the banner's cache. Refusals are recorded by the gate."""
    from core.zk.migration_state import ZkClusterProbe

    cluster = frame.selected_cluster(cfg)
    conn = frame.connection(cluster)
    live, snap = conn.live, conn.snapshot()
    target = gate.Target.named(cluster.name, snap.cluster_id if snap is not None else None)
    common = dict(needs=needs, exposed=identity.exposed(), store=store())
    gate.admit(who, cfg, target, action, **common)  # as drawn: a stale page never grants more than it showed
    if conn.through_brokers:  # the controller quorum, asked through the brokers now (KRaft, or migrated to it)
        from core.kafka.probe import BrokersProbe

        probe = BrokersProbe(conn.write_session())
    else:
        probe = ZkClusterProbe(live.session) if live is not None else None
    return gate.admit(who, frame.config(), target, action, probe=probe, **common)


def show_blocked(reason: str | None) -> None:
    if reason:
        st.caption(f":material/lock: {reason}")


def actor() -> str:
    """Who acts in this session: the signed-in person's email (or subject), else the local user."""
    return identity.session_identity().actor


def store() -> Store:
    """The audit store ($KEEL_STORE, default keel.sqlite in $RUN_DIR, else .run/)."""
    return Store()


def fingerprint(*parts: Any) -> str:
    """A short stable digest of plain data: widget keys that change when the thing confirmed changes."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


# --- running an action and showing what came of it --------------------------------------------------


# --- the form as drawn, checked again at click time ------------------------------------------------------


class StaleFormError(KeelError):
    """The button was pressed for a form that changed, or a confirmation that went, before the click reached the
    server; nothing was written."""


@dataclass(frozen=True)
class FormGuard:
    """The widget values behind a draft when its button was drawn (digests), and the confirmation box it needs."""

    values: tuple[tuple[str, str], ...]
    confirm: str | None = None


def _digest(value: Any) -> str | None:
    """A comparable digest of a widget's value; None for values no typing changes (buttons, toggles, caches)."""
    if isinstance(value, bool):
        return None
    if hasattr(value, "file_id"):  # an UploadedFile
        value = ("file", value.file_id)
    elif not (value is None or isinstance(value, (str, int, float, list, dict))):
        return None
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _form_values(keys: tuple[str, ...], prefixes: tuple[str, ...]) -> dict[str, str]:
    state = st.session_state
    # only widgets that exist now: one first drawn below the button gets its default after this (not an edit)
    names = {k for k in keys if k in state} | {k for k in state.keys() if isinstance(k, str) and k.startswith(prefixes)}
    out = {}
    for k in sorted(names):
        d = _digest(state.get(k))
        if d is not None:
            out[k] = d
    return out


def guard(*keys: str, prefixes: tuple[str, ...] = (), confirm: str | None = None) -> FormGuard:
    """Call right before drawing the button: the values of the widgets `keys` and of every widget whose key starts
    with one of `prefixes` (text, numbers, choices, editors, uploads; not buttons or toggles), and the key of the
    confirmation checkbox the click needs."""
    return FormGuard(tuple(_form_values(tuple(keys), prefixes).items()), confirm)


def check_guard(g: FormGuard) -> None:
    drawn = dict(g.values)
    now = _form_values(tuple(drawn), ())
    changed = sorted(k for k in drawn if now.get(k) != drawn[k])
    if changed:
        raise StaleFormError("The form changed as the button was pressed (an edit had not been applied yet): "
                             "nothing was written.", hint="check the preview, which now shows the edit, confirm "
                                                          "it and press the button again")
    if g.confirm is not None and st.session_state.get(g.confirm) is not True:
        raise StaleFormError("The confirmation for what is on screen is not ticked: nothing was written.",
                             hint="tick it and press the button again")


@dataclass(frozen=True)
class Result:
    ok: bool
    message: str  # markdown: what `run` stored is escaped (engine messages quote topic names)
    scope: str | None = None  # what the result belongs to (a topic, a page): shown only there
    context: str | None = None  # the draft it was about: a failure is shown only while it is still the one shown


def run(slot: str, work: Callable[[], str], *, cfg: KeelConfig, action: str, scope: str | None = None,
        context: str | None = None, needs: access.Role | None = None, form: FormGuard | None = None) -> bool:
    """Call `work()` (an engine write returning a plain-text summary, one line per line) behind the role gate
    (core.policy.access.check: this session's identity on the selected cluster); store the outcome in
    st.session_state[slot]. Every KeelError becomes its message; nothing else escapes either. Messages are stored
    escaped for markdown: they quote names and values read from the cluster.

    The gate (core.policy.gate) is checked against the config as it is *now* (re-read), not only as it was when the
    button was drawn, and against the cluster's live migration state; its refusals are recorded; what `work()`
    records names the actor, source, role and the cluster's id."""
    try:
        if form is not None:
            check_guard(form)
        who = identity.session_identity()
        admission = _admit(cfg, action, needs, who)
        with gate.acting(admission, who):
            message = work()
    except KeelError as e:
        # a stale click is about the form, not one draft: it shows with whatever preview is drawn next
        st.session_state[slot] = Result(False, md_text(e), scope, None if isinstance(e, StaleFormError) else context)
        return False
    except Exception as e:  # an unexpected failure is still a message on the page, never a traceback
        log.exception("%s failed", action)
        st.session_state[slot] = Result(False, md_text(f"Could not {action}: {type(e).__name__}: {e}"), scope,
                                        context)
        return False
    st.session_state[slot] = Result(True, md_text(message), scope, context)
    return True


def show(slot: str, *, scope: str | None = None, context: str | None = None, only_current: bool = False
         ) -> Result | None:
    """Draw the stored result of `slot` if it belongs here (same scope), until the next attempt. A failure about
    a draft that is no longer the one on screen says so (the cluster or the inputs changed since); with
    `only_current`, a result about another context is not shown at all (one about no context still is)."""
    r: Result | None = st.session_state.get(slot)
    if r is None or r.scope != scope or (only_current and r.context is not None and r.context != context):
        return None
    if r.ok:
        st.success(r.message, icon=":material/check_circle:")
        written = re.search(r"action \\?#(\d+)", r.message)  # "action #N in History": a link to that row
        if written:
            st.page_link("views/history.py", label=f"Action #{written.group(1)} in History",
                         icon=":material/history:", query_params={"action": written.group(1)})
    else:
        note = "" if r.context is None or r.context == context else \
            "  \n*(This was about an earlier preview; the one shown now is different.)*"
        st.error(r.message + note, icon=":material/error:")
    return r


def clear(slot: str) -> None:
    st.session_state.pop(slot, None)


def show_error(e: BaseException) -> None:
    """A refusal from the engine, as the page shows it (the KeelError's own message, with its hint), as text."""
    st.error(md_text(e), icon=":material/block:")


def show_keyed_error(e: BaseException) -> None:
    """A refusal about one config key (KeelError.key when the engine names it), the key in bold."""
    key = getattr(e, "key", None)
    st.error((f"**{md(key)}**: " if key else "") + md_text(e), icon=":material/error:")


# --- small shared formatting -----------------------------------------------------------------------------


def ids(xs) -> str:
    return ", ".join(map(str, xs)) if xs else "—"


def bootstrap_servers(snapshot: ClusterSnapshot, limit: int = 3) -> str:
    """host:port of up to `limit` live brokers (their first listener), for the equivalent kafka-*.sh command."""
    out = []
    for b in snapshot.brokers:
        if not b.alive:
            continue
        hostport = None
        if b.endpoints:
            hostport = b.endpoints[0].split("://", 1)[-1]
        elif b.host and b.port not in (None, -1):
            hostport = f"{b.host}:{b.port}"
        if hostport:
            out.append(hostport)
        if len(out) >= limit:
            break
    return ",".join(out) or "BOOTSTRAP"


def page_of(df: pd.DataFrame, key: str, *, sizes=(50, 100, 500), default: int = 1, label: str = "rows"
            ) -> pd.DataFrame:
    """A page of a large table, with a page-size picker and a page number; small tables come back whole."""
    if len(df) <= sizes[default]:
        return df
    c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    size = c2.selectbox("Rows per page", sizes, index=default, key=f"{key}_size")
    pages = max(1, -(-len(df) // size))
    # a number input on purpose (see dashboard.ui): it picks rows to show, bounded, and the caption says which
    page = c3.number_input(f"Page (of {pages})", min_value=1, max_value=pages, value=1, step=1, key=f"{key}_page")
    page = min(int(page), pages)
    start = (page - 1) * size
    shown = df.iloc[start:start + size]
    c1.caption(f"{label.capitalize()} {start + 1:,}–{start + len(shown):,} of {len(df):,}")
    return shown


# --- topic config overrides: an editor checked against Kafka's schema --------------------------------------


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (v is pd.NA)


def exact_match_first(keys) -> list[str]:
    """`keys` in alphabetical order, except that a key comes right before the first key containing it.

    The data editor's key picker (a react-select) keeps the options whose text contains what was typed, in this
    order, and Enter or Tab takes the first one shown: alphabetically, typing `retention.ms` then Enter picked
    `delete.retention.ms` (issue 24). With every key before its superstrings, a key typed in full is always the
    first match."""
    order = sorted(set(keys))
    for _ in range(len(order) ** 2):  # a key moves only in front of a longer one: this settles quickly
        moved = False
        for k in list(order):
            i = order.index(k)
            first = next((j for j, other in enumerate(order[:i]) if k in other), None)
            if first is not None:
                order.insert(first, order.pop(i))
                moved = True
        if not moved:
            return order
    raise AssertionError("exact_match_first did not settle")  # unreachable: containment is a strict order


def config_editor(key: str, current: Mapping[str, str] | None = None, *, disabled: bool = False
                  ) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """An editable key / value table of topic config overrides, starting from `current`.

    Returns (the overrides as edited, [(key, problem)]). A value is checked with Kafka's parser and validator
    for its key (the message names the key); values equal to `current` are not re-checked (the cluster
    accepted them). Keys come from Kafka's topic-config schema."""
    current = dict(current or {})
    names = exact_match_first(set(TOPIC_CONFIGS) | set(current))
    df = pd.DataFrame(sorted(current.items()), columns=CONFIG_COLUMNS, dtype="object")
    edited = st.data_editor(
        df, key=key, num_rows="dynamic", hide_index=True, disabled=disabled, width="stretch",
        column_config={
            "Key": st.column_config.SelectboxColumn("Key", options=names, required=True, width="medium",
                                                    help="A topic-level config (Kafka's schema). Type to filter; Enter or Tab "
                                                         "takes the first match, and a key typed in full is "
                                                         "always first"),
            "Value": st.column_config.TextColumn("Value", width="large",
                                                 help="As kafka-configs --add-config takes it; checked as you type"),
        })
    values: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for i, row in enumerate(edited.to_dict("records")):
        k, v = row.get("Key"), row.get("Value")
        if _blank(k) or not str(k).strip():
            if not _blank(v) and str(v).strip():
                problems.append((f"row {i + 1}", f"row {i + 1} has the value {v!r} but no key"))
            continue
        k = str(k).strip()
        v = "" if _blank(v) else str(v)
        if k in values:
            problems.append((k, f"{k} is set twice; keep one row per key"))
            continue
        values[k] = v
        if current.get(k) == v:
            continue
        d = TOPIC_CONFIGS.get(k)
        if d is None:
            problems.append((k, f"Unknown topic config name: {k}"))
            continue
        try:
            values[k] = d.normalise(v)
        except KeelError as e:
            problems.append((k, str(e)))
    return values, problems


def show_config_problems(problems: list[tuple[str, str]]) -> None:
    for k, message in problems:
        st.error(f"**{md(k)}**: {md_text(message)}", icon=":material/error:")


def config_schema_table(keys) -> pd.DataFrame:
    rows = []
    for k in keys:
        d = TOPIC_CONFIGS.get(k)
        if d is None:
            rows.append({"Key": k, "Type": "?", "Kafka default": "", "Valid values": "", "Description":
                         "not a topic config Kafka 1.1 - 3.9 knows"})
            continue
        rows.append({"Key": k, "Type": d.type, "Kafka default": d.default if d.default != "" else '""',
                     "Valid values": d.valid_values,
                     "Description": d.doc + (f" ({d.deprecated})" if d.deprecated else "")})
    return pd.DataFrame(rows, columns=["Key", "Type", "Kafka default", "Valid values", "Description"])
