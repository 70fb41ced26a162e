"""One REAL ZooKeeper-mode Kafka cluster (3 brokers, racks rack-a..c, two log.dirs each) for the tests here.

The cluster lives in a chroot of the session's ZooKeeper (tests/conftest.py `zk_server`) and is started once, on
first use, by the package-scoped fixture `kafka`. Missing jars are fetched first (scripts/kafka.sh fetch); a failed
fetch or a cluster that does not come up is an ERROR of every test here, never a skip. The only way to skip these
tests is KEEL_SKIP_KAFKA=1, and then the reason is printed in the summary.

Kafka version: KEEL_KAFKA_VERSION (else KAFKA_VERSION, else 3.9.1) picks the brokers' version; `make
test-kafka-matrix` runs this folder once per version. A test that needs a newer Kafka says so with
``@pytest.mark.kafka_min("2.8", "topic ids")`` (or ``realkafka.needs_kafka``) and is skipped on older versions with
that reason printed; nothing else is skipped for the version.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from sandbox.processes import kafka as kafka_runner
from core.zk.session import ZkSession
from tests.kafka.realkafka import RealKafka, compat_admin, kafka_version, kraft_versions

HERE = Path(__file__).resolve().parent
SKIP = os.environ.get("KEEL_SKIP_KAFKA", "").strip() == "1"
SKIP_REASON = "KEEL_SKIP_KAFKA=1: the real-Kafka tests (tests/kafka) are skipped"
VERSION = kafka_version()  # KEEL_KAFKA_VERSION, KAFKA_VERSION or 3.9.1 (tests.kafka.realkafka)


# Modules ("file.py") and tests ("file.py::test") that need a newer Kafka, named here for files that carry no
# marker themselves (a module may instead say `pytestmark = needs_kafka(...)`). A test that only checks something
# newer along the way (topic ids, 2.8+) runs on every version and checks that part as the version behaves.
NEEDS: dict[str, tuple[str, str]] = {
    "test_refusals.py": ("3.9", "compares Keel's refusals with Kafka 3.9's own messages and tools"),
}


def _too_old(item: pytest.Item) -> str | None:
    marks = [(m.args[0], m.args[1] if len(m.args) > 1 else m.kwargs.get("why", ""))
             for m in item.iter_markers("kafka_min")]
    name = Path(str(item.fspath)).name
    marks += [NEEDS[k] for k in (name, f"{name}::{getattr(item, 'originalname', item.name)}") if k in NEEDS]
    for minimum, why in marks:
        if not kafka_runner.version_at_least(VERSION, minimum):
            return f"needs Kafka >= {minimum}" + (f" ({why})" if why else "") + f": this run is Kafka {VERSION}"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # kafka-python 3.0 loads its protocol schemas with importlib.resources' deprecated read_text
    quiet = pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(quiet)
            if "kraft" in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.kraft)
            if SKIP:
                item.add_marker(skip)
            elif (old := _too_old(item)) is not None:
                item.add_marker(pytest.mark.skip(reason=old))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if SKIP:
        terminalreporter.write_line(SKIP_REASON, yellow=True, bold=True)
    elif VERSION != kafka_runner.DEFAULT_VERSION:
        terminalreporter.write_line(f"tests/kafka ran against Apache Kafka {VERSION} (KEEL_KAFKA_VERSION)", bold=True)


@pytest.fixture(scope="package")
def kafka(zk_server: str, tmp_path_factory: pytest.TempPathFactory):
    """The running cluster with an Admin client and a ZooKeeper session on its chroot (see RealKafka).

    Package scope: started once for tests/kafka and stopped when the last test here is done, so that three idle
    JVMs do not sit through the rest of the suite."""
    from kafka.admin import KafkaAdminClient

    try:
        kafka_runner.lib_dir(VERSION)
    except kafka_runner.KafkaNotFetchedError:
        print(f"\nApache Kafka {VERSION} is not fetched: running scripts/kafka.sh fetch", file=sys.stderr)
        kafka_runner.fetch(VERSION)  # raises with mvn's own error: the tests then ERROR, they do not skip

    base = tmp_path_factory.mktemp("kafka")
    chroot = f"/kafka-{uuid.uuid4().hex[:8]}"
    connect = f"{zk_server}{chroot}"
    cluster = kafka_runner.KafkaCluster.create(base / "cluster", connect, brokers=3, detach=False, version=VERSION)
    atexit.register(cluster.stop)  # belt and braces if the session dies before teardown
    started = time.monotonic()
    cluster.start(timeout=120)
    print(f"\nreal Kafka {cluster.version}: 3 brokers up in {time.monotonic() - started:.1f} s "
          f"({cluster.bootstrap_servers}, {connect}, {cluster.dir})", file=sys.stderr)
    admin = compat_admin(KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="keel-tests",
                                          request_timeout_ms=20000), cluster.version)
    zk = ZkSession.open(connect)
    real = RealKafka(cluster=cluster, zk_connect=connect, admin=admin, zk=zk, store=base / "keel.sqlite")
    try:
        real.ensure_healthy()  # every broker in the Admin API's metadata too
        yield real
    finally:
        try:
            admin.close()
        finally:
            zk.close()
            cluster.stop()


@pytest.fixture(scope="module", autouse=True)
def _healthy_module(request: pytest.FixtureRequest):
    """Every test module starts on a whole cluster with a fresh Admin client, whatever the module before did
    (restarts, kills): one module's leftovers must not fail the next."""
    if "kafka" in request.fixturenames:
        request.getfixturevalue("kafka").ensure_healthy()
    yield


@pytest.fixture
def healthy(kafka: RealKafka) -> RealKafka:
    """The cluster with every broker up and every ISR complete (a test before may have killed a broker)."""
    kafka.ensure_healthy()
    return kafka


# the last release with ZooKeeper (in KRaft mode) and the newest Kafka 4 Maven Central serves; KEEL_KRAFT_VERSIONS
# ("4.4.0", space separated) replaces them (make test-kafka-matrix's Kafka 4 line)
KRAFT_VERSIONS = kraft_versions()


@pytest.fixture(scope="package", params=KRAFT_VERSIONS)
def kraft(request, tmp_path_factory):
    """A KRaft cluster (no ZooKeeper) of each version in KRAFT_VERSIONS: three combined broker + controller nodes
    with racks and two log dirs each (sandbox.processes.kraft), started once for tests/kafka."""
    from sandbox.processes import kafka_setup
    from sandbox.processes.kraft import KraftCluster

    version = request.param
    try:
        kafka_setup.lib_dir(version)
    except kafka_setup.KafkaNotFetchedError:
        kafka_setup.fetch(version)
    cluster = KraftCluster.create(tmp_path_factory.mktemp(f"kraft-{version}"), nodes=3, version=version,
                                  detach=False)
    started = time.monotonic()
    cluster.start(timeout=120)
    print(f"\nKRaft {version}: 3 nodes up in {time.monotonic() - started:.1f} s ({cluster.bootstrap_servers})",
          file=sys.stderr)
    try:
        yield cluster
    finally:
        cluster.stop()
