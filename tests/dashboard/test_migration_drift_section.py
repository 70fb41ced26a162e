"""The drift section (dashboard/migration_drift.py) on a cluster it cannot compare: keel.toml gives ZooKeeper but not
the brokers' bootstrap, so the section says what it needs and reads nothing (the real comparison is AppTested against
real brokers in tests/kafka/test_migration_drift_real.py)."""

from __future__ import annotations

import streamlit as st
from streamlit.testing.v1 import AppTest


def drift_page() -> None:
    import streamlit as st

    from dashboard import frame
    from dashboard.migration_drift import drift_section

    ctx = frame.page_context()
    drift_section(ctx)
    st.caption(f"memo: {sorted(ctx.conn.memo('migration_drift'))}")


def test_without_bootstrap_the_section_says_what_it_needs(tmp_path, monkeypatch):
    config = tmp_path / "keel.toml"
    config.write_text('[clusters.zk_only]\nzk = "127.0.0.1:1/none"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    st.cache_resource.clear()
    try:
        at = AppTest.from_function(drift_page, default_timeout=30).run()
    finally:
        st.cache_resource.clear()
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader] == ["Drift between ZooKeeper and the brokers"]
    assert "needs both `zk` and `bootstrap`" in at.info[0].value
    assert [c.value for c in at.caption] == ["memo: []"]  # nothing read, no tracker
