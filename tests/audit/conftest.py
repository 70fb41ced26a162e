"""A real PostgreSQL for the audit store's tests: one server per pytest process (session; under xdist one per
worker), a fresh database per test. `store_target` runs a test on both backends: a SQLite file and PostgreSQL."""

from __future__ import annotations

import secrets

import pytest

from sandbox.processes import pgserver


@pytest.fixture(scope="session")
def pg_server():
    server = pgserver.start()
    try:
        yield server
    finally:
        pgserver.stop(server)


def new_database(server: pgserver.PgServer) -> str:
    import psycopg

    name = "keel_" + secrets.token_hex(6)
    with psycopg.connect(server.url(), autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return name


@pytest.fixture
def pg_url(pg_server) -> str:
    """A URL of an empty database of its own."""
    return pg_server.url(new_database(pg_server))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request, tmp_path, monkeypatch):
    """Where a Store opens: a new SQLite file, or a new PostgreSQL database (afterwards: Keel's tables are in
    the server, not in a file named like the URL)."""
    monkeypatch.chdir(tmp_path)  # a relative file written by mistake lands here, not in the checkout
    if request.param == "sqlite":
        yield str(tmp_path / "keel.sqlite")
        return
    import psycopg

    url = request.getfixturevalue("pg_url")
    yield url
    with psycopg.connect(url) as c:
        assert c.execute("SELECT to_regclass('actions') IS NOT NULL").fetchone()[0], "the store did not use PostgreSQL"
