"""The Fleet page's job: one run of core.fleet.jobs.run_jobs at a time per Keel process, in a background thread.

Every browser session shares it (st.cache_resource): a click or a reload does not stop it, any session can follow
its progress, and Cancel raises from the progress callback, which makes run_jobs cancel its Spark jobs and leave the
output directory as it was. pyspark is imported by the job thread only, when a run starts.
"""

from __future__ import annotations

import threading
import time
import uuid

import streamlit as st

from core.fleet.errors import SparkError


class Cancelled(Exception):
    """Raised from the progress callback: run_jobs cancels the running Spark jobs and leaves the output as it was."""


class FleetJob:
    """One run of core.fleet.jobs.run_jobs in a daemon thread; its progress is read by whichever page follows it."""

    def __init__(self, store: str, output: str, master: str):
        self.id = uuid.uuid4().hex[:12]
        self.store, self.output, self.master = store, output, master
        self.progress = None  # core.fleet.spark.JobProgress, replaced (never mutated) by the job thread
        self.result = None  # core.fleet.jobs.RunResult
        self.error: BaseException | None = None
        self.started = time.monotonic()
        self.started_at = time.strftime("%H:%M:%S")
        self.finished: float | None = None
        self.cancel = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"keel-fleet-job-{self.id}", daemon=True)

    @property
    def running(self) -> bool:
        return self.finished is None

    def start(self) -> None:
        self.thread.start()

    def _on_progress(self, p) -> None:
        self.progress = p
        if self.cancel.is_set():
            raise Cancelled("cancelled from the Fleet page")

    def _run(self) -> None:
        try:
            if self.cancel.is_set():
                raise Cancelled("cancelled from the Fleet page")
            try:
                from core.fleet.jobs import run_jobs  # the only place this page pulls pyspark in
            except ImportError as e:
                raise SparkError(f"PySpark cannot be imported ({e})",
                                 hint="install it into Keel's environment: `pip install pyspark` (or `make deps`)"
                                 ) from None
            self.result = run_jobs(self.store, self.output, master=self.master, progress=self._on_progress)
        except BaseException as e:  # shown on the page
            self.error = e
        finally:
            self.finished = time.monotonic()


@st.cache_resource(show_spinner=False)
def slot(kind: str) -> dict:
    """The process's slot for one kind of background run ("spark": the fleet job, "collect": a collection):
    {"lock", "job"} (the running or the last finished one), shared by every session."""
    return {"lock": threading.Lock(), "job": None}


def _slot() -> dict:
    return slot("spark")


def current_job() -> FleetJob | None:
    return _slot()["job"]


def start_job(store: str, output: str, master: str) -> FleetJob | None:
    """Start a job, unless one is running (then None)."""
    slot = _slot()
    with slot["lock"]:
        job = slot["job"]
        if job is not None and job.running:
            return None
        job = FleetJob(store, output, master)
        slot["job"] = job
        job.start()
        return job


def cancel_job(job_id: str) -> None:
    job = current_job()
    if job is not None and job.id == job_id:
        job.cancel.set()
