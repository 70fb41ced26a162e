"""Two Keel instances, one History: an action recorded by another process (a CLI user, another dashboard replica)
through keel.toml's [store] url shows on this dashboard's History page (AppTest), which names the PostgreSQL
server without its password."""

from __future__ import annotations

import multiprocessing

from core.audit.store import Store, acting
from tests.dashboard.test_dashboard_apptest import app, texts


def _other_instance(config: str, out) -> None:
    import os

    os.environ.pop("KEEL_STORE", None)
    os.environ["KEEL_CONFIG"] = config
    with acting("olga@example.com", "oidc", "operator"):
        out.put(Store().record(cluster="demo", kind="refused", target="delete topic t",
                               summary="refused: delete topic t", result="read_only"))


def test_history_shows_what_another_instance_recorded(pg_server, pg_url, tmp_path, monkeypatch, fresh_connections):
    config = tmp_path / "keel.toml"
    config.write_text(f'[keel]\nrole = "admin"\n\n[store]\nurl = "{pg_url}"\n\n'
                      '[clusters.demo]\nzk = "127.0.0.1:1/none"\nconnect_timeout = 0.5\n')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    monkeypatch.delenv("KEEL_STORE", raising=False)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_other_instance, args=(str(config), out))
    proc.start()
    theirs = out.get(timeout=60)
    proc.join(30)
    assert proc.exitcode == 0

    at = app("demo")
    at.run()
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    hist = at.dataframe(key="history_table").value
    assert list(hist["ID"]) == [theirs] and list(hist["Actor"]) == ["olga@example.com"]
    caption = " ".join(c.value for c in at.caption)
    assert f"127.0.0.1:{pg_server.port}" in caption and pg_server.password not in caption + texts(at.markdown)
