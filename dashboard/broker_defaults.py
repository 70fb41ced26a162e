"""The brokers' own settings for the pages (issue 23): one core.kafka.broker_configs.BrokerDefaultsReader per cluster
with bootstrap servers, in st.cache_resource (shared by every session, read in the background, never holding a
page longer than a moment), else an unknown BrokerDefaults saying why; the cluster summary the health pages share,
computed with them; and the note saying what topics without a min.insync.replicas override are checked against."""

from __future__ import annotations

import dataclasses
import hashlib

import streamlit as st

from core import health
from core.broker_defaults import FROM_KEEL_TOML, BrokerDefaults, MinIsrBasis, unknown
from core.policy.config import ClusterConfig
from core.model import ClusterSnapshot
from dashboard.text import md

NO_BOOTSTRAP = ("this cluster has no bootstrap servers in keel.toml, so Keel reads only its ZooKeeper (add "
                'bootstrap = "broker1:9092,..." to its table, or min_insync_replicas = N)')


def _cache_key(c: ClusterConfig) -> str:
    security = hashlib.sha256(repr(dataclasses.astuple(c.kafka_security)).encode()).hexdigest()[:16] \
        if c.kafka_security is not None else ""
    return repr((c.name, c.bootstrap, security, c.min_insync_replicas, c.connect_timeout))


@st.cache_resource(show_spinner=False, on_release=lambda reader: reader.close())
def _reader(key: str, _cluster: ClusterConfig):
    from core.kafka.broker_configs import BrokerDefaultsReader  # kafka-python only for clusters with bootstrap

    return BrokerDefaultsReader(_cluster)


def defaults(cluster: ClusterConfig, snap: ClusterSnapshot) -> BrokerDefaults:
    """What the brokers of `cluster` apply by default, as last read (or what is assumed, and why)."""
    if not cluster.bootstrap:
        return unknown(NO_BOOTSTRAP, min_isr=cluster.min_insync_replicas, assumed_from=FROM_KEEL_TOML)
    return _reader(_cache_key(cluster), cluster).get(snap.alive_broker_ids)


def current(cluster: ClusterConfig, snap: ClusterSnapshot):
    """What `defaults` would give now, without waiting for a read in flight (None without bootstrap servers): part
    of what the live views draw, so the ticker (dashboard.frame) redraws them when a read brings something new."""
    if not cluster.bootstrap:
        return None
    return _reader(_cache_key(cluster), cluster).get(snap.alive_broker_ids, wait=0)


def summary(ctx, snap: ClusterSnapshot) -> health.ClusterSummary:
    """health.summarize with the brokers' settings, once per snapshot and read (the slot every health page shares)."""
    bd = defaults(ctx.cluster, snap)
    return ctx.conn.derived("summary", snap, lambda s: health.summarize(s, defaults=bd), key=bd)


def show_min_isr(basis: MinIsrBasis | None) -> None:
    """The note under a page's min-ISR figures: a warning when the brokers could not be read, else a caption."""
    if basis is None:
        return
    if basis.failed:
        st.warning(md(basis.text), icon=":material/warning:")
    else:
        st.caption((":material/info: " if basis.assumed else ":material/dns: ") + md(basis.text))
