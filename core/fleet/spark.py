"""Spark for the fleet jobs: a checked Java, a reachable master, one reused SparkSession, and task progress.

`get_session(master)` returns the process's SparkSession, creating it (or replacing one bound to a different
master). Before starting a JVM it checks for Java 17+, and before talking to a `spark://` master it checks that a
master answers on its port; after connecting to a cluster it waits (bounded) for an executor. Each failure is a
typed error with a message a person can act on, instead of a py4j stack trace or a job waiting forever for
resources.

`run_tracked(spark, steps, progress)` runs Spark actions in a worker thread while the *calling* thread polls the
status tracker and calls `progress(JobProgress)`: the callback always runs in the caller's thread (a Streamlit
page can update its widgets from it).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from core.errors import ValidationError
from core.fleet.errors import FleetJobError, JavaMissingError, SparkError, SparkMasterUnreachableError

JAVA_HINT = "install a Java 17+ runtime: `apt-get install default-jre-headless` (or `make deps`)"
MIN_JAVA = 17
DEFAULT_EXECUTOR_TIMEOUT = 30.0
MASTER_CONNECT_TIMEOUT = 5.0

_LOCK = threading.RLock()
_java_checked: str | None = None


class InvalidMasterError(ValidationError):
    """A master URL Spark would not accept."""


# --- Java ---------------------------------------------------------------------------------------


def find_java(env: Mapping[str, str] | None = None) -> str | None:
    """The java binary Spark's launcher would use: $JAVA_HOME/bin/java, else `java` on PATH."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME", "").strip()
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
    return shutil.which("java", path=env.get("PATH", os.defpath))


def check_java(env: Mapping[str, str] | None = None) -> str:
    """The Java version string; raises JavaMissingError when there is no java or it is older than 17."""
    global _java_checked
    if env is None and _java_checked:
        return _java_checked
    env_map = os.environ if env is None else env
    java = find_java(env_map)
    if java is None:
        where = (f"JAVA_HOME={env_map.get('JAVA_HOME')} has no bin/java" if env_map.get("JAVA_HOME", "").strip()
                 else "no `java` on PATH and JAVA_HOME is not set")
        raise JavaMissingError(f"Spark needs Java, and none was found ({where})", hint=JAVA_HINT)
    try:
        run = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise JavaMissingError(f"Spark needs Java, and {java} did not run: {e}", hint=JAVA_HINT) from None
    m = re.search(r'version "([^"]+)"', run.stderr + run.stdout)
    version = m.group(1) if m else "unknown"
    major_text = version.split(".")[1] if version.startswith("1.") else version.split(".")[0]
    major = int(re.sub(r"\D.*", "", major_text) or 0)
    if major < MIN_JAVA:
        raise JavaMissingError(f"Spark 4 needs Java {MIN_JAVA} or newer; {java} is Java {version}", hint=JAVA_HINT)
    if env is None:
        _java_checked = version
    return version


# --- master URLs --------------------------------------------------------------------------------

_LOCAL = re.compile(r"^local(\[(\*|\d+)(,\d+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\d+,\s*\d+,\s*\d+\]$")
_SPARK = re.compile(r"^spark://([^/\s]+)$")


def is_local(master: str) -> bool:
    return bool(_LOCAL.match(master))


def local_cores(master: str) -> int:
    """Worker threads of a local master: local = 1, local[N] = N, local[*] = the CPU count."""
    m = _LOCAL.match(master)
    if not m or m.group(2) is None:
        return 1
    if m.group(2) == "*":
        return os.cpu_count() or 1
    return int(m.group(2))


def master_endpoints(master: str) -> list[tuple[str, int]]:
    """(host, port) of every master a `spark://h1:p1,h2:p2` URL names; [] for other masters."""
    m = _SPARK.match(master)
    if not m:
        return []
    out = []
    for part in m.group(1).split(","):
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidMasterError(f"invalid Spark master URL {master!r}: expected spark://HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    return out


def check_master_url(master: str) -> None:
    if is_local(master) or _LOCAL_CLUSTER.match(master) or master == "yarn" or master.startswith("k8s://"):
        return
    if master.startswith("spark://"):
        master_endpoints(master)
        return
    raise InvalidMasterError(f"invalid Spark master URL {master!r}",
                             hint="use local[*], local[N], spark://HOST:PORT, yarn or k8s://...")


def check_master_reachable(master: str, timeout: float = MASTER_CONNECT_TIMEOUT) -> None:
    """For spark:// URLs: at least one of the named masters accepts a TCP connection within `timeout`."""
    errors = []
    for host, port in master_endpoints(master):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as e:
            errors.append(f"{host}:{port}: {e.strerror or e}")
    if errors:
        raise SparkMasterUnreachableError(
            f"cannot reach the Spark master at {master} ({'; '.join(errors)})",
            hint="is the master running and the URL right? Start one with "
                 "`spark-class org.apache.spark.deploy.master.Master`, or use --master local[*]")


# --- the session ----------------------------------------------------------------------------------


def spark_bin(name: str) -> str:
    """Path of a script in pyspark's bin directory (spark-submit, spark-class)."""
    import pyspark

    return str(Path(pyspark.__file__).resolve().parent / "bin" / name)


def under_spark_submit() -> bool:
    """True when this Python process is the driver of a `spark-submit` (the JVM already runs)."""
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


def _active_context():
    from pyspark import SparkContext

    return SparkContext._active_spark_context


def _executor_count(spark) -> int:
    """Executors registered, the driver excluded."""
    infos = spark.sparkContext.statusTracker().getExecutorInfos()
    return max(0, len(infos) - 1)


def wait_for_executors(spark, master: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _executor_count(spark) < 1:
        if time.monotonic() >= deadline:
            raise SparkMasterUnreachableError(
                f"the Spark master at {master} granted no executor within {timeout:g} s",
                hint="check that workers are registered with free cores and memory (the master's web UI lists "
                     "them), and that they can connect back to this driver")
        time.sleep(0.2)


def _log4j_properties() -> Path:
    return Path(__file__).with_name("log4j2.properties")


def session_conf(master: str | None, *, app_name: str = "keel-fleet", ui: bool = False,
                 shuffle_partitions: int | None = None, driver_memory: str | None = None,
                 conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Spark settings `get_session` applies (exposed for tests and for spark-submit users)."""
    out = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
        # list a store's cluster=NAME directories on the driver instead of with a Spark job
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "4096",
    }
    props = _log4j_properties()
    if props.is_file():
        out["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={props.as_uri()}"
    if master is not None and is_local(master):
        out["spark.driver.host"] = "127.0.0.1"
        out["spark.driver.bindAddress"] = "127.0.0.1"
        out["spark.sql.shuffle.partitions"] = str(shuffle_partitions or max(4, 4 * local_cores(master)))
    elif shuffle_partitions:
        out["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    if master is not None:
        hosts = [h for h, _ in master_endpoints(master)] if master.startswith("spark://") else []
        if hosts and all(h in ("127.0.0.1", "localhost") for h in hosts):
            out["spark.driver.host"] = "127.0.0.1"
            out["spark.driver.bindAddress"] = "127.0.0.1"
    if driver_memory:
        out["spark.driver.memory"] = driver_memory
    out.update(conf or {})
    return out


def get_session(master: str | None = "local[*]", *, app_name: str = "keel-fleet", ui: bool = False,
                shuffle_partitions: int | None = None, driver_memory: str | None = None,
                executor_timeout: float = DEFAULT_EXECUTOR_TIMEOUT, conf: Mapping[str, str] | None = None):
    """The process's SparkSession on `master` (None: the master spark-submit was given, else local[*]).

    An existing session on the same master is reused (runtime SQL settings updated); one on another master is
    stopped first. Raises JavaMissingError, InvalidMasterError, SparkMasterUnreachableError or SparkError.
    """
    with _LOCK:
        from pyspark.sql import SparkSession

        if master is None and not under_spark_submit():
            master = "local[*]"
        if master is None:  # spark-submit's: connect to its JVM first, then its conf has spark.master
            from pyspark import SparkConf, SparkContext

            SparkContext._ensure_initialized()
            master = SparkConf().get("spark.master", "local[*]")
        check_master_url(master)

        active = _active_context()
        if active is not None and active.master == master:
            spark = SparkSession.builder.getOrCreate()
            if shuffle_partitions:
                spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
            return spark

        # check everything before touching a session that works (another master's) or starting a JVM
        if not under_spark_submit() and active is None:
            check_java()
        check_master_reachable(master)
        if active is not None:
            stop_session()
        builder = SparkSession.builder.master(master)
        for key, value in session_conf(master, app_name=app_name, ui=ui, shuffle_partitions=shuffle_partitions,
                                       driver_memory=driver_memory, conf=conf).items():
            builder = builder.config(key, value)
        try:
            spark = builder.getOrCreate()
        except Exception as e:  # py4j / launcher failures: keep the first line, it is the useful one
            raise SparkError(f"could not start Spark on {master}: {_first_line(e)}") from None
        spark.sparkContext.setLogLevel("ERROR")
        if not is_local(master):
            try:
                wait_for_executors(spark, master, executor_timeout)
            except SparkError:
                stop_session()
                raise
        return spark


def session_running() -> bool:
    """True when this process already has a SparkContext."""
    return "pyspark" in sys.modules and _active_context() is not None


def stop_session() -> None:
    """Stop the process's SparkSession, if any (the next get_session starts a new one)."""
    with _LOCK:
        if "pyspark" not in sys.modules or _active_context() is None:
            return
        from pyspark.sql import SparkSession

        SparkSession.builder.getOrCreate().stop()


def _first_line(e: BaseException) -> str:
    """The useful line of a Spark / py4j error (py4j's own first line only names the Java method called)."""
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            text = str(java.toString())
        except Exception:
            text = str(e)
    else:
        text = str(e)
    text = text.strip() or type(e).__name__
    for line in text.splitlines():
        line = line.strip().lstrip(": ")
        if line and not line.startswith("An error occurred while calling"):
            return line[:500]
    return text[:500]


# --- progress -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobProgress:
    """Where a fleet run is. Steps are coarse (check input, start Spark, one per output, commit); tasks are the
    Spark tasks of the current step's jobs, as the status tracker reports them (the total grows as stages start)."""

    step: str
    step_index: int  # 1-based
    steps: int
    tasks_done: int = 0
    tasks_total: int = 0
    active_tasks: int = 0
    stages_done: int = 0
    stages_total: int = 0
    elapsed: float = 0.0
    done: bool = False
    step_fraction: float = 0.0  # 0..1 within the step; never decreases (task totals grow as stages are planned)

    @property
    def fraction(self) -> float:
        """0..1 over the whole run, never decreasing (for a progress bar)."""
        if self.done:
            return 1.0
        return min(1.0, (self.step_index - 1 + min(self.step_fraction, 0.99)) / self.steps)

    def line(self) -> str:
        text = f"[{self.step_index}/{self.steps}] {self.step}"
        if self.tasks_total:
            text += f": {self.tasks_done}/{self.tasks_total} tasks"
            if self.active_tasks:
                text += f" ({self.active_tasks} running)"
        return text + f"  {self.elapsed:.1f} s"


ProgressFn = Callable[[JobProgress], None]


def _group_status(sc, group: str) -> tuple[int, int, int, int, int]:
    st = sc.statusTracker()
    done = total = active = s_done = s_total = 0
    for job_id in st.getJobIdsForGroup(group):
        job = st.getJobInfo(job_id)
        if job is None:
            continue
        for stage_id in job.stageIds:
            info = st.getStageInfo(stage_id)
            if info is None:
                continue
            s_total += 1
            total += info.numTasks
            done += info.numCompletedTasks
            active += info.numActiveTasks
            if info.numTasks and info.numCompletedTasks >= info.numTasks:
                s_done += 1
    return done, total, active, s_done, s_total


def run_tracked(spark, step: str, step_index: int, steps: int, action: Callable[[], object],
                progress: ProgressFn | None, started: float, interval: float = 0.25) -> object:
    """Run `action` (Spark actions) in a worker thread under a fresh job group; poll and report from this thread.

    If the callback raises (or this thread is interrupted) the step's Spark jobs are cancelled.
    Spark failures become FleetJobError.
    """
    sc = spark.sparkContext
    group = f"keel-fleet-{step}-{uuid.uuid4().hex[:8]}"
    box: dict[str, object] = {}

    def work() -> None:
        try:
            sc.setJobGroup(group, f"keel fleet: {step}", interruptOnCancel=True)
            box["result"] = action()
        except BaseException as e:  # handed to the calling thread
            box["error"] = e
        finally:
            try:
                sc.clearJobGroup()
            except Exception:
                pass

    worker = threading.Thread(target=work, name=f"keel-fleet-{step}", daemon=True)
    last: tuple | None = None
    best = 0.0
    worker.start()
    try:
        while True:
            worker.join(interval)
            finished = not worker.is_alive()
            if progress is not None:
                status = _group_status(sc, group)
                if status != last or finished:
                    last = status
                    done, total, active, s_done, s_total = status
                    if finished and "error" not in box:
                        # the action returned: every task is done, even when the status tracker's listener bus
                        # lags behind or a stage was skipped (its shuffle output reused) and never "completes"
                        done, active, s_done = total, 0, s_total
                    if total:
                        best = max(best, done / total)
                    progress(JobProgress(step, step_index, steps, done, total, active, s_done, s_total,
                                         time.monotonic() - started, step_fraction=best))
            if finished:
                break
    except BaseException:
        sc.cancelJobGroup(group)
        worker.join(30)
        raise
    if "error" in box:
        e = box["error"]
        if isinstance(e, SparkError):
            raise e
        raise FleetJobError(f"Spark job {step!r} failed: {_first_line(e)}") from e
    return box.get("result")


def report(progress: ProgressFn | None, step: str, step_index: int, steps: int, started: float,
           done: bool = False) -> None:
    if progress is not None:
        progress(JobProgress(step, step_index, steps, elapsed=time.monotonic() - started, done=done))
