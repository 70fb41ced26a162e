"""sandbox.processes.zkserver against real ZooKeeper processes, and the session fixtures built on it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.processes import zkserver
from sandbox.processes.common import pid_alive

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, env: dict | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sandbox.processes.zkserver", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )



@pytest.fixture
def zk_dir(tmp_path: Path):
    """A server directory that is guaranteed to have no ZooKeeper left running after the test."""
    d = tmp_path / "zk"
    yield d
    zkserver.stop(d)


def test_free_port_is_bindable():
    port = zkserver.free_port()
    assert 1024 < port < 65536
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_start_stop_lifecycle(zk_dir: Path):
    port = zkserver.free_port()
    zk = zkserver.start(port, zk_dir)
    assert zk.started
    assert zk.connect == f"127.0.0.1:{port}"
    assert zkserver.is_running(zk_dir) and zk.is_running()
    assert zkserver.ruok(port)
    assert zkserver.four_letter_word(port, "ruok") == "imok"
    assert "Mode: standalone" in zkserver.four_letter_word(port, "srvr")

    cfg = (zk_dir / "zoo.cfg").read_text()
    for line in (
        "clientPortAddress=127.0.0.1",
        f"clientPort={port}",
        "tickTime=2000",
        "maxClientCnxns=0",
        "forceSync=no",
        "admin.enableServer=false",
        "4lw.commands.whitelist=ruok,srvr,mntr",
        f"dataDir={zk_dir.resolve() / 'data'}",
    ):
        assert line in cfg.splitlines()
    assert int((zk_dir / "zk.pid").read_text()) == zk.pid
    assert (zk_dir / "zk.log").stat().st_size > 0

    st = zkserver.status(zk_dir)
    assert st["running"] and st["healthy"] and st["pid"] == zk.pid and st["port"] == port
    assert st["connect"] == zk.connect

    assert zk.stop() is True
    assert not pid_alive(zk.pid)
    assert not zkserver.is_running(zk_dir)
    assert not (zk_dir / "zk.pid").exists()
    assert zkserver.four_letter_word(port, "ruok") is None
    assert zkserver.status(zk_dir)["running"] is False
    # idempotent
    assert zkserver.stop(zk_dir) is False
    assert zkserver.stop(zk_dir / "never-existed") is False


def test_restart_keeps_data(zk_dir: Path):
    from kazoo.client import KazooClient

    port = zkserver.free_port()
    with zkserver.start(port, zk_dir) as zk:
        c = KazooClient(hosts=zk.connect)
        c.start(timeout=30)
        c.create("/persisted", b"yes")
        c.stop()
        c.close()
    assert not zkserver.is_running(zk_dir)
    with zkserver.start(port, zk_dir) as zk:
        c = KazooClient(hosts=zk.connect)
        c.start(timeout=30)
        assert c.get("/persisted")[0] == b"yes"
        c.stop()
        c.close()
    assert not zkserver.is_running(zk_dir)


def test_start_again_same_dir_same_port_reuses_the_server(zk_dir: Path):
    port = zkserver.free_port()
    first = zkserver.start(port, zk_dir)
    second = zkserver.start(port, zk_dir)
    assert second.started is False and second.pid == first.pid
    with second:  # did not start it: leaves it running
        pass
    assert zkserver.is_running(zk_dir)
    first.stop()
    assert not pid_alive(first.pid)


def test_same_dir_other_port_is_refused(zk_dir: Path):
    port = zkserver.free_port()
    with zkserver.start(port, zk_dir):
        with pytest.raises(zkserver.ZkServerError, match=f"already running on port {port}"):
            zkserver.start(zkserver.free_port(), zk_dir)
        assert zkserver.ruok(port)


def test_port_served_by_another_zookeeper_is_refused(zk_server: str, zk_dir: Path):
    port = int(zk_server.rsplit(":", 1)[1])
    if not zkserver.ruok(port):
        pytest.skip("KEEL_TEST_ZK does not answer four-letter words")
    with pytest.raises(zkserver.ZkPortInUse, match="another ZooKeeper"):
        zkserver.start(port, zk_dir)
    assert not zkserver.is_running(zk_dir)
    assert zkserver.ruok(port)  # the other server is untouched


def test_port_taken_by_something_else_is_refused(zk_dir: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(zkserver.ZkPortInUse, match="in use by another process"):
            zkserver.start(port, zk_dir)
    assert not zkserver.is_running(zk_dir)


def test_failed_start_reports_log_tail_and_leaves_nothing(zk_dir: Path):
    port = zkserver.free_port()
    with pytest.raises(zkserver.ZkServerError) as info:
        zkserver.start(port, zk_dir, extra_config={"tickTime": "not-a-number"})
    msg = str(info.value)
    assert "exited with status" in msg and "zk.log" in msg
    assert "not-a-number" in msg or "NumberFormatException" in msg or "ConfigException" in msg
    assert not zkserver.is_running(zk_dir)
    assert not (zk_dir / "zk.pid").exists()
    assert zkserver.four_letter_word(port, "ruok") is None


def test_stale_pid_file_never_kills_a_stranger(zk_dir: Path):
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        zk_dir.mkdir(parents=True)
        (zk_dir / "zk.pid").write_text(f"{stranger.pid}\n")
        assert not zkserver.is_running(zk_dir)
        assert zkserver.stop(zk_dir) is False
        assert stranger.poll() is None
        assert not (zk_dir / "zk.pid").exists()
        # and start() replaces the stale pid file
        (zk_dir / "zk.pid").write_text(f"{stranger.pid}\n")
        zk = zkserver.start(zkserver.free_port(), zk_dir)
        assert zk.started and zk.pid != stranger.pid
        zk.stop()
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_sigkill_fallback_when_sigterm_is_not_enough(zk_dir: Path):
    zk = zkserver.start(zkserver.free_port(), zk_dir)
    os.kill(zk.pid, signal.SIGSTOP)  # a stopped JVM cannot act on SIGTERM
    t0 = time.monotonic()
    assert zkserver.stop(zk_dir, timeout=1) is True
    assert time.monotonic() - t0 < 15
    assert not pid_alive(zk.pid)


def test_cli_start_status_stop(zk_dir: Path):
    port = zkserver.free_port()
    r = _cli("start", "--port", str(port), "--dir", str(zk_dir))
    assert r.returncode == 0, r.stderr
    assert f"started on 127.0.0.1:{port}" in r.stdout
    pid = int((zk_dir / "zk.pid").read_text())
    # the CLI has exited; the server lives on, detached in its own session
    assert pid_alive(pid) and zkserver.ruok(port)
    assert os.getsid(pid) == pid != os.getsid(0)

    r = _cli("start", "--port", str(port), "--dir", str(zk_dir))
    assert r.returncode == 0 and "already running" in r.stdout

    r = _cli("start", "--port", str(zkserver.free_port()), "--dir", str(zk_dir))
    assert r.returncode != 0 and "already running on port" in r.stderr

    r = _cli("status", "--dir", str(zk_dir))
    assert r.returncode == 0 and f"running on 127.0.0.1:{port}" in r.stdout

    r = _cli("stop", "--dir", str(zk_dir))
    assert r.returncode == 0 and "stopped" in r.stdout
    assert not pid_alive(pid)

    r = _cli("stop", "--dir", str(zk_dir))
    assert r.returncode == 0 and "not running" in r.stdout
    r = _cli("status", "--dir", str(zk_dir))
    assert r.returncode == 3 and "not running" in r.stdout


def test_cli_missing_jar_or_java_points_to_make_deps(zk_dir: Path, tmp_path: Path):
    r = _cli("start", "--port", str(zkserver.free_port()), "--dir", str(zk_dir),
             env={"KEEL_ZK_JAR": str(tmp_path / "nope.jar")})
    assert r.returncode != 0
    assert "nope.jar" in r.stderr and "make deps" in r.stderr

    r = _cli("start", "--port", str(zkserver.free_port()), "--dir", str(zk_dir),
             env={"PATH": str(tmp_path), "JAVA_HOME": "", "KEEL_JAVA": ""})
    assert r.returncode != 0
    assert "java" in r.stderr.lower() and "make deps" in r.stderr
    assert not zkserver.is_running(zk_dir)


# ---- the session fixtures ----------------------------------------------------------------------------------


def test_zk_server_fixture_is_a_live_server(zk_server: str):
    host, port = zk_server.rsplit(":", 1)
    assert host and "/" not in port
    assert zkserver.four_letter_word(int(port), "ruok") == "imok"


def test_zk_connect_is_a_fresh_existing_chroot(zk_server: str, zk_connect: str, kazoo_client, request):
    assert zk_connect.startswith(zk_server + "/t-")
    chroot = zk_connect[len(zk_server):]
    assert "test_zk_connect_is_a_fresh_existing_chroot" in chroot
    assert len(chroot.rsplit("-", 1)[1]) == 8
    # the client is rooted at the chroot: an empty tree of our own
    assert kazoo_client.connected
    assert kazoo_client.get_children("/") == []
    kazoo_client.create("/brokers/ids/1", b"{}", makepath=True)

    from kazoo.client import KazooClient

    root = KazooClient(hosts=zk_server)
    root.start(timeout=30)
    try:
        assert root.exists(chroot + "/brokers/ids/1")
    finally:
        root.stop()
        root.close()


@pytest.mark.parametrize("case", ["a b/c", "x[1]"])
def test_zk_connect_sanitises_odd_test_names(zk_connect: str, kazoo_client, case):
    chroot = zk_connect.split("/", 1)[1]
    assert all(ch.isalnum() or ch in "_.-" for ch in chroot)
    assert kazoo_client.exists("/") is not None
