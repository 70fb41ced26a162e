"""Kafka's Admin API through kafka-python: the ONLY module that imports it (as core/zk is for kazoo).

ZooKeeper holds assignments, leaders and configs; what only the brokers know comes from here:
* `log_dirs()` / `partition_sizes()`: describeLogDirs of every live broker, the same document
  `kafka-log-dirs.sh --describe` prints (core.kafka.logdirs), so plans get real sizes without a file upload;
* `reassignments()`: listPartitionReassignments (Kafka 2.4+), the reassignments the controller is running;
* `cancel_reassignments(keys)`: alterPartitionReassignments with no target (Kafka 2.4+, KIP-455), the only way
  to stop a running reassignment; the controller moves each partition back to its original replicas and drops
  it from /admin/reassign_partitions.

kafka-python's exceptions never leave this module: they become `KafkaAdminError`s with a message an SRE can act
on (which servers, which timeout, what to check). Every call has a short timeout (default 10 s), and the client
is closed by `close()` / the context manager, including when connecting fails (kafka-python would otherwise
keep its I/O thread).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

import kafka.errors as kerrors
from kafka import TopicPartition as _TP
from kafka.admin import KafkaAdminClient

from core.errors import KeelError
from core.kafka.bootstrap import parse_bootstrap
from core.kafka.logdirs import LogDir, LogDirs, Replica

__all__ = ["DEFAULT_TIMEOUT", "CANCEL_SINCE", "KafkaAdmin", "Reassigning", "KafkaAdminError",
           "KafkaUnreachableError", "KafkaUnsupportedError", "connect"]

DEFAULT_TIMEOUT = 10.0
CANCEL_SINCE = (2, 4)  # AlterPartitionReassignments / ListPartitionReassignments (KIP-455)
_ALTER_REASSIGNMENTS = 45  # Kafka's ApiKeys.ALTER_PARTITION_REASSIGNMENTS
_LIST_REASSIGNMENTS = 46

TopicPartition = tuple[str, int]


class KafkaAdminError(KeelError):
    """A request to Kafka's brokers (Admin API) failed; nothing is known to have changed unless it says so."""


class KafkaUnreachableError(KafkaAdminError):
    """No broker of the bootstrap list answered in time."""


class KafkaUnsupportedError(KafkaAdminError):
    """The brokers are too old for the request (e.g. cancelling a reassignment needs Kafka 2.4)."""


@dataclass(frozen=True)
class Reassigning:
    """A reassignment the controller is running: all replicas (target + origin), and the moving ones."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in set(self.adding))

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in set(self.removing))


class _Client(KafkaAdminClient):
    """KafkaAdminClient that releases its I/O thread, sockets and metrics when connecting fails."""

    def __init__(self, **configs):
        try:
            super().__init__(**configs)
        except BaseException:
            for name in ("_client", "_metrics"):
                part = getattr(self, name, None)
                if part is not None:
                    with contextlib.suppress(Exception):
                        part.close()
            net = getattr(self, "_net", None)
            if net is not None:
                with contextlib.suppress(Exception):
                    net.stop()
            raise


def _name(error) -> str:
    cls = error if isinstance(error, type) else type(error)
    return cls.__name__


def _describe(error) -> str:
    """`NoReassignmentInProgressError: No partition reassignment is in progress.` for a class or an instance."""
    cls = error if isinstance(error, type) else type(error)
    text = getattr(cls, "description", "") or ""
    if not isinstance(error, type) and str(error) and not text:
        text = str(error)
    return f"{cls.__name__}: {text}" if text else cls.__name__


class KafkaAdmin:
    """One Admin API client for the brokers of `bootstrap` ("host:port,host:port"). Close it (or use `with`)."""

    def __init__(self, bootstrap: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, client_id: str = "keel"):
        self.servers = parse_bootstrap(bootstrap) if isinstance(bootstrap, str) else \
            parse_bootstrap(",".join(bootstrap))
        self.bootstrap = ",".join(self.servers)
        self.timeout = float(timeout)
        if not self.timeout > 0:
            raise KafkaAdminError(f"the Kafka timeout must be positive, got {timeout!r}")
        ms = int(self.timeout * 1000)
        self._closed = False
        with self._translate("connect"):
            self._admin = _Client(bootstrap_servers=list(self.servers), client_id=client_id, request_timeout_ms=ms,
                                  bootstrap_timeout_ms=ms, reconnect_backoff_max_ms=1000,
                                  connections_max_idle_ms=max(ms * 3, 60_000))

    # --- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(Exception):
                self._admin.close()

    def __enter__(self) -> "KafkaAdmin":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- errors ------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        try:
            yield
        except KeelError:
            raise
        except (kerrors.KafkaTimeoutError, kerrors.NodeNotReadyError, kerrors.KafkaConnectionError,
                kerrors.RequestTimedOutError, TimeoutError, ConnectionError) as e:
            raise KafkaUnreachableError(
                f"could not {what}: no Kafka broker of {self.bootstrap} answered within {self.timeout:g} s "
                f"({_name(e)})", hint="check the bootstrap servers (--bootstrap-server, or bootstrap in keel.toml) "
                "and that the brokers' advertised listeners are reachable from here") from None
        except (kerrors.IncompatibleBrokerVersion, kerrors.UnsupportedVersionError) as e:
            raise KafkaUnsupportedError(f"could not {what}: the brokers of {self.bootstrap} do not support it "
                                        f"({_describe(e)})") from None
        except kerrors.AuthorizationError as e:
            raise KafkaAdminError(f"could not {what}: Kafka refused it ({_describe(e)})",
                                  hint="the principal Keel connects as needs Kafka's ALTER / DESCRIBE on the cluster") \
                from None
        except kerrors.KafkaError as e:
            raise KafkaAdminError(f"could not {what}: {_describe(e)}") from None
        except (RuntimeError, ValueError, OSError) as e:  # kafka-python's own ("Failed to find active controller")
            raise KafkaAdminError(f"could not {what} through {self.bootstrap}: {e}") from None

    # --- versions ----------------------------------------------------------------------------------

    @property
    def version(self) -> tuple[int, ...] | None:
        """The broker version kafka-python inferred from ApiVersions, e.g. (3, 9); None if unknown."""
        with contextlib.suppress(Exception):
            return tuple(self._admin._manager.broker_version)
        return None

    def _api_keys(self) -> set[int]:
        with contextlib.suppress(Exception):
            return {int(k) for k in self._admin.api_versions()}
        return set()

    @property
    def supports_cancel(self) -> bool:
        """The brokers answer AlterPartitionReassignments and ListPartitionReassignments (Kafka 2.4+)."""
        return {_ALTER_REASSIGNMENTS, _LIST_REASSIGNMENTS} <= self._api_keys()

    def require_cancel(self) -> None:
        if not self.supports_cancel:
            shown = ".".join(map(str, self.version)) if self.version else "older than 2.4"
            raise KafkaUnsupportedError(
                f"the brokers of {self.bootstrap} (Kafka {shown}) cannot cancel a running reassignment: the Admin "
                "API's alterPartitionReassignments arrived in Kafka 2.4 (KIP-455)",
                hint="wait for the reassignment to finish (python -m core verify), then execute its rollback "
                     "(python -m core rollback --action ID)")

    # --- log dirs and sizes ------------------------------------------------------------------------

    def log_dirs(self, brokers: Iterable[int] | None = None) -> LogDirs:
        """describeLogDirs of `brokers` (default: every broker in the metadata, i.e. every live broker)."""
        with self._translate("describe the brokers' log directories"):
            answer = self._admin.describe_log_dirs(brokers=None if brokers is None else list(brokers))
        dirs = []
        for entry in answer:
            broker = int(entry["broker"])
            for d in entry["log_dirs"]:
                code = int(d.get("error_code") or 0)
                replicas = sorted(
                    (Replica(t["name"], int(p["partition_index"]), int(p["partition_size"]), int(p["offset_lag"]),
                             bool(p["is_future_key"])) for t in d.get("topics") or () for p in t["partitions"]),
                    key=lambda r: (r.topic, r.partition, r.is_future))
                total, usable = d.get("total_bytes"), d.get("usable_bytes")
                dirs.append(LogDir(broker, d["log_dir"], None if code == 0 else _name(kerrors.for_code(code)),
                                   tuple(replicas), total if total is not None and total >= 0 else None,
                                   usable if usable is not None and usable >= 0 else None))
        return LogDirs(tuple(sorted(dirs, key=lambda d: (d.broker, d.path))))

    def partition_sizes(self) -> dict[TopicPartition, int]:
        """(topic, partition) -> bytes, what `plan --sizes` reads from a kafka-log-dirs file."""
        return self.log_dirs().sizes()

    # --- reassignments -----------------------------------------------------------------------------

    def reassignments(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, Reassigning]:
        """The reassignments the controller runs (of `partitions`, default all), sorted."""
        self.require_cancel()
        keys = None if partitions is None else [_TP(t, int(p)) for t, p in partitions]
        if keys == []:
            return {}
        with self._translate("list the running reassignments"):
            found = self._admin.list_partition_reassignments(keys, timeout_ms=int(self.timeout * 1000))
        out = {(tp.topic, tp.partition): Reassigning(tuple(v["replicas"]), tuple(v["adding_replicas"]),
                                                     tuple(v["removing_replicas"])) for tp, v in found.items()}
        return dict(sorted(out.items()))

    def cancel_reassignments(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, str | None]:
        """Cancel the running reassignment of each partition: {partition: None, or Kafka's error for it}."""
        self.require_cancel()
        keys = sorted({(str(t), int(p)) for t, p in partitions})
        if not keys:
            return {}
        with self._translate("cancel the reassignment"):
            answer = self._admin.alter_partition_reassignments({_TP(t, p): None for t, p in keys},
                                                               timeout_ms=int(self.timeout * 1000))
        got: Mapping = {(tp.topic, tp.partition): err for tp, err in answer.items()}
        return {k: (None if got[k] is None else _describe(got[k])) if k in got
                else "the controller did not answer for this partition" for k in keys}


def connect(bootstrap: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT) -> KafkaAdmin:
    return KafkaAdmin(bootstrap, timeout=timeout)


# kafka-python logs connection failures at ERROR/WARNING ("Unable to bootstrap", "Node ... not ready") before the
# exception Keel translates; Keel reports it once, in its own words.
# (Only when nobody configured the "kafka" logger.)
if logging.getLogger("kafka").level == logging.NOTSET:
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
