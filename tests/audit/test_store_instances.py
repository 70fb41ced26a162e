"""Several Keel instances on one audit store: separate processes (as two dashboards and a CLI are) against a real
PostgreSQL server, and the same rules on a shared SQLite file. No lost rows when they write at once; of two
instances starting an auto-throttle loop of one cluster at once, exactly one wins; a pending row is settled once.
Also: an unreachable or refusing PostgreSQL is a StoreError that says what to do, and writes nothing."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from core.audit.store import Store, ThrottleLoops
from core.errors import StoreError, ValidationError
from sandbox.processes.common import free_port

SPAWN = multiprocessing.get_context("spawn")  # a fresh interpreter per instance: nothing shared but the database
ROWS = 150


def _writer(target: str, out, name: str, barrier) -> None:
    barrier.wait()
    store = Store(target)  # the schema of a new database created by whichever instance comes first
    ids = []
    for i in range(ROWS):
        aid = store.begin(cluster="demo", kind="create-topic", target=f"{name}-{i}", summary=name, payload=[i])
        store.finish(aid, ok=True, result=name)
        ids.append(aid)
    out.put(ids)


def _start_loop(target: str, out, cluster: str, barrier, done) -> None:
    from core.auto_throttle import policy
    from core.cluster import auto_throttle

    original = ThrottleLoops.start

    def slow_start(self, **kw):  # an instance slowed down between its look at the loops and its write
        time.sleep(0.5)
        return original(self, **kw)

    ThrottleLoops.start = slow_start
    barrier.wait()
    try:
        out.put(("won", auto_throttle.begin(Store(target), cluster, policy(50_000_000), owner="cli")))
    except ValidationError as e:
        out.put(("refused", str(e)))
    done.wait(60)  # stay alive (the loop's pid) until the other instance has answered too


def _resolver(target: str, out, ids: list[int], name: str, barrier) -> None:
    store = Store(target)
    barrier.wait()
    out.put((name, [i for i in ids if store.resolve(i, True, f"settled by {name}")]))


def _run(target, *jobs):
    out = SPAWN.Queue()
    procs = [SPAWN.Process(target=fn, args=(target, out, *args)) for fn, *args in jobs]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    return procs, results


def _join(procs):
    for p in procs:
        p.join(60)
        assert p.exitcode == 0


def test_two_instances_writing_at_once_lose_nothing(store_target):
    barrier = SPAWN.Barrier(2)
    procs, (one, two) = _run(store_target, (_writer, "a", barrier), (_writer, "b", barrier))
    _join(procs)
    store = Store(store_target)
    rows = store.actions(limit=10 * ROWS)
    assert len(rows) == 2 * ROWS and not set(one) & set(two)
    assert {a.id for a in rows} == set(one) | set(two)
    assert {a.target for a in rows} == {f"{n}-{i}" for n in "ab" for i in range(ROWS)}
    assert {a.status for a in rows} == {"applied"} and all(a.result == a.summary for a in rows)


def test_of_two_instances_starting_a_loop_at_once_exactly_one_wins(store_target):
    for round_ in range(2):
        cluster = f"demo-{round_}"
        barrier, done = SPAWN.Barrier(2), SPAWN.Event()
        procs, results = _run(store_target, (_start_loop, cluster, barrier, done),
                             (_start_loop, cluster, barrier, done))
        try:
            assert sorted(r[0] for r in results) == ["refused", "won"], results
            [(_, won)] = [r for r in results if r[0] == "won"]
            [(_, why)] = [r for r in results if r[0] == "refused"]
            assert f"another auto-throttle loop runs for {cluster}" in why
            assert [loop.id for loop in ThrottleLoops(Store(store_target)).of(cluster)] == [won]
        finally:
            done.set()
            _join(procs)


def test_a_pending_row_is_settled_by_one_instance(store_target):
    store = Store(store_target)
    ids = [store.begin(cluster="demo", kind="create-topic", target=f"t{i}", summary="s", payload=[])
           for i in range(60)]
    barrier = SPAWN.Barrier(2)
    procs, results = _run(store_target, (_resolver, ids, "a", barrier), (_resolver, ids, "b", barrier))
    _join(procs)
    by = dict(results)
    assert sorted(by["a"] + by["b"]) == ids  # each row settled exactly once
    for a in store.actions(limit=100):
        assert a.status == "applied" and a.result == f"settled by {'a' if a.id in by['a'] else 'b'}"


# --- a PostgreSQL that cannot be used ---------------------------------------------------------------------------


def test_an_unreachable_server_is_a_store_error_without_the_password():
    url = f"postgresql://keel:s3cret-pw@127.0.0.1:{free_port()}/keel"
    with pytest.raises(StoreError, match="cannot be reached") as e:
        Store(url)
    assert "s3cret-pw" not in str(e.value) and "postgresql://keel@127.0.0.1:" in str(e.value)
    assert "[store] url" in e.value.hint


def test_a_wrong_password_a_missing_database_and_a_user_without_rights(pg_server, pg_url):
    import psycopg

    with pytest.raises(StoreError, match="refused the login") as e:
        Store(pg_server.url("postgres", user="keel", password="wrong-one"))
    assert "wrong-one" not in str(e.value) and "pg_hba.conf" in e.value.hint
    with pytest.raises(StoreError, match="no such database") as e:
        Store(pg_server.url("no_such_db"))
    assert "CREATE DATABASE" in e.value.hint

    # a user who may log in but not create Keel's tables: told what to grant, and nothing is created
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("CREATE ROLE reader LOGIN PASSWORD 'pw'")
        c.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    reader = pg_url.replace(f"{pg_server.user}:{pg_server.password}@", "reader:pw@")
    with pytest.raises(StoreError, match="denied the user") as e:
        Store(reader)
    assert "CREATE on the schema" in e.value.hint
    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0


def test_a_server_gone_after_open_is_a_store_error():
    from sandbox.processes import pgserver

    server = pgserver.start()  # its own: this test stops it
    try:
        store = Store(server.url())
        aid = store.begin(cluster="demo", kind="create-topic", target="t", summary="s", payload=[])
    finally:
        pgserver.stop(server)
    with pytest.raises(StoreError, match="cannot be reached") as e:
        store.finish(aid, ok=True)
    assert server.password not in str(e.value)


def test_a_connection_the_server_ended_is_replaced(pg_url):
    """Connections are kept between operations; one the server ended meanwhile (a restart, an idle timeout, an
    administrator) is replaced, not reported: the next operation works."""
    import psycopg

    store = Store(pg_url)
    aid = store.begin(cluster="demo", kind="create-topic", target="t", summary="s", payload=[])
    with psycopg.connect(pg_url, autocommit=True) as c:
        ended = c.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                          "WHERE application_name = 'keel' AND pid <> pg_backend_pid()").fetchone()[0]
    assert ended >= 1
    store.finish(aid, ok=True, result="done")
    assert store.action(aid).status == "applied"
