"""Issue 12, item 8: ZooKeeper digest credentials stay off command lines.

The secret comes from $KEEL_ZK_DIGEST or --zk-digest-file; --zk-digest still works but warns; children (the
sandbox controller make run starts) get it through the environment, so /proc/<pid>/cmdline never shows it.
Against a real ZooKeeper whose Kafka nodes carry a digest ACL (no world access), so that a command that did
not authenticate fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from core import zkformat as zf
from core.cli import main
from sandbox.seed import EMULATOR, SandboxSpec, seed_cluster
from core.zk.session import ZkSession, ZkSettings
from tests.support.sandbox_helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "keel", "s3cret-Zq81"
DIGEST = f"{USER}:{PASSWORD}"


def protect(connect: str, paths=(zf.BROKER_IDS, zf.TOPICS)) -> None:
    """Only the digest user may read or change `paths` (Kafka's secure ACLs, minus world-read)."""
    host, chroot = connect.split("/", 1)
    client = KazooClient(hosts=connect, auth_data=[("digest", DIGEST)], timeout=10)
    client.start(timeout=30)
    try:
        for path in paths:
            client.set_acls(path, [make_digest_acl(USER, PASSWORD, all=True)])
    finally:
        client.stop()
        client.close()


@pytest.fixture
def protected(zk_connect):
    with ZkSession.open(ZkSettings(connect=zk_connect, digest=DIGEST)) as s:
        seed_cluster(s, SandboxSpec(brokers=3, racks=3, topics=2))
    protect(zk_connect)
    return zk_connect


@pytest.fixture
def digest_file(tmp_path):
    p = tmp_path / "zk-digest"
    p.write_text(DIGEST + "\n")
    p.chmod(0o600)
    return p


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and PASSWORD not in err and PASSWORD not in out
    return code, out, err


def test_a_protected_cluster_refuses_an_anonymous_describe(protected, capsys, monkeypatch):
    monkeypatch.delenv("KEEL_ZK_DIGEST", raising=False)
    code, _, err = run(capsys, "describe", "--zk", protected)
    assert code == 1 and "denied" in err


def test_digest_file_authenticates(protected, digest_file, capsys, monkeypatch):
    monkeypatch.delenv("KEEL_ZK_DIGEST", raising=False)
    code, out, err = run(capsys, "describe", "--zk", protected, "--zk-digest-file", digest_file)
    assert code == 0 and "Topic: __consumer_offsets" in out
    assert "warning" not in err


def test_environment_authenticates(protected, capsys, monkeypatch):
    monkeypatch.setenv("KEEL_ZK_DIGEST", DIGEST)
    code, out, err = run(capsys, "describe", "--zk", protected)
    assert code == 0 and "Topic: __consumer_offsets" in out and "warning" not in err


def test_digest_flag_still_works_but_warns(protected, capsys, monkeypatch):
    monkeypatch.delenv("KEEL_ZK_DIGEST", raising=False)
    code = main(["describe", "--zk", protected, "--zk-digest", DIGEST])
    out, err = capsys.readouterr()
    assert code == 0 and "Topic: __consumer_offsets" in out
    assert "warning: --zk-digest puts the password on the command line" in err
    assert "KEEL_ZK_DIGEST" in err and "--zk-digest-file" in err


@pytest.mark.parametrize("content,needle", [
    (None, "does not exist"),
    ("", "is empty"),
    ("\n\n", "is empty"),
    ("no-colon-here\n", "user:password"),
    (":nouser\n", "user:password"),
    ("dir", "is a directory"),
])
def test_bad_digest_files_are_named_never_echoed(content, needle, tmp_path, protected, capsys):
    p = tmp_path / "digest"
    if content == "dir":
        p.mkdir()
    elif content is not None:
        p.write_text(content)
        p.chmod(0o600)
    code, _, err = run(capsys, "describe", "--zk", protected, "--zk-digest-file", p)
    assert code == 1 and err.startswith("error:") and str(p) in err and needle in err
    assert "no-colon-here" not in err and "nouser" not in err


def test_digest_file_readable_by_others_is_warned_about(protected, digest_file, capsys):
    digest_file.chmod(0o644)
    code, _, err = run(capsys, "describe", "--zk", protected, "--zk-digest-file", digest_file)
    assert code == 0 and f"chmod 600 {digest_file}" in err


def test_digest_flag_and_file_together_is_a_usage_error(digest_file, capsys):
    with pytest.raises(SystemExit) as e:
        main(["describe", "--zk", "127.0.0.1:1", "--zk-digest", DIGEST, "--zk-digest-file", str(digest_file)])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_malformed_environment_digest_is_not_echoed(capsys, monkeypatch):
    monkeypatch.setenv("KEEL_ZK_DIGEST", "secretwithoutcolon")
    code, _, err = run(capsys, "describe", "--zk", "127.0.0.1:1")
    assert code == 1 and "$KEEL_ZK_DIGEST must hold digest credentials as user:password" in err
    assert "secretwithoutcolon" not in err


def test_make_run_passes_no_secret_on_a_command_line():
    script = (ROOT / "scripts" / "run.sh").read_text()
    commands = [line for line in script.splitlines() if ("-m core" in line or "-m sandbox" in line) and not line.lstrip().startswith("#")]
    assert commands and not any("--zk-digest" in line and "--zk-digest-file" not in line for line in commands)


def test_sandbox_controller_child_gets_the_secret_from_the_environment(protected):
    # Started the way scripts/run.sh starts it: `python -m sandbox controller --zk $ZK`, credentials inherited.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KEEL_ZK_DIGEST": DIGEST}
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", "controller", "--zk", protected],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with ZkSession.open(ZkSettings(connect=protected, digest=DIGEST)) as zk:
            # it authenticated: /brokers/ids is readable and writable only with the digest
            wait_until(lambda: zk.exists(EMULATOR) and len(zk.children(zf.BROKER_IDS) or ()) == 3, timeout=30,
                       message="the controller child to register its brokers")
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # what `ps` shows every user
        assert b"sandbox\0controller" in cmdline and PASSWORD.encode() not in cmdline
        assert DIGEST.encode() in Path(f"/proc/{proc.pid}/environ").read_bytes()  # readable by its owner only
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert PASSWORD not in out and PASSWORD not in err
