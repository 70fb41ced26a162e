"""Reading a partition's messages through the brokers (core.peek says where and how much), and the one way in:
`peek` checks the `data` permission and records every peek in the audit store.

The consumer never joins a group and never commits: no group_id (so no coordinator, no OffsetCommit), auto-commit
off, the partition assigned (`assign`), positions set with `seek`. Start offsets come from ListOffsets (earliest,
latest, and by time: `offsets_for_times`, KIP-79). Reads read_uncommitted, as kafka-console-consumer does by default.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from typing import TYPE_CHECKING, Callable

from kafka import KafkaConsumer
from kafka import TopicPartition as _TP

from core import peek as model
from core.errors import KeelError, ValidationError
from core.kafka.admin import KafkaAdmin
from core.kafka.admin_client import CAUSES, security_kwargs
from core.kafka.bootstrap import parse_bootstrap
from core.kafka.client_config import KafkaClientSecurity
from core.policy import access, gate

if TYPE_CHECKING:
    from core.audit.store import Store
    from core.policy.config import KeelConfig

__all__ = ["KIND", "peek", "read"]

KIND = "peek"  # the audit store's kind of a peek
_ids = itertools.count(1)


class _Consumer(KafkaConsumer):
    """KafkaConsumer that releases its I/O thread and sockets when connecting fails, and stops at refused
    credentials (as core.kafka.admin_client.AdminClient)."""

    def __init__(self, **configs):
        def stop() -> None:
            manager = getattr(self, "_manager", None)
            if manager is not None:
                manager.close()

        CAUSES.on_final(configs["client_id"], stop)
        try:
            super().__init__(**configs)
        except BaseException:
            for name in ("_client", "_metrics"):
                with contextlib.suppress(Exception):
                    getattr(self, name).close()
            with contextlib.suppress(Exception):
                self._net.stop()
            raise
        finally:
            CAUSES.on_final(configs["client_id"], None)


class _Where:
    """What core.kafka.admin's error translation names: the servers, the client, the timeout."""

    def __init__(self, bootstrap: str, client_id: str, timeout: float):
        self.bootstrap, self.client_id, self.timeout = bootstrap, client_id, timeout


def read(bootstrap: str, req: model.PeekRequest, *, security: KafkaClientSecurity | None = None,
         timeout: float = 10.0) -> model.PeekResult:
    """The messages `req` asks for, read from the partition's leader. Nothing is written to the cluster."""
    servers = parse_bootstrap(bootstrap)
    client_id = f"keel-peek-{next(_ids)}"
    where = _Where(",".join(servers), client_id, float(timeout))
    ms = int(timeout * 1000)
    translate = KafkaAdmin._translate  # kafka-python's exceptions leave as KafkaAdminError, in Keel's words
    fetch = min(req.max_bytes, model.MAX_BYTES)
    with translate(where, "connect to read messages"):
        consumer = _Consumer(bootstrap_servers=list(servers), client_id=client_id, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest", request_timeout_ms=ms,
                             bootstrap_timeout_ms=ms, fetch_max_wait_ms=min(500, ms // 2),
                             connections_max_idle_ms=max(ms * 3, 60_000), reconnect_backoff_max_ms=1000,
                             max_partition_fetch_bytes=fetch, fetch_max_bytes=fetch,
                             max_poll_records=req.max_messages, allow_auto_create_topics=False,
                             metrics_enabled=False, **security_kwargs(security))
    try:
        return _read(consumer, req, where, ms)
    finally:
        with contextlib.suppress(Exception):
            consumer.close(autocommit=False)


def _read(consumer: KafkaConsumer, req: model.PeekRequest, where: _Where, ms: int) -> model.PeekResult:
    translate = KafkaAdmin._translate
    tp = _TP(req.topic, req.partition)
    with translate(where, f"read the partitions of topic {req.topic}"):
        parts = consumer.partitions_for_topic(req.topic)
    if not parts:
        raise ValidationError(f"Topic '{req.topic}' does not exist as expected",  # kafka-console-consumer's words
                              hint="check the name on the Topics page (`python -m core describe`)")
    if req.partition not in parts:
        raise ValidationError(f"topic {req.topic} has no partition {req.partition}: its partitions are 0 to "
                              f"{max(parts)}")
    with translate(where, f"read the offsets of {req.topic}-{req.partition}"):
        earliest = consumer.beginning_offsets([tp], timeout_ms=ms)[tp]
        latest = consumer.end_offsets([tp], timeout_ms=ms)[tp]
        by_time = None
        if req.mode == model.TIME:
            found = consumer.offsets_for_times({tp: req.value}, timeout_ms=ms).get(tp)
            by_time = found.offset if found is not None else None
    start = model.start_offset(req, earliest, latest, by_time)
    if start is None:
        note = "no message at or after that time" if req.mode == model.TIME else "the partition holds no message"
        return model.PeekResult(req, earliest, latest, None, notes=(note,))
    stop = min(latest, start + req.max_messages) if req.mode != model.LAST else latest
    consumer.assign([tp])
    consumer.seek(tp, start)
    got: list[model.Message] = []
    size = 0
    deadline = time.monotonic() + where.timeout
    with translate(where, f"read messages of {req.topic}-{req.partition}"):
        while size <= req.max_bytes and len(got) < req.max_messages and time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=min(500, ms), max_records=req.max_messages - len(got))
            records = [r for r in batch.get(tp, ()) if r.offset < stop]
            for r in records:
                m = model.Message(r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
                                  tuple((str(k), v) for k, v in (r.headers or ())))
                got.append(m)
                size += m.size
            if consumer.position(tp, timeout_ms=ms) >= stop:
                break
    kept, cut, bound = model.bound(req, got)
    notes: tuple[str, ...] = ()
    following = kept[-1].offset + 1 if kept else start
    if not bound and following < stop and time.monotonic() >= deadline:
        notes = (f"the broker did not return every message within {where.timeout:g} s",)
        bound = f"{where.timeout:g} s"
    elif not bound and len(kept) == req.max_messages and following < latest:
        bound = f"{req.max_messages:,} messages"
    return model.PeekResult(req, earliest, latest, start, kept, cut, bound, notes)


def peek(who: access.Identity, config: "KeelConfig | None", target: gate.Target, req: model.PeekRequest, *,
         store: "Store", reader: Callable[[model.PeekRequest], model.PeekResult], exposed: bool = False
         ) -> model.PeekResult:
    """The one way to read messages, for the page and the CLI: `who` needs the data permission on `target`
    (core.policy.access.check_data; a refusal is recorded as "refused" and raised), then the peek is recorded in
    `store` (kind "peek": who, which partition, what was asked) before `reader(req)` runs and finished with how many
    messages and bytes were returned, never their contents. A store that cannot record means nothing is read."""
    what = f"peek at {req.topic}-{req.partition}"
    if config is not None:
        names = target.configured or (None,)
        try:
            for name in names:
                access.check_data(who, config, name, what, exposed=exposed)
        except access.DataDeniedError as e:
            gate.refuse(who, e, target, what, store)
    action = store.begin(cluster=target.label, kind=KIND, target=f"{req.topic}-{req.partition}",
                         summary=f"peek: {req.describe()}"[:300],
                         payload={"topic": req.topic, "partition": req.partition, "mode": req.mode,
                                  "from": req.value, "max_messages": req.max_messages, "max_bytes": req.max_bytes},
                         actor=who.actor, source=who.source, role=access.DATA)
    try:
        result = reader(req)
    except KeelError as e:
        store.finish(action, ok=False, result=str(e)[:500])
        raise
    except BaseException as e:
        store.finish(action, ok=False, result=f"interrupted: {type(e).__name__}")
        raise
    store.finish(action, ok=True, result=result.summary())
    return result
