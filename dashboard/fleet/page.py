"""Fleet heatmaps: run the Spark fleet job over a fleet store, then rank every cluster by imbalance and draw the
brokers and topics behind each score.

The job runs in a background thread (dashboard.fleet.job: one at a time per Keel process, shared by every
session): the page follows it with a progress bar while it runs, a click or a reload does not stop it, and Cancel
stops its Spark jobs (the output directory is only replaced when a run completes). Results are read from the
output directory with pyarrow (core.fleet.outputs): looking at them never starts Spark. This page imports no
pyspark: core.fleet.jobs is imported by the job thread when a run starts.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from core.policy.config import ConfigError
from core.errors import KeelError
from core.fleet.errors import (FleetInputError, FleetOutputError, FleetSchemaError, JavaMissingError, SparkError,
                               SparkMasterUnreachableError)
from core.fleet.generate import FleetSpec, generate_fleet
from core.fleet.outputs import read_broker_metrics, read_cluster_scores, read_manifest, read_topic_broker
from core.fleet.schema import check_store, hidden
from core.audit.store import run_dir
from core.fleet.spark import InvalidMasterError, check_java
from dashboard import frame, ui
from dashboard.fleet import charts as fleet_charts
from dashboard.fleet import collect_panel
from dashboard.fleet.history import show_history
from dashboard.text import md, md_text
from dashboard.fleet.job import Cancelled, FleetJob, cancel_job, current_job, start_job

DEFAULT_STORE = str(run_dir() / "fleet" / "store")  # under $RUN_DIR like all runtime state (else .run/)
DEFAULT_OUTPUT = str(run_dir() / "fleet" / "output")
DEFAULT_MASTER = "local[*]"
# a demo fleet that runs in seconds: 12 clusters, 24,000 partitions, 3-48 brokers, every skew of the generator
DEMO_SPEC = FleetSpec(clusters=12, seed=7, partitions_total=24_000, max_partitions=6_000, min_brokers=3,
                      max_brokers=48)
POLL_SECONDS = 0.5
RANKING_COLUMNS = ["rank", "cluster", "imbalance_score", "brokers", "partitions", "replica_cv", "leader_cv",
                   "under_replicated", "offline", "rack_violations", "brokers_over_leader_threshold"]
SCORE_TEXT = ("**imbalance_score** = 100 × (0.3·replica CV + 0.3·leader CV + 0.2·offline share + "
              "0.1·rack-violation share + 0.1·under-replicated share), each term capped at 1: 0 is evenly spread "
              "and healthy, 100 the worst. A CV is the standard deviation over the mean of the per-broker replica "
              "(or leader) counts over the alive brokers, empty ones included; a share is the fraction of the "
              "cluster's partitions in that state. **Rank 1 needs attention most.**")

K_STORE, K_OUTPUT, K_MASTER = "fleet_store", "fleet_output", "fleet_master"
K_JOB, K_CLUSTER, K_TABLE, K_WINDOW = "fleet_job_id", "fleet_cluster", "fleet_table", "fleet_window"


# --- the job (dashboard.fleet.job: one per process, in a background thread) -------------------------------


def run_clicked() -> None:
    """on_click of Run: start a job with the inputs as they are now (unless one is running) and follow it here."""
    value = {k: st.session_state[k + "_input"].strip() for k in (K_STORE, K_OUTPUT, K_MASTER)}
    job = start_job(value[K_STORE], value[K_OUTPUT], value[K_MASTER] or DEFAULT_MASTER)
    if job is not None:
        st.session_state[K_JOB] = job.id


def follow(job: FleetJob) -> None:
    """The job's progress, redrawn every POLL_SECONDS by a fragment until it ends, then the whole page (results and
    buttons drawn afresh). Never a loop that holds the script run: the session's live ticker (dashboard.frame)
    reruns fragments, and a rerun ends a script run in progress, which then would never draw the outcome."""
    st.button("Cancel", key="fleet_cancel", icon=":material/cancel:", on_click=cancel_job, args=(job.id,),
              help="Stops the Spark jobs at their next progress update; the output directory is left as it was.")
    _progress(job)


@st.fragment(run_every=POLL_SECONDS)
def _progress(job: FleetJob) -> None:
    if not job.running:
        st.rerun()  # the whole page: the outcome and the results
    p = job.progress
    elapsed = time.monotonic() - job.started
    if p is None:
        st.progress(0.0, text="Checking the input…")
        detail = ""
    else:
        st.progress(p.fraction, text=f"Step {p.step_index}/{p.steps}: **{p.step}**")
        if p.step == "start Spark":
            detail = f"Starting Spark on `{job.master}` (a first run starts a JVM, which can take half a minute)"
        elif p.tasks_total:
            detail = (f"{p.tasks_done:,}/{p.tasks_total:,} tasks" + (f" ({p.active_tasks} running)"
                                                                     if p.active_tasks else "")
                      + f" · stages {p.stages_done}/{p.stages_total}")
        else:
            detail = "planning the Spark jobs…" if p.step_index > 2 else ""
    if job.cancel.is_set():
        detail = "Cancelling… " + detail
    st.caption(" · ".join(x for x in (detail, f"{elapsed:,.0f} s elapsed", f"`{job.store}` → `{job.output}`") if x))


def show_outcome(job: FleetJob) -> None:
    """The last run's result, for the session that started it."""
    e = job.error
    if e is None and job.result is not None:
        r = job.result
        rows = ", ".join(f"{name} {n:,} rows" for name, n in r.rows.items())
        st.success(f"Ranked {r.clusters:,} clusters in {r.seconds:,.1f} s on `{r.master}`: {rows}.",
                   icon=":material/check_circle:")
        return
    untouched = f" Nothing was written to `{job.output}`."
    if isinstance(e, Cancelled):
        st.warning("The job was cancelled." + untouched, icon=":material/cancel:")
    elif isinstance(e, JavaMissingError):
        st.error(f"**Java is missing.** {e}." + untouched, icon=":material/coffee:")
    elif isinstance(e, SparkMasterUnreachableError):
        st.error(f"**Spark master unreachable.** {e}." + untouched, icon=":material/cloud_off:")
    elif isinstance(e, InvalidMasterError):
        st.error(f"**Invalid Spark master URL.** {e}." + untouched, icon=":material/link_off:")
    elif isinstance(e, FleetSchemaError):
        st.error(f"**Wrong schema in the fleet store.** {e}." + untouched, icon=":material/schema:")
    elif isinstance(e, FleetInputError):
        st.error(f"**Fleet store unusable.** {e}." + untouched, icon=":material/folder_off:")
    elif isinstance(e, FleetOutputError):
        st.error(f"**Output directory refused.** {e}." + untouched, icon=":material/folder_off:")
    elif isinstance(e, SparkError):
        st.error(f"**Spark failed.** {e}." + untouched, icon=":material/error:")
    elif isinstance(e, KeelError):
        st.error(f"{e}." + untouched, icon=":material/error:")
    else:
        st.error(f"**The fleet job failed:** {type(e).__name__}: {e}." + untouched, icon=":material/error:")


# --- reading the outputs (cached per completed run) ---------------------------------------------------------


def output_stamp(out: Path) -> tuple[dict, str]:
    """(manifest, a stamp that changes with every completed run); FleetInputError when there is no output."""
    manifest = read_manifest(out)
    mtime = (out / "_keel_fleet.json").stat().st_mtime_ns
    return manifest, f"{manifest.get('finished_at')}:{mtime}"


@st.cache_data(show_spinner=False, max_entries=4)
def load_scores(out: str, stamp: str) -> pd.DataFrame:
    return read_cluster_scores(out)


@st.cache_data(show_spinner=False, max_entries=4)
def load_broker_metrics(out: str, stamp: str) -> pd.DataFrame:
    return read_broker_metrics(out)


@st.cache_data(show_spinner=False, max_entries=16)
def load_topic_broker(out: str, stamp: str, cluster: str) -> pd.DataFrame:
    return read_topic_broker(out, cluster)


# --- the cluster picked for the detail heatmaps --------------------------------------------------------------


def pick_from_table(names: list[str]) -> None:
    sel = st.session_state.get(K_TABLE)
    rows = sel["selection"]["rows"] if sel else []
    if rows and rows[0] < len(names):
        st.session_state[K_CLUSTER] = names[rows[0]]


def keep(key: str) -> None:
    """on_change of an input: remember its value beyond this page's widget state."""
    st.session_state[key] = st.session_state[key + "_input"]


def open_in_overview(name: str) -> None:
    st.session_state[frame.CLUSTER_KEY] = name  # the router's cluster picker (set before it is drawn)


def generate_demo(where, store_path: Path) -> None:
    """Write DEMO_SPEC's fleet into `store_path`, its progress in `where`; the outcome is shown by the page."""
    bar = where.progress(0.0, text="Generating a demo fleet…")

    def generated(i: int, n: int, c) -> None:
        bar.progress(i / n, text=f"Generated {c.name} ({i}/{n}): {c.brokers} brokers, {c.partitions:,} partitions")

    try:
        res = generate_fleet(DEMO_SPEC, store_path, progress=generated)
    except (KeelError, OSError) as e:
        st.session_state["fleet_generate_error"] = f"Could not generate the demo fleet: {e}"
    else:
        st.session_state["fleet_generated"] = (f"Generated {len(res.clusters)} clusters ({res.partitions:,} "
                                               f"partitions) in `{store_path}`. Run the job to rank them.")


# --- the page ----------------------------------------------------------------------------------------------

st.title("Fleet heatmaps", anchor=False)
st.caption("Rank every cluster of a fleet store by imbalance with Spark, then find the brokers and topics behind "
           "each score.")

# the inputs' values live under keys of their own: widget state is dropped while another page is shown
for key, env, default in ((K_STORE, "KEEL_FLEET_STORE", DEFAULT_STORE), (K_OUTPUT, "KEEL_FLEET_OUTPUT", DEFAULT_OUTPUT),
                          (K_MASTER, "KEEL_FLEET_MASTER", DEFAULT_MASTER)):
    if key not in st.session_state:
        st.session_state[key] = os.environ.get(env, "").strip() or default
    if key + "_input" not in st.session_state:
        st.session_state[key + "_input"] = st.session_state[key]


job = current_job()
running = job is not None and job.running
collecting = (c := collect_panel.current()) is not None and c.running  # the store changes under a job: not both

with st.container(border=True):
    c1, c2, c3 = st.columns([5, 5, 3])
    c1.text_input("Fleet store", key=K_STORE + "_input", on_change=keep, args=(K_STORE,), disabled=running,
                  help="Directory written by `python -m core fleet collect | export | generate` "
                       "(default: $KEEL_FLEET_STORE, else .run/fleet/store)")
    c2.text_input("Output directory", key=K_OUTPUT + "_input", on_change=keep, args=(K_OUTPUT,), disabled=running,
                  help="Where the job writes broker_metrics, topic_broker and cluster_scores (default: "
                       "$KEEL_FLEET_OUTPUT, else .run/fleet/output). An earlier output there is replaced only when "
                       "the new run completes.")
    c3.text_input("Spark master", key=K_MASTER + "_input", on_change=keep, args=(K_MASTER,), disabled=running,
                  help="local[*] (every core of this machine), local[N], or spark://HOST:PORT of a standalone "
                       "cluster; input and output must then be on a filesystem every worker sees")
    store_text = st.session_state[K_STORE + "_input"].strip()
    out_text = st.session_state[K_OUTPUT + "_input"].strip()
    store_path = Path(store_text).expanduser() if store_text else None
    out_path = Path(out_text).expanduser() if out_text else None

    # what can stop a run before it starts: said up front, Run disabled
    blockers = []
    if importlib.util.find_spec("pyspark") is None:
        blockers.append("**PySpark is not installed** in Keel's environment: `pip install pyspark` (or `make deps`).")
    try:
        check_java()
    except JavaMissingError as e:
        blockers.append(f"**Java is missing.** {e}.")
    for b in blockers:
        st.error(b, icon=":material/block:")
    if not store_text or not out_text:
        st.warning("Enter a fleet store and an output directory.", icon=":material/edit:")

    # one row of buttons as wide as their labels, wrapping in a narrow window (columns cut them at 900 px)
    b1 = bc = b2 = st.container(horizontal=True, vertical_alignment="center", gap="small")
    b1.button("Run job", key="fleet_run", type="primary", icon=":material/play_arrow:", on_click=run_clicked,
              disabled=running or collecting or bool(blockers) or not store_text or not out_text, width="content",
              help="Compute broker metrics, per-topic skew and cluster scores of the store with Spark")

    # the store: what is in it (file names only: the job reads every Parquet footer before it starts). One slot
    # for its state: a demo fleet being generated replaces the "no fleet store yet" banner there, then the store's
    # summary does (the banner stayed beside "Generated 12/12" while the page had both).
    collect_panel.button(bc, K_STORE + "_input", disabled=running or not store_text)
    status = st.empty()
    if st.session_state.pop("fleet_generate_now", False) and store_path is not None and not running:
        generate_demo(status.container(), store_path)
    store_missing = False
    if store_path is not None:
        try:
            files = check_store(store_path, check_schemas=False)
            status.caption(f"Store `{store_path.resolve()}`: {len(files.clusters):,} clusters, "
                           f"{files.file_count:,} Parquet files.")
        except FleetInputError as e:
            # hidden names only (a collection's lock file): nothing a reader sees yet
            store_missing = not store_path.exists() or (store_path.is_dir() and all(
                hidden(p.name) for p in store_path.iterdir()))
            if collecting:
                status.caption(f"Store `{store_path}`: being collected, cluster by cluster.")
            elif store_missing:
                status.info(f"No fleet store at `{store_path}` yet. Collect your clusters with **Collect now** "
                            "(every cluster of keel.toml) or `python -m core fleet collect --config keel.toml --out "
                            "DIR`, or generate a demo fleet.",
                            icon=":material/info:")
            else:
                status.warning(str(e), icon=":material/folder_off:")
    if store_missing and not running and not collecting:
        b2.button("Generate a demo fleet", key="fleet_generate", icon=":material/auto_awesome:", width="content",
                  on_click=lambda: st.session_state.update(fleet_generate_now=True),
                  help=f"{DEMO_SPEC.clusters} synthetic clusters ({DEMO_SPEC.partitions_total:,} partitions, "
                       f"{DEMO_SPEC.min_brokers}–{DEMO_SPEC.max_brokers} brokers each) with the skews real "
                       "fleets have, written into the store directory")
    if msg := st.session_state.pop("fleet_generated", None):
        st.success(msg, icon=":material/check_circle:")
    elif err := st.session_state.pop("fleet_generate_error", None):
        st.error(err, icon=":material/error:")

    if running:
        if st.session_state.get(K_JOB) != job.id:
            st.caption(f"A fleet job started at {job.started_at} (from another session) is running; one job runs "
                       "at a time.")
        follow(job)
    elif job is not None and st.session_state.get(K_JOB) == job.id:
        show_outcome(job)
    collect_panel.panel()

show_history(store_path)

# --- results -------------------------------------------------------------------------------------------

if out_path is None:
    st.stop()
try:
    manifest, stamp = output_stamp(out_path)
except FleetInputError:
    st.info(f"No results in `{out_path}` yet: run the job.", icon=":material/query_stats:")
    st.stop()
out_key = str(out_path.resolve())
try:
    scores = load_scores(out_key, stamp)
    metrics = load_broker_metrics(out_key, stamp)
except (KeelError, OSError, ValueError) as e:  # a damaged output must not take the page down
    st.error(f"Cannot read the fleet output `{out_path}`: {e}", icon=":material/error:")
    st.stop()

st.subheader("Clusters ranked by imbalance", anchor=False)
source = manifest.get("input", "?")
other_input = store_path is not None and store_path.exists() and str(store_path.resolve()) != source
st.caption(f"Computed {str(manifest.get('finished_at', '?')).replace('T', ' ').rstrip('Z')} UTC from `{source}` "
           f"on `{manifest.get('master', '?')}` in {float(manifest.get('seconds') or 0):,.1f} s; leader threshold "
           f"{manifest.get('threshold_percent', '?')} %."
           + (" :orange[This output was computed from another store than the one above.]" if other_input else ""))
st.markdown(SCORE_TEXT)
if scores.empty:
    st.info("The output holds no cluster.", icon=":material/info:")
    st.stop()

names = scores["cluster"].tolist()
ranking = scores[RANKING_COLUMNS]
st.dataframe(
    ranking, hide_index=True, key=K_TABLE, on_select=lambda: pick_from_table(names), selection_mode="single-row",
    height=min(38 + 35 * 15, 38 + 35 * len(ranking)),  # up to 15 rows without a scroll bar
    # words, not the output's column names (replica_cv), each column as wide as its header: the table fits 1600 px
    # (its last column was cut at the right); the help says which output column each is
    column_config={
        "rank": st.column_config.NumberColumn("Rank", format="%d", width=50),
        "cluster": st.column_config.TextColumn("Cluster", width=120),
        "imbalance_score": st.column_config.ProgressColumn("Imbalance score", min_value=0.0, max_value=100.0,
                                                           format="%.1f", width=125,
                                                           help="imbalance_score: 0 even and healthy … 100 worst"),
        "brokers": st.column_config.NumberColumn("Brokers", width=65),
        "partitions": st.column_config.NumberColumn("Partitions", format="%d", width=80),
        "replica_cv": st.column_config.NumberColumn("Replica CV", format="%.3f", width=85,
                                                    help="replica_cv: replicas per alive broker, stddev / mean"),
        "leader_cv": st.column_config.NumberColumn("Leader CV", format="%.3f", width=80,
                                                   help="leader_cv: leaders per alive broker, stddev / mean"),
        "under_replicated": st.column_config.NumberColumn(
            "Under-replicated", width=115, help="under_replicated: partitions whose ISR is smaller than the replicas"),
        "offline": st.column_config.NumberColumn("Offline", width=65, help="offline: partitions without a live leader"),
        "rack_violations": st.column_config.NumberColumn(
            "Rack violations", width=105, help="rack_violations: partitions on fewer racks than min(RF, racks)"),
        "brokers_over_leader_threshold": st.column_config.NumberColumn(
            "Over threshold", width=105,
            help="brokers_over_leader_threshold: brokers whose preferred-leader imbalance exceeds "
                 "leader.imbalance.per.broker.percentage"),
    })
st.caption("Select a row to draw that cluster's brokers and topics below.")

# clusters x brokers
st.subheader("Clusters × brokers", anchor=False)
start = 0
if len(names) > fleet_charts.MAX_ROWS:
    windows = list(range(0, len(names), fleet_charts.MAX_ROWS))
    start = st.selectbox("Ranks shown", windows, key=K_WINDOW,
                         format_func=lambda s: f"{s + 1}–{min(s + fleet_charts.MAX_ROWS, len(names))}")
grid = fleet_charts.cluster_broker_grid(scores, metrics, start=start)
st.plotly_chart(fleet_charts.cluster_broker_heatmap(grid), key="fleet_heatmap", config={"displayModeBar": False},
                width=fleet_charts.fit_width(grid, labels_px=180, cell_px=40) or "stretch")
st.caption("replica_dev = the broker's replicas / the mean over the cluster's alive brokers − 1: 0 (white) is "
           "the mean, −1 (blue) an empty broker, +1 (red) twice the mean. Brokers are numbered 0…n−1 in id "
           "order; hover for the id." + (f" Showing {grid.note}." if grid.note else ""))

# one cluster
st.subheader("One cluster", anchor=False)
if st.session_state.get(K_CLUSTER) not in names:
    st.session_state[K_CLUSTER] = names[0]
by_name = scores.set_index("cluster")
left, right = st.columns([3, 2], vertical_alignment="bottom")
chosen = left.selectbox("Cluster", names, key=K_CLUSTER,
                        format_func=lambda n: f"#{by_name.at[n, 'rank']} {n} — score "
                                              f"{by_name.at[n, 'imbalance_score']:.1f}")
cfg = frame.config()
if not isinstance(cfg, ConfigError) and chosen in cfg.clusters:
    if right.button(f"Open {md(chosen)} in Overview", key="fleet_open_overview", icon=":material/open_in_new:",
                    on_click=open_in_overview, args=(chosen,),
                    help="A configured cluster: open its live view (Overview, Topics, Brokers…)"):
        st.switch_page("views/overview.py", query_params={"cluster": chosen})
else:
    # a name from the fleet store, as text (its escapes would show in a code span); brackets that link nothing are text
    right.caption(f"{md(chosen)} is not in the Keel config: add it under [clusters.{md(chosen)}] to open it in the "
                  "other pages.")

row = by_name.loc[chosen]
m = ui.metric_row()  # wraps in a narrow window instead of cutting values short
ui.metric(m, "Rank", f"{int(row['rank'])} of {len(names):,}")
ui.metric(m, "imbalance_score", f"{row['imbalance_score']:.1f}")
ui.metric(m, "Brokers alive", f"{int(row['alive_brokers'])} / {int(row['brokers'])}")
ui.metric(m, "Partitions", f"{int(row['partitions']):,}", help=f"{int(row['topics']):,} topics")
ui.metric(m, "Under-replicated", f"{int(row['under_replicated']):,}", help=f"{int(row['offline']):,} offline")
ui.metric(m, "Rack violations", f"{int(row['rack_violations']):,}", help=f"{int(row['racks'])} racks")

cluster_metrics = metrics[metrics["cluster"] == chosen]
try:
    tb = load_topic_broker(out_key, stamp, chosen)
except (KeelError, OSError, ValueError) as e:
    st.error(md_text(f"Cannot read topic_broker of {chosen}: {e}"), icon=":material/error:")
    tb = None
if tb is not None:
    tgrid = fleet_charts.topic_broker_grid(tb, cluster_metrics)
    if tgrid.empty:
        st.info(f"{md(chosen)} has no topics.", icon=":material/topic:")
    else:
        st.plotly_chart(fleet_charts.topic_broker_heatmap(tgrid, chosen), key="fleet_topic_heatmap",
                        config={"displayModeBar": False},
                        width=fleet_charts.fit_width(tgrid, labels_px=260, cell_px=80) or "stretch")
        st.caption("Each cell: the broker's replicas of the topic minus an even spread of the topic over the alive "
                   "brokers (floor or ceil of replicas / alive brokers; a dead broker should hold none). Topics are "
                   "ordered by replicas above an even spread." + (f" Showing {tgrid.note}." if tgrid.note else ""))
rgrid = fleet_charts.rack_broker_grid(cluster_metrics)
if not rgrid.empty:
    st.plotly_chart(fleet_charts.rack_broker_heatmap(rgrid, chosen), key="fleet_rack_heatmap",
                    config={"displayModeBar": False}, width=fleet_charts.fit_width(rgrid) or "stretch")
    st.caption("One row per rack (its broker count in brackets), its brokers in id order."
               + (f" Showing {rgrid.note}." if rgrid.note else ""))
