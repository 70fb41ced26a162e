"""The Leaders page's "From a file" scope: Kafka's election JSON (kafka-leader-election --path-to-json-file) uploaded,
previewed and elected as the CLI's `elect --path-to-json-file` would; a bad file is refused with the CLI's message
and writes nothing. The tree is tests/dashboard/conftest.py's `election_tree` (no controller acts)."""

from __future__ import annotations

import json

import pytest

from core import zkformat as zf
from core.cli import main
from tests.support.kafka_tree import dump_tree
from tests.dashboard.test_dashboard_actions import (  # noqa: F401
    by_prefix,
    errors,
    ok,
)
from tests.dashboard.test_dashboard_apptest import app, texts, write_config  # noqa: F401


def upload(at, name: str, data: bytes):
    at.file_uploader(key="ld_file").set_value((name, data, "application/json")).run()
    ok(at)
    return at


def open_leaders(zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    at.switch_page("views/leaders.py").run()
    at.radio(key="scope").set_value("From a file").run()
    ok(at)
    return at


def doc(*keys) -> bytes:
    return json.dumps({"partitions": [{"topic": t, "partition": p} for t, p in keys]}).encode()


def test_an_election_file_is_previewed_and_elected_as_the_cli_would(election_tree, zk_connect, tmp_path, monkeypatch,
                                                                    store, capsys):
    at = open_leaders(zk_connect, tmp_path, monkeypatch)
    assert not [b for b in at.button if b.key == "ld_elect"]  # nothing before a file
    data = doc(("t", 0), ("t", 1), ("t", 2), ("u", 0))
    upload(at, "election.json", data)
    assert not at.error, errors(at)
    # t-0 moves; t-1 and u-0 cannot (reasons shown); t-2 is already led by its preferred replica
    assert "**1** partition(s) will move to their preferred leader, **2** cannot; 1 already led" in \
        texts(at.markdown)
    assert at.download_button(key="ld_download").label == "Download election JSON (1 partitions)"

    # the CLI's dry run of the same file agrees
    path = tmp_path / "election.json"
    path.write_bytes(data)
    assert main(["elect", "--zk", zk_connect, "--path-to-json-file", str(path), "--dry-run"]) == 0
    assert "4 chosen partitions: 1 to elect, 2 not eligible, 1 already led by their preferred replica" in \
        capsys.readouterr().out

    by_prefix(at.checkbox, "ld_confirm_").check().run()
    at.button(key="ld_elect").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert json.loads(election_tree.get(zf.PREFERRED_ELECTION).data) == \
        {"version": 1, "partitions": [{"topic": "t", "partition": 0}]}
    [action] = store.actions("demo")
    assert (action.kind, action.status) == ("preferred-election", "applied")


@pytest.mark.parametrize("name, data, message", [
    ("notjson.json", b"{partitions: nope", "Preferred replica election data is empty"),
    ("nokey.json", b'{"version": 1}', "Preferred replica election data is empty"),
    ("empty.json", b'{"partitions": []}', "Preferred replica election data is empty"),
    ("dupes.json", doc(("t", 0), ("t", 0)), "contains duplicate partitions: t-0"),
    ("unknown.json", doc(("t", 0), ("nope", 3)), "do not exist in the cluster: nope-3"),
    ("badtype.json", b'{"partitions": [{"topic": "t", "partition": "0"}]}', "partition"),
    ("binary.json", b"\xff\xfe\x00\x01", "election"),
])
def test_a_bad_election_file_is_refused_and_writes_nothing(election_tree, zk_connect, tmp_path, monkeypatch, store,
                                                           name, data, message):
    at = open_leaders(zk_connect, tmp_path, monkeypatch)
    before = dump_tree(election_tree)
    upload(at, name, data)
    assert message in errors(at)
    assert not [b for b in at.button if b.key == "ld_elect"]
    assert dump_tree(election_tree) == before and store.actions() == []
