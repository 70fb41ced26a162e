"""keel.toml's [store] table: a postgresql:// URL or a SQLite file; anything else is a ConfigError naming the key."""

from __future__ import annotations

import pytest

from core.audit.store import Store
from core.policy.config import ConfigError, parse_config, store_url

CLUSTER = '\n[clusters.demo]\nzk = "127.0.0.1:2181"\n'


@pytest.mark.parametrize("store, key, problem", [
    ('store = "postgresql://db/keel"', "store", "must be a table"),
    ('[store]\nuri = "postgresql://db/keel"', "store.uri", "unknown key"),
    ("[store]\nurl = 5", "store.url", "must be a non-empty string"),
    ('[store]\nurl = "  "', "store.url", "must be a non-empty string"),
    ('[store]\nurl = "mysql://db/keel"', "store.url", "unsupported scheme 'mysql'"),
    ('[store]\nurl = "postgresql://"', "store.url", "names no PostgreSQL server"),
])
def test_a_bad_store_table_is_refused_with_its_key(store, key, problem):
    with pytest.raises(ConfigError) as e:
        parse_config(store + "\n" + CLUSTER, source="/etc/keel/keel.toml")
    assert e.value.key == key and problem in e.value.problem


def test_the_store_url_as_written_and_a_file_relative_to_keel_toml(tmp_path, monkeypatch):
    url = "postgresql://keel:pw@db.example.com:5432/keel"
    assert parse_config(f'[store]\nurl = "{url}"\n{CLUSTER}').store_url == url
    assert "pw" not in repr(parse_config(f'[store]\nurl = "{url}"\n{CLUSTER}'))
    assert parse_config(CLUSTER).store_url is None
    config = tmp_path / "etc" / "keel.toml"
    config.parent.mkdir()
    config.write_text(f'[store]\nurl = "history/keel.sqlite"\n{CLUSTER}')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    monkeypatch.delenv("KEEL_STORE", raising=False)
    assert store_url() == str(tmp_path / "etc" / "history" / "keel.sqlite")
    assert Store().path == tmp_path / "etc" / "history" / "keel.sqlite"
    # keel.toml that is not TOML: no [store] to read here (load_config reports the file to every front end)
    config.write_text("[store\n")
    assert store_url() is None


def test_keel_store_wins_over_keel_toml(tmp_path, monkeypatch):
    config = tmp_path / "keel.toml"
    config.write_text(f'[store]\nurl = "postgresql://db.invalid/keel"\n{CLUSTER}')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "mine.sqlite"))
    assert Store().path == tmp_path / "mine.sqlite"
