"""What a real Kafka broker of the sandbox is made of: the pinned version, the jars' location (fetched by
``scripts/kafka.sh``), the broker settings tests rely on, the log4j configs, loopback ports and process checks.
core.sandbox.kafka runs the brokers from these.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from core.errors import KeelError

HOST = "127.0.0.1"
DEFAULT_VERSION = "3.9.1"
DEFAULT_HEAP = "384m"
MARKER_NAME = ".fetched"

# Settings the tests (and the demo) rely on; anything else is Kafka's default. `{rf}` / `{min_isr}` are
# filled in with min(3, brokers) / min(2, brokers) so that a one- or two-broker cluster still starts.
BROKER_SETTINGS: dict[str, str] = {
    "zookeeper.session.timeout.ms": "6000",
    "zookeeper.connection.timeout.ms": "30000",
    "replica.lag.time.max.ms": "5000",
    "auto.leader.rebalance.enable": "false",
    "auto.create.topics.enable": "false",
    "delete.topic.enable": "true",
    "offsets.topic.replication.factor": "{rf}",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "{rf}",
    "transaction.state.log.min.isr": "{min_isr}",
    "transaction.state.log.num.partitions": "5",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    # A deleted topic's log folders are renamed "<t>-<p>.<id>-delete" and removed after this delay (default 60 s;
    # the broker-level name of the topic config file.delete.delay.ms).
    "log.segment.delete.delay.ms": "1000",
    # ... and the first of those clean-ups (and of retention, flushes, checkpoints) starts this long after startup
    # (default 30 s): a topic deleted in the first half minute would keep its folders until then.
    "log.initial.task.delay.ms": "1000",
    # Lean JVMs on a small machine: fewer threads, a small log-cleaner buffer (default 128 MiB).
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
    "log.cleaner.dedupe.buffer.size": "8388608",
    "log.cleaner.threads": "1",
    "controlled.shutdown.retry.backoff.ms": "1000",
    "zookeeper.set.acl": "false",
}

LOG4J_PROPERTIES = """\
# Written by core.sandbox.kafka; every broker passes -Dkafka.logs.dir=<its logs folder>.
log4j.rootLogger=INFO, kafkaAppender

log4j.appender.kafkaAppender=org.apache.log4j.RollingFileAppender
log4j.appender.kafkaAppender.File=${kafka.logs.dir}/server.log
log4j.appender.kafkaAppender.MaxFileSize=20MB
log4j.appender.kafkaAppender.MaxBackupIndex=2
log4j.appender.kafkaAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.kafkaAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.appender.stateChangeAppender=org.apache.log4j.RollingFileAppender
log4j.appender.stateChangeAppender.File=${kafka.logs.dir}/state-change.log
log4j.appender.stateChangeAppender.MaxFileSize=20MB
log4j.appender.stateChangeAppender.MaxBackupIndex=2
log4j.appender.stateChangeAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.stateChangeAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.appender.controllerAppender=org.apache.log4j.RollingFileAppender
log4j.appender.controllerAppender.File=${kafka.logs.dir}/controller.log
log4j.appender.controllerAppender.MaxFileSize=20MB
log4j.appender.controllerAppender.MaxBackupIndex=2
log4j.appender.controllerAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.controllerAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.kafka=INFO
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.kafka.log.LogCleaner=INFO
log4j.logger.kafka.controller=TRACE, controllerAppender
log4j.additivity.kafka.controller=false
log4j.logger.state.change.logger=INFO, stateChangeAppender
log4j.additivity.state.change.logger=false
log4j.logger.kafka.authorizer.logger=WARN
"""

# Kafka's command-line tools (TopicCommand, ...) run from the same jars: warnings only, on stderr.
TOOLS_LOG4J_PROPERTIES = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

_FETCH_HINT = "run `scripts/kafka.sh fetch` (or `make kafka-fetch`)"

# Popen objects of brokers started by this Python process, by pid: lets stop() reap its own children.
_CHILDREN: dict[int, subprocess.Popen] = {}


class KafkaRunError(KeelError):
    """A real Kafka broker could not be started, did not come up, or the run folder is not usable."""


class KafkaNotFetchedError(KafkaRunError):
    """The Kafka jars of the requested version are not in the run folder yet."""


# --------------------------------------------------------------------------------------------------------------
# where things are
# --------------------------------------------------------------------------------------------------------------


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def run_dir() -> Path:
    """RUN_DIR (default .run), relative to the repository as the Makefile and scripts/ use it."""
    return (repo_root() / os.environ.get("RUN_DIR", ".run")).resolve()


def kafka_version(version: str | None = None) -> str:
    return version or os.environ.get("KAFKA_VERSION") or DEFAULT_VERSION


def kafka_home(version: str | None = None) -> Path:
    """RUN_DIR/kafka/<version>: where scripts/kafka.sh puts the jars (in lib/)."""
    return run_dir() / "kafka" / kafka_version(version)


def lib_dir(version: str | None = None) -> Path:
    """The complete jar folder of `version`; KafkaNotFetchedError when it is not fetched (completely) yet."""
    home = kafka_home(version)
    lib = home / "lib"
    if not (home / MARKER_NAME).is_file() or not lib.is_dir():
        raise KafkaNotFetchedError(f"Apache Kafka {kafka_version(version)} is not fetched ({lib} is missing or "
                                   f"incomplete)", hint=_FETCH_HINT)
    return lib


def fetch(version: str | None = None, *, quiet: bool = False) -> Path:
    """Run `scripts/kafka.sh fetch` (a no-op when the jars are there); its error, verbatim, on failure."""
    env = {**os.environ, "KAFKA_VERSION": kafka_version(version), "RUN_DIR": str(run_dir())}
    proc = subprocess.run([str(repo_root() / "scripts" / "kafka.sh"), "fetch"], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise KafkaNotFetchedError((proc.stderr or proc.stdout).strip() or f"scripts/kafka.sh fetch failed "
                                   f"(exit {proc.returncode})")
    if not quiet and proc.stdout.strip():
        print(proc.stdout.strip(), file=sys.stderr)
    return lib_dir(version)


def rack_name(index: int) -> str:
    """rack-a, rack-b, ..., rack-z, rack-aa, ..."""
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return f"rack-{letters}"


def default_zk() -> str:
    return f"{HOST}:{os.environ.get('ZK_PORT', '2181')}/keel-kafka"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _port_free(port: int) -> bool:
    """Nothing listens on the port (a bind probe; TIME_WAIT leftovers of a stopped broker do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return "(no log)"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "(log is empty)"


def _pid_alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


