"""ACLs of the znodes Keel creates, and the bulk reader's digest and TLS paths, against real ZooKeepers.

A "protected" chroot is one as Kafka leaves it with `zookeeper.set.acl=true` (ZkData.defaultAcls): every node
carries the creator's digest identity with ALL plus world READ, except the sensitive roots (/config/brokers,
/config/users, /delegation_token) which get no world READ, and /consumers which stays open. The expected
ACLs here are spelled out with kazoo's own helpers, not with Keel's code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from contextlib import contextmanager
from typing import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, make_digest_acl

from core import zkformat as zf
from core.cli import main
from core.errors import ZooKeeperAuthError
from sandbox.processes import zkserver
from core.audit.store import Store
from core.zk.session import TlsOptions, ZkSession, ZkSettings
from core.zk.wire import WireReader, WireSettings
from tests.support.kafka_tree import write_cluster, write_topic

USER, PASSWORD = "kafka", "s3cret:with-colon"
DIGEST = f"{USER}:{PASSWORD}"
OWNER = make_digest_acl(USER, PASSWORD, all=True)
WORLD_READ = ACL(1, Id("world", "anyone"))
SENSITIVE = ("/config/users", "/config/brokers", "/delegation_token")


def acl_set(acls) -> set[tuple[int, str, str]]:
    return {(a.perms, a.id.scheme, a.id.id) for a in acls}


def kafka_secure_acl(path: str) -> list[ACL]:
    """ZkData.defaultAcls(isSecure=true, path) for a digest creator (path relative to the chroot)."""
    if path == "/consumers":
        return list(OPEN_ACL_UNSAFE)
    return [OWNER] if path.startswith(SENSITIVE) else [OWNER, WORLD_READ]


def walk(client: KazooClient, path: str = "/") -> list[str]:
    out, level = [], [path]
    while level:
        out += level
        level = [f"{p.rstrip('/')}/{c}" for p in level for c in client.get_children(p)]
    return out


@contextmanager
def client(connect: str, *, digest: str | None = None, tls: TlsOptions | None = None) -> Iterator[KazooClient]:
    kw = {}
    if tls is not None:
        kw = dict(use_ssl=True, ca=tls.ca, certfile=tls.cert, keyfile=tls.key)
    c = KazooClient(hosts=connect, timeout=10, auth_data=[("digest", digest)] if digest else None, **kw)
    c.start(timeout=30)
    try:
        yield c
    finally:
        c.stop()
        c.close()


# --- the rule itself (core.zk.acl), no server ------------------------------------------------------------


def test_digest_identity_matches_zookeepers():
    from kazoo.security import make_digest_acl_credential

    from core.zk import acl

    assert acl.digest_id(DIGEST) == make_digest_acl_credential(USER, PASSWORD) == OWNER.id.id


@pytest.mark.parametrize("path,world_read", [
    ("/brokers/topics/t", True), ("/config/topics/t", True), ("/config/changes/config_change_", True),
    ("/admin/reassign_partitions", True), ("/config/brokers", False), ("/config/brokers/1", False),
    ("/config/users/alice", False), ("/delegation_token/tokens/x", False),
])
def test_kafkas_secure_default_per_path(path, world_read):
    from core.zk import acl

    owner = acl.creator(DIGEST)
    assert acl.acl_for(path, owner=owner, protected=True) == ((owner, acl.WORLD_READ) if world_read else (owner,))
    assert acl.acl_for(path, owner=owner, protected=False) == acl.OPEN
    assert acl.acl_for(path, owner=None, protected=True) == acl.OPEN
    assert acl.acl_for("/consumers", owner=owner, protected=True) == acl.OPEN


def test_acl_policy_reads_each_ancestor_once_and_treats_an_unreadable_acl_as_protected():
    from core.zk import acl

    reads = []
    tree = {"/": list(acl.OPEN), "/brokers": [acl.Acl(acl.ALL, "digest", "x"), acl.WORLD_READ], "/hidden": None}

    def read(path):
        reads.append(path)
        if path not in tree:
            raise acl.Missing(path)
        return tree[path]

    policy = acl.AclPolicy(acl.creator(DIGEST), read)
    secure = acl.secure_acls("/brokers/topics/t", acl.creator(DIGEST))
    assert policy.for_path("/brokers/topics/t") == secure  # /brokers/topics missing: /brokers decides
    assert policy.for_path("/brokers/topics/u") == secure
    assert policy.for_path("/other") == acl.OPEN and policy.for_path("/hidden/x") == secure
    assert reads == ["/brokers/topics", "/brokers", "/", "/hidden"]
    batch = policy.for_batch(["/new", "/new/a", "/brokers/ids", "/brokers/ids/1"])
    assert batch == [acl.OPEN, acl.OPEN, secure, secure] and reads[-1] == "/hidden"  # nothing more read
    assert acl.AclPolicy(None, read).for_batch(["/x"]) is None


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "keel.sqlite")


def seed(connect: str, *, digest: str | None) -> None:
    """Three brokers and topics orders (for a reassignment), ledger (a non-preferred leader), old (to delete)."""
    with ZkSession.open(ZkSettings(connect=connect, digest=digest)) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2], 1: [2, 3], 2: [3, 1]}, config={"retention.ms": "86400000"})
        write_topic(s, "ledger", {0: [1, 2], 1: [2, 3]}, states={0: (2, [1, 2]), 1: (2, [2, 3])})
        write_topic(s, "old", {0: [3, 1]})


@pytest.fixture
def protected(zk_connect):
    """A chroot as a Kafka with zookeeper.set.acl=true and digest credentials leaves it."""
    with client(zk_connect, digest=DIGEST) as c:
        c.set_acls("/", [OWNER, WORLD_READ])
        seed(zk_connect, digest=DIGEST)
        for path in walk(c):  # whatever Keel did while seeding, the tree is now exactly Kafka's
            c.set_acls(path, [OWNER, WORLD_READ] if path == "/" else kafka_secure_acl(path))
        yield zk_connect


def run_keel_writes(connect: str, store: Store, tmp_path, monkeypatch, capsys) -> None:
    """Keel's write commands, as an operator runs them with credentials in the environment."""
    monkeypatch.setenv("KEEL_ZK_DIGEST", DIGEST)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 3]}]}))
    common = ["--zk", connect, "--store", str(store.path)]
    for argv in (
        ["create-topic", "--topic", "clicks", "--partitions", "3", "--replication-factor", "2",
         "--config", "retention.ms=3600000"],
        ["alter-config", "--topic", "orders", "--add-config", "min.insync.replicas=1"],
        ["execute", "--reassignment-json-file", str(plan), "--throttle", "1000000"],
        ["elect", "--topic", "ledger", "--no-wait"],
        ["delete-topic", "--topic", "old"],
    ):
        code = main([*argv, *common])
        out, err = capsys.readouterr()
        assert code == 0, (argv, out, err)
    assert [a.status for a in store.actions()] == ["applied"] * 5


def test_nodes_keel_creates_in_a_protected_chroot_carry_kafkas_secure_acl(protected, store, tmp_path, monkeypatch,
                                                                             capsys):
    with client(protected, digest=DIGEST) as admin:
        before = set(walk(admin))
        run_keel_writes(protected, store, tmp_path, monkeypatch, capsys)
        created = sorted(set(walk(admin)) - before)
        acls = {p: acl_set(admin.get_acls(p)[0]) for p in created}
        data = {p: admin.get(p)[0] for p in created}

    changes = [p for p in created if p.startswith(zf.CONFIG_CHANGE_PREFIX)]
    assert {p for p in created if p not in changes} == {
        "/brokers/topics/clicks", "/config/topics/clicks", "/admin/reassign_partitions",
        "/config/brokers/1", "/config/brokers/2", "/config/brokers/3",
        "/admin/preferred_replica_election", "/admin/delete_topics/old"}
    assert len(changes) == 5  # alter-config: one; the throttles: topic orders and three brokers
    for path in created:
        assert acls[path] == acl_set(kafka_secure_acl(path)), path
    assert acls["/brokers/topics/clicks"] == {(31, "digest", OWNER.id.id), (1, "world", "anyone")}
    assert acls["/config/brokers/2"] == {(31, "digest", OWNER.id.id)}  # no world READ: may hold secrets

    with client(protected) as anonymous:  # no credentials: can read, cannot change anything Keel created
        for path in created:
            if path.startswith(SENSITIVE):
                with pytest.raises(NoAuthError):
                    anonymous.get(path)
            else:
                assert anonymous.get(path)[0] == data[path]
            with pytest.raises(NoAuthError):
                anonymous.set(path, b"rewritten")
            with pytest.raises(NoAuthError):
                anonymous.create(f"{path}/intruder", b"")
            with pytest.raises(NoAuthError):
                anonymous.set_acls(path, list(OPEN_ACL_UNSAFE))


def test_nodes_keel_creates_in_an_open_chroot_stay_open(zk_connect, store, tmp_path, monkeypatch, capsys):
    seed(zk_connect, digest=None)
    with client(zk_connect) as c:
        before = set(walk(c))
        run_keel_writes(zk_connect, store, tmp_path, monkeypatch, capsys)
        created = sorted(set(walk(c)) - before)
        assert len(created) == 13
        for path in created:
            assert acl_set(c.get_acls(path)[0]) == {(31, "world", "anyone")}, path


def test_session_create_ensure_path_and_makepath_follow_the_parent(protected):
    with ZkSession.open(ZkSettings(connect=protected, digest=DIGEST)) as s, client(protected, digest=DIGEST) as admin:
        s.create("/brokers/topics/made/partitions/0/state", b"{}", makepath=True)
        s.ensure_path("/config/users/alice/deep")
        s.ensure_path("/consumers")  # exists already (open, as Kafka keeps it)
        s.create("/consumers/group", b"")
        for path in ("/brokers/topics/made", "/brokers/topics/made/partitions", "/brokers/topics/made/partitions/0",
                     "/brokers/topics/made/partitions/0/state"):
            assert acl_set(admin.get_acls(path)[0]) == acl_set([OWNER, WORLD_READ]), path
        for path in ("/config/users/alice", "/config/users/alice/deep"):
            assert acl_set(admin.get_acls(path)[0]) == acl_set([OWNER]), path
        # a child of the open /consumers: Kafka would protect it, Keel follows the parent (open)
        assert acl_set(admin.get_acls("/consumers/group")[0]) == {(31, "world", "anyone")}


def test_session_without_credentials_creates_open_nodes_and_is_refused_where_kafka_protects(protected):
    from core.errors import ZooKeeperAuthError as AuthError

    with ZkSession.open(protected) as s:
        with pytest.raises(AuthError):
            s.create("/brokers/topics/sneaky", b"{}")
        assert not s.exists("/brokers/topics/sneaky")


def test_create_many_through_the_bulk_reader_gives_each_node_its_acl(protected, zk_connect_open):
    nodes = [("/brokers/topics/bulk", b"{}"), ("/brokers/topics/bulk/partitions", b""),
             ("/brokers/topics/bulk/partitions/0", b""), ("/brokers/topics/bulk/partitions/0/state", b"{}"),
             ("/config/brokers/9", b'{"version":1,"config":{}}'), ("/config/topics/bulk", b"{}")]
    with ZkSession.open(ZkSettings(connect=protected, digest=DIGEST)) as s, client(protected, digest=DIGEST) as admin:
        assert s._wire_usable()  # the pipelined reader, not kazoo, does these creates
        assert s.create_many(nodes) == 6
        assert s.create_many(nodes) == 0
        for path, _ in nodes:
            assert acl_set(admin.get_acls(path)[0]) == acl_set(kafka_secure_acl(path)), path
    with ZkSession.open(ZkSettings(connect=zk_connect_open, digest=DIGEST)) as s, client(zk_connect_open) as c:
        assert s._wire_usable()
        assert s.create_many([("/a", b""), ("/a/b", b"1")]) == 2
        assert acl_set(c.get_acls("/a/b")[0]) == {(31, "world", "anyone")}


@pytest.fixture
def zk_connect_open(zk_server):
    """A second, open chroot beside `protected` (which uses zk_connect)."""
    import uuid

    chroot = f"/t-open-{uuid.uuid4().hex[:8]}"
    with client(zk_server) as root:
        root.ensure_path(chroot)
    yield f"{zk_server}{chroot}"
    with client(zk_server) as root:
        root.delete(chroot, recursive=True)


# --- the bulk reader's digest path against a real server ------------------------------------------------


def wire_settings(connect: str, digest: str | None, **kw) -> WireSettings:
    hosts_text, _, chroot = connect.partition("/")
    host, port = hosts_text.rsplit(":", 1)
    return WireSettings(hosts=((host, int(port)),), chroot="/" + chroot if chroot else None, digest=digest, **kw)


def test_bulk_reader_reads_protected_nodes_with_the_right_digest(protected):
    with WireReader(wire_settings(protected, DIGEST)) as wire:
        got = dict((p, d) for p, d, _, _ in wire.get_many(["/config/brokers/1", "/brokers/topics/orders", "/nope"]))
        assert json.loads(got["/brokers/topics/orders"])["partitions"]["0"] == [1, 2]
        assert got["/nope"] is None
        assert dict(wire.children_many(["/config/brokers"]))["/config/brokers"] == []
    # the session's get_many goes through the same reader
    with ZkSession.open(ZkSettings(connect=protected, digest=DIGEST)) as s:
        s.create("/config/users/bob", b'{"version":1,"config":{"SCRAM-SHA-256":"x"}}')
        [node] = list(s.get_many(["/config/users/bob"]))
        assert s._wire is not None and node.data.startswith(b'{"version":1')


def test_bulk_reader_with_wrong_or_no_digest_names_the_refused_node(protected):
    with client(protected, digest=DIGEST) as admin:
        admin.create("/config/users/carol", b"secret", acl=[OWNER])
    for digest in (f"{USER}:wrong", None):
        with WireReader(wire_settings(protected, digest)) as wire:
            # world-readable nodes still read: ZooKeeper accepts any digest, it only denies access
            assert [d is not None for _, d, _, _ in wire.get_many(["/brokers/topics/orders"])] == [True]
            with pytest.raises(ZooKeeperAuthError, match="denied access to /config/users/carol: check the digest"):
                list(wire.get_many(["/config/users/carol"]))
        with ZkSession.open(ZkSettings(connect=protected, digest=digest)) as s:
            with pytest.raises(ZooKeeperAuthError, match="/config/users/carol"):
                list(s.get_many(["/brokers/topics/orders", "/config/users/carol"]))
            assert s.get("/brokers/topics/orders").exists  # the session is still usable afterwards
            assert [n.exists for n in s.get_many(["/brokers/topics/orders"])] == [True]


# --- TLS: a second ZooKeeper with a TLS port --------------------------------------------------------------


def _openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tls_zk(tmp_path_factory):
    """A ZooKeeper with a TLS port (Netty, PEM stores, client certificates required, x509 identities)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    d = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=keel-test-ca", cwd=d)
    for name in ("server", "client"):
        (d / f"{name}.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN=keel-{name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=d)
    (d / "server.pem").write_text((d / "server.key").read_text() + (d / "server.crt").read_text())
    server = None
    for attempt in range(3):
        try:
            server = zkserver.start(zkserver.free_port(), d / f"zk{attempt}", timeout=60, detach=False,
                                    tls=zkserver.TlsServer(zkserver.free_port(), d / "server.pem", d / "ca.pem"))
            break
        except zkserver.ZkPortInUse:
            continue
    assert server is not None, "could not start the TLS ZooKeeper"
    try:
        yield server, TlsOptions(ca=str(d / "ca.pem"), cert=str(d / "client.crt"), key=str(d / "client.key"))
    finally:
        server.stop()


def test_kazoo_and_the_bulk_reader_over_tls(tls_zk):
    server, tls = tls_zk
    with ZkSession.open(ZkSettings(connect=server.tls_connect, tls=tls)) as s:
        s.ensure_path("/tls-read")
        s.create("/tls-read/a", b"1")
        assert s.get("/tls-read/a").data == b"1"  # kazoo
        nodes = list(s.get_many(["/tls-read/a", "/tls-read/missing"]))  # the pipelined reader
        assert s._wire is not None and [n.data for n in nodes] == [b"1", None]
        assert s.children_many(["/tls-read"]) == {"/tls-read": ["a"]}
        assert s.create_many([("/tls-read/b", b"2"), ("/tls-read/b/c", b"3")]) == 2
        assert [n.data for n in s.get_many(["/tls-read/b/c"])] == [b"3"]


def test_tls_client_certificate_identity_owns_what_keel_creates_under_a_protected_parent(tls_zk):
    server, tls = tls_zk
    owner = ACL(31, Id("x509", "CN=keel-client"))
    with client(server.tls_connect, tls=tls) as admin:
        admin.create("/tls-acl", b"", acl=[owner, WORLD_READ])
        with ZkSession.open(ZkSettings(connect=server.tls_connect, tls=tls)) as s:
            s.create("/tls-acl/x", b"1")
            s.create_many([("/tls-acl/y", b""), ("/tls-acl/y/z", b"2")])
        for path in ("/tls-acl/x", "/tls-acl/y", "/tls-acl/y/z"):
            assert acl_set(admin.get_acls(path)[0]) == acl_set([owner, WORLD_READ]), path
    with client(server.connect) as anonymous:  # the plain port, no identity
        assert anonymous.get("/tls-acl/x")[0] == b"1"
        with pytest.raises(NoAuthError):
            anonymous.set("/tls-acl/x", b"rewritten")
