"""The brokers' own settings - server.properties (STATIC_BROKER_CONFIG) and Kafka's defaults (DEFAULT_CONFIG) - read
through the Admin API into core.broker_defaults' pure `BrokerDefaults`, and kept fresh for the dashboard.

`read_broker_defaults(admin, brokers)` asks every live broker for its own values of the broker properties topic
configs default to (core.topics.configdef's server_default_property, with their synonyms) and min.insync.replicas:
one describeConfigs per broker, with synonyms, which list every layer's value in Kafka's order. Only the static and
default layers are kept: the dynamic ones are in ZooKeeper, which the live snapshot follows as they change.

`BrokerDefaultsReader`: one per cluster, shared by every page session. `get()` answers at once (waiting at most a
moment for a read in flight) with the last read; it starts a read in the background when there is none, when the
live brokers changed since (a broker restarted may run with another server.properties), and every REFRESH_SECONDS
(RETRY_SECONDS after a failure). A broker that does not answer never holds a page: the page shows what is assumed
instead and says why.
"""

from __future__ import annotations

import threading
import time
from typing import Iterable, Mapping

from core.broker_defaults import (DEFAULT, FROM_KEEL_TOML, MIN_ISR, STATIC, BrokerDefaults, BrokerSettings,
                                  synonym_names, unknown)
from core.errors import KeelError
from core.kafka.admin import BrokerConfig, KafkaAdmin
from core.topics.configdef import TOPIC_CONFIGS

REFRESH_SECONDS = 300.0  # static settings change only when a broker restarts, which the live broker set shows
RETRY_SECONDS = 30.0
WAIT_SECONDS = 1.5  # how long a page waits for a read in flight before drawing with what it has

# what to ask each broker: every topic key's broker property and its synonyms, and min.insync.replicas
PROPERTIES: tuple[str, ...] = tuple(synonym_names(
    {d.server_default_property for d in TOPIC_CONFIGS.values() if d.server_default_property} | {MIN_ISR}))


def broker_settings(broker: int, configs: Mapping[str, BrokerConfig]) -> BrokerSettings:
    """A broker's static and default layers from its describeConfigs answer. Read from the synonyms, which carry
    every layer's value under the property that sets it (an entry's own value may come from another synonym)."""
    static: dict[str, str] = {}
    default: dict[str, str] = {}
    for _name, (_value, _source, synonyms) in configs.items():
        for name, value, source in synonyms:
            if value is None:
                continue
            if source == STATIC:
                static[name] = value
            elif source == DEFAULT:
                default[name] = value
    return BrokerSettings(broker, static, default)


def read_broker_defaults(admin: KafkaAdmin, brokers: Iterable[int], *, min_isr: int | None = None,
                         assumed_from: str = FROM_KEEL_TOML) -> BrokerDefaults:
    """The static layers of `brokers` (the live ones). `min_isr` (from `assumed_from`) is assumed for what stays
    unknown. Raises KafkaAdminError when the brokers cannot be reached at all; a broker that alone fails is listed
    in `unread`, and when none answers the result says why (`failed`)."""
    ids = sorted(set(brokers))
    if not ids:
        return unknown("no broker is running", min_isr=min_isr, assumed_from=assumed_from)
    answers = admin.broker_configs(ids, PROPERTIES)
    read = {b: broker_settings(b, a) for b, a in answers.items() if not isinstance(a, str)}
    unread = {b: a for b, a in answers.items() if isinstance(a, str)}
    if not read:
        why = "; ".join(f"broker {b}: {e}" for b, e in sorted(unread.items()))
        return unknown(f"no broker answered describeConfigs ({why})", min_isr=min_isr, assumed_from=assumed_from,
                       failed=True)
    return BrokerDefaults(read, unread, None, False, time.strftime("%H:%M:%S"),
                          version=admin.version).assuming(min_isr, assumed_from)


class BrokerDefaultsReader:
    """The latest `BrokerDefaults` of one keel.toml cluster (core.policy.config.ClusterConfig with bootstrap), read in
    the background; see the module doc. Thread-safe; `close()` when the cluster's connection is released."""

    def __init__(self, cluster, *, refresh: float = REFRESH_SECONDS, retry: float = RETRY_SECONDS,
                 timeout: float | None = None):
        self.cluster = cluster
        self.refresh, self.retry, self.timeout = float(refresh), float(retry), timeout
        self._lock = threading.Condition()
        self._latest: BrokerDefaults | None = None
        self._asked: frozenset[int] | None = None  # the live brokers the latest read asked
        self._ended = 0.0  # time.monotonic() when it ended
        self._running: threading.Thread | None = None
        self._closed = False

    def _assumed(self) -> dict:
        return {"min_isr": self.cluster.min_insync_replicas, "assumed_from": FROM_KEEL_TOML}

    def _due(self, brokers: frozenset[int]) -> bool:
        if self._running is not None or self._closed:
            return False
        if self._latest is None or brokers != self._asked:
            return True
        age = time.monotonic() - self._ended
        return age >= (self.refresh if self._latest.known else self.retry)

    def get(self, brokers: Iterable[int], *, wait: float = WAIT_SECONDS) -> BrokerDefaults:
        """What the brokers said (or why nothing is known), waiting at most `wait` s for a read in flight."""
        live = frozenset(brokers)
        with self._lock:
            if self._due(live):
                self._start(live)
            if self._running is not None and (self._latest is None or self._asked != live):
                self._lock.wait_for(lambda: self._running is None, timeout=wait)
            latest = self._latest
        if latest is None:
            return unknown(f"the brokers' own settings are being read through {self.cluster.bootstrap} (no answer "
                           f"within {wait:g} s yet)", **self._assumed())
        return latest

    def _start(self, brokers: frozenset[int]) -> None:
        thread = threading.Thread(target=self._read, args=(brokers,), daemon=True,
                                  name=f"keel-broker-configs-{self.cluster.name}")
        self._running = thread
        thread.start()

    def _read(self, brokers: frozenset[int]) -> None:
        try:
            with KafkaAdmin.for_cluster(self.cluster, timeout=self.timeout) as admin:
                found = read_broker_defaults(admin, brokers, **self._assumed())
        except KeelError as e:
            found = unknown(f"the brokers could not be read through {self.cluster.bootstrap}: {e.message}",
                            failed=True, **self._assumed())
        except Exception as e:  # never let the thread die silently: the page says what happened
            found = unknown(f"the brokers could not be read through {self.cluster.bootstrap}: {e!r}", failed=True,
                            **self._assumed())
        with self._lock:
            previous = self._latest
            # a failed read after a good one keeps the good one (static settings change only at a restart, and
            # the live broker set starts a new read then); a retry follows after RETRY_SECONDS
            if not found.known and previous is not None and previous.known and self._asked == brokers:
                self._ended = time.monotonic() - self.refresh + self.retry
            else:
                self._latest, self._ended = found, time.monotonic()
            self._asked = brokers
            self._running = None
            self._lock.notify_all()

    def close(self) -> None:
        with self._lock:
            self._closed = True


__all__ = ["PROPERTIES", "REFRESH_SECONDS", "RETRY_SECONDS", "WAIT_SECONDS", "BrokerDefaultsReader",
           "broker_settings", "read_broker_defaults"]
