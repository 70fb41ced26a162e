"""The Fleet page's "Collect now": a collection of every configured cluster into the page's store, with history,
in a background thread (one per Keel process, shared by every session, like dashboard.fleet.job), followed live:
one line per cluster as it finishes, the clusters still being read with their reader's progress.

The engine decides (core.fleet.collect_run): who may start one (an operator on every cluster), one per store at a
time (a lock file naming its holder, also across Keel instances), the audit row. This module draws and keeps the
thread; the click re-reads keel.toml and re-checks the role, whatever the page showed.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import streamlit as st

from core.errors import KeelError
from core.fleet.collect_run import CollectionRun, CollectionRunningError, check_collect, start_collection, summary
from core.fleet.export import CollectResult
from core.policy.config import ConfigError
from dashboard import actions, frame, identity
from dashboard.fleet.job import slot
from dashboard.text import md, md_text

POLL_SECONDS = 0.5
K_COLLECT, K_ERROR = "fleet_collect_id", "fleet_collect_error"
_STAGES = {"brokers": "brokers", "topics": "topic assignments", "states": "partition states"}


class CollectJob:
    """One CollectionRun.read_all in a daemon thread; `done` grows as clusters finish (read by any session)."""

    def __init__(self, run: CollectionRun):
        self.id = uuid.uuid4().hex[:12]
        self.run = run
        self.done: list[CollectResult] = []  # in finishing order
        self.reading: dict[str, tuple[str, int, int]] = {}  # cluster -> the reader's (stage, done, total)
        self.error: BaseException | None = None
        self.started = time.monotonic()
        self.finished: float | None = None
        self.thread = threading.Thread(target=self._run, name=f"keel-fleet-collect-{self.id}", daemon=True)

    @property
    def running(self) -> bool:
        return self.finished is None

    def _finished_one(self, r: CollectResult) -> None:
        self.reading.pop(r.cluster, None)
        self.done = self.done + [r]  # replaced, never mutated: a reader iterates a whole list

    def _read(self, cluster: str, stage: str, done: int, total: int) -> None:
        self.reading[cluster] = (stage, done, total)

    def _run(self) -> None:
        try:
            self.run.read_all(progress=self._finished_one, read_progress=self._read)
        except BaseException as e:  # shown on the page; the run finished its audit row and released the store
            self.error = e
        finally:
            self.reading = {}
            self.finished = time.monotonic()


def current() -> CollectJob | None:
    return slot("collect")["job"]


def _when(job: CollectJob) -> str:
    return job.run.started_at.replace("T", " ").rstrip("Z") + " UTC"


def start(store: str) -> CollectJob:
    """Start a collection of every configured cluster into `store`; KeelError when it may not start (the role:
    recorded as refused; another collection running: who and since when; keel.toml unreadable)."""
    cfg = frame.config()  # as it is now: a role taken away since the page was drawn refuses the click
    if isinstance(cfg, ConfigError):
        raise cfg
    held = slot("collect")
    with held["lock"]:
        job = held["job"]
        if job is not None and job.running:
            raise CollectionRunningError(
                f"a collection started by {job.run.actor} at {_when(job)} is running; one collection runs at a time",
                {"actor": job.run.actor, "started_at": job.run.started_at},
                hint="follow it here: its lines appear as each cluster is read")
        run = start_collection(identity.session_identity(), cfg, store, audit=actions.store(),
                               exposed=identity.exposed())
        job = CollectJob(run)
        try:
            job.thread.start()
        except BaseException as e:
            run.abandon(f"the collection thread did not start: {e}")
            raise
        held["job"] = job
        return job


def clicked(store_key: str) -> None:
    """on_click of Collect now: start it (or keep why not for the panel)."""
    st.session_state.pop(K_ERROR, None)
    text = str(st.session_state.get(store_key) or "").strip()
    if not text:
        st.session_state[K_ERROR] = "Enter a fleet store to collect into."
        return
    try:
        job = start(str(Path(text).expanduser()))
    except KeelError as e:
        st.session_state[K_ERROR] = md_text(e)
    else:
        st.session_state[K_COLLECT] = job.id


def blocked() -> str | None:
    """Why the person at the keyboard may not collect now (drawn beside a disabled button), or None."""
    cfg = frame.config()
    if isinstance(cfg, ConfigError):
        return md_text(cfg)
    try:
        check_collect(identity.session_identity(), cfg, exposed=identity.exposed())
    except KeelError as e:  # RoleDeniedError, or no cluster to collect
        return md_text(e)
    return None


def button(where, store_key: str, *, disabled: bool) -> None:
    """The Collect now button (in `where`, a column); disabled while a collection or the fleet job runs, or for a
    person who may not."""
    job = current()
    why = blocked()
    cfg = frame.config()
    n = 0 if isinstance(cfg, ConfigError) else len(cfg.clusters)
    where.button("Collect now", key="fleet_collect", icon=":material/download:", width="content",
                 on_click=clicked, args=(store_key,),
                 disabled=disabled or why is not None or (job is not None and job.running),
                 help=f"Read the {n} clusters of keel.toml now into the fleet store (replacing each cluster's latest "
                      "capture) and keep the capture in its history. Needs the operator role on every cluster.")
    if why is not None:
        st.caption(f":material/lock: {why}")


def panel() -> None:
    """Under the buttons: a refusal, the running collection followed live, or the last one's outcome."""
    if err := st.session_state.pop(K_ERROR, None):
        st.error(err, icon=":material/block:")
    job = current()
    if job is None:
        return
    if job.running:
        if st.session_state.get(K_COLLECT) != job.id:
            st.caption(f"A collection started by {md(job.run.actor)} at {_when(job)} is running; one runs at a time.")
        _follow(job)
    elif st.session_state.get(K_COLLECT) == job.id:
        _lines(job)
        _outcome(job)
    else:
        st.caption(f"Last collection: by {md(job.run.actor)} at {_when(job)}: {summary(job.done)}.")


@st.fragment(run_every=POLL_SECONDS)
def _follow(job: CollectJob) -> None:
    if not job.running:
        st.rerun()  # the whole page: the outcome, and the history with the new captures
    done, total = len(job.done), len(job.run.clusters)
    st.progress(done / total if total else 1.0,
                text=f"Collecting into `{job.run.store}`: **{done}/{total}** clusters "
                     f"({time.monotonic() - job.started:,.0f} s)")
    _lines(job)
    reading, finished = dict(job.reading), {r.cluster for r in job.done}
    # the clusters still out, and where each is: the slow one is the one an SRE wants to name
    still = [f"{md(c)}: reading {_STAGES.get(reading[c][0], reading[c][0])} {reading[c][1]:,}/{reading[c][2]:,}"
             if c in reading else f"{md(c)}: connecting" for c in job.run.clusters if c not in finished]
    if still:
        st.caption("Still reading: " + " · ".join(still))


def _lines(job: CollectJob) -> None:
    """One line per finished cluster, in the order they finished."""
    for r in job.done:
        if r.ok:
            st.markdown(f":green[:material/check_circle:] {md_text(r.line())}")
        else:
            st.markdown(f":red[:material/error:] {md_text(r.line())}")


def _outcome(job: CollectJob) -> None:
    e = job.error
    if e is not None:
        st.error(f"The collection stopped: {md_text(e) if isinstance(e, KeelError) else md(type(e).__name__)}"
                 + ("" if isinstance(e, KeelError) else f": {md(e)}"), icon=":material/error:")
        return
    failed = [r for r in job.done if not r.ok]
    text = summary(job.done) + f", in {job.finished - job.started:,.1f} s; the history below includes them."
    if failed:
        st.warning(md_text(text), icon=":material/warning:")
    else:
        st.success(md_text(text), icon=":material/check_circle:")
