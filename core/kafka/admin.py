"""Kafka's Admin API through kafka-python: the ONLY module that imports it (as core/zk is for kazoo).

ZooKeeper holds assignments, leaders and configs; what only the brokers know comes from here:
* `log_dirs()` / `partition_sizes()`: describeLogDirs of every live broker, the same document
  `kafka-log-dirs.sh --describe` prints (core.kafka.logdirs), so plans get real sizes without a file upload;
* `reassignments()`: listPartitionReassignments (Kafka 2.4+), the reassignments the controller is running;
* `broker_configs(brokers)`: describeConfigs of each broker's own settings with their sources and synonyms (Kafka
  1.1+): server.properties and Kafka's defaults, which ZooKeeper does not hold (core.kafka.broker_configs);
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
import itertools
import re
import time
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

import kafka.errors as kerrors
from kafka import TopicPartition as _TP
from kafka.admin import ConfigResource, ConfigResourceType, ConfigSourceType
from kafka.admin import AlterConfigOp  # the reassignment writes
from kafka.protocol.admin import AlterPartitionReassignmentsRequest as _AlterReassignments

from core.errors import KeelError
from core.kafka.admin_client import AUTH_HINT, CAUSES, AdminClient, is_auth_failure, is_tls_failure, security_kwargs
from core.kafka.bootstrap import parse_bootstrap
from core.kafka.client_config import KafkaClientSecurity
from core.kafka.logdirs import LogDir, LogDirs, Replica
from core.kafka.write_requests import WriteRequests

__all__ = ["DEFAULT_TIMEOUT", "CANCEL_SINCE", "KafkaAdmin", "Reassigning", "KafkaAdminError",
           "KafkaUnreachableError", "KafkaUnsupportedError", "connect"]

DEFAULT_TIMEOUT = 10.0
CANCEL_SINCE = (2, 4)  # AlterPartitionReassignments / ListPartitionReassignments (KIP-455)
_ALTER_REASSIGNMENTS = 45  # Kafka's ApiKeys.ALTER_PARTITION_REASSIGNMENTS
_LIST_REASSIGNMENTS = 46
_DESCRIBE_QUORUM = 55  # KIP-595, answered by KRaft brokers and controllers only
_DESCRIBE_TOPIC_PARTITIONS = 75  # KIP-966, Kafka 3.7+ brokers in KRaft mode

TopicPartition = tuple[str, int]
# one broker property as a broker describes it: (value, source, ((synonym, value, source), ...)), sources named as
# Kafka names them (STATIC_BROKER_CONFIG, ...), synonyms in Kafka's order of precedence
BrokerConfig = tuple[str | None, str, tuple[tuple[str, str | None, str], ...]]


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


_client_ids = itertools.count(1)


class KafkaAdmin(WriteRequests):  # the topic and election writes: core.kafka.write_requests
    """One Admin API client for the brokers of `bootstrap` ("host:port,host:port"), connecting as `security`
    says (Kafka's client properties, core.kafka.client_config; None: PLAINTEXT). Close it (or use `with`)."""

    def __init__(self, bootstrap: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT,
                 security: KafkaClientSecurity | None = None, client_id: str | None = None):
        self.servers = parse_bootstrap(bootstrap) if isinstance(bootstrap, str) else \
            parse_bootstrap(",".join(bootstrap))
        self.bootstrap = ",".join(self.servers)
        self.security = security
        self.timeout = float(timeout)
        if not self.timeout > 0:
            raise KafkaAdminError(f"the Kafka timeout must be positive, got {timeout!r}")
        ms = int(self.timeout * 1000)
        self._closed = False
        # Numbered like Kafka's own "adminclient-N": the client's I/O thread carries the id, which is how the
        # connection failures it logs are told apart from other clients' (core.kafka.admin_client.CAUSES).
        self.client_id = client_id or f"keel-admin-{next(_client_ids)}"
        options = security_kwargs(security)
        with self._translate("connect"):
            self._admin = AdminClient(bootstrap_servers=list(self.servers), client_id=self.client_id,
                                  request_timeout_ms=ms, bootstrap_timeout_ms=ms, reconnect_backoff_max_ms=1000,
                                  connections_max_idle_ms=max(ms * 3, 60_000), **options)

    @classmethod
    def for_cluster(cls, cluster, *, timeout: float | None = None) -> "KafkaAdmin":
        """The client for a keel.toml cluster (core.policy.config.ClusterConfig with `bootstrap`)."""
        if not cluster.bootstrap:
            raise KafkaAdminError(f"cluster {cluster.name} has no bootstrap servers in keel.toml",
                                  hint='add bootstrap = "host:port,..." (and command_config for SASL / TLS)')
        return cls(cluster.bootstrap, security=cluster.kafka_security,
                   timeout=timeout if timeout is not None else min(10.0, cluster.connect_timeout * 2))

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
        except (kerrors.SaslAuthenticationFailedError, kerrors.UnsupportedSaslMechanismError) as e:
            raise KafkaAdminError(f"could not {what}: the brokers of {self.bootstrap} refused Keel's credentials "
                                  f"({_describe(e)})", hint=AUTH_HINT) from None
        except (kerrors.KafkaTimeoutError, kerrors.NodeNotReadyError, kerrors.KafkaConnectionError,
                kerrors.RequestTimedOutError, TimeoutError, ConnectionError) as e:
            cause = CAUSES.last(self.client_id)
            if cause is not None and is_auth_failure(cause):
                raise KafkaAdminError(f"could not {what}: the brokers of {self.bootstrap} refused Keel's "
                                      f"credentials ({cause})", hint=AUTH_HINT) from None
            if cause is not None and is_tls_failure(cause):
                raise KafkaAdminError(
                    f"could not {what}: no TLS connection to {self.bootstrap} ({cause})",
                    hint="check security.protocol (SSL / SASL_SSL only where the listener speaks TLS), "
                         "ssl.truststore.location (the CA that signed the brokers' certificates) and, where the "
                         "brokers require client certificates, ssl.keystore.location") from None
            seen = f"; last connection error: {cause}" if cause else ""
            raise KafkaUnreachableError(
                f"could not {what}: no Kafka broker of {self.bootstrap} answered within {self.timeout:g} s "
                f"({_name(e)}{seen})", hint="check the bootstrap servers (--bootstrap-server, or bootstrap in "
                "keel.toml), that the brokers' advertised listeners are reachable from here, and that "
                "security.protocol matches the listener (--command-config, or command_config in keel.toml)") \
                from None
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

    def _to_controller(self, call, *, resend: bool = True):
        """`call()`, a request kafka-python sends to the controller it found once and kept. Under KRaft that is a
        broker DescribeCluster named at random; when it has gone (stopped, fenced, killed) the request is not sent
        (UnknownBrokerId, NodeNotReady) or its connection is refused: ask for the controller again and send it once
        more (without this, a view whose "controller" broker died failed every poll until the process restarted). A
        broker that has just registered may be named before the client's metadata lists it: a few more tries, 0.2 s
        apart growing, for at most the request timeout. `resend=False` for a request that is not the same when sent
        twice (a create, a delete): a refused connection may have dropped after the request went out, so it is not
        sent again."""
        deadline = time.monotonic() + self.timeout
        for attempt in itertools.count(1):
            try:
                return call()
            except (kerrors.UnknownBrokerIdError, kerrors.NodeNotReadyError, kerrors.KafkaConnectionError) as e:
                if attempt >= 5 or (not resend and isinstance(e, kerrors.KafkaConnectionError)) or time.monotonic() + 0.2 * attempt > deadline:
                    raise
                self._admin._controller_id = None
                with contextlib.suppress(Exception):
                    self._admin._client.cluster.request_update()
                time.sleep(0.2 * attempt)

    # --- versions ----------------------------------------------------------------------------------

    @property
    def version(self) -> tuple[int, ...] | None:
        """The broker version kafka-python inferred from ApiVersions, e.g. (3, 9); None if unknown."""
        with contextlib.suppress(Exception):
            return tuple(self._admin._manager.broker_version)
        return None

    def _api_keys(self) -> set[int]:
        # the raw keys: kafka-python's api_versions() maps each to its ApiKey enum and fails on a key newer than
        # itself (Kafka 4.x answers some), which would hide every other
        with contextlib.suppress(Exception):
            return {int(k) for k in self._admin._manager.broker_version_data.api_versions}
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

    def log_dirs(self, brokers: Iterable[int] | None = None,
                 partitions: Iterable[TopicPartition] | None = None) -> LogDirs:
        """describeLogDirs of `brokers` (default: every broker in the metadata, i.e. every live broker): one request
        per broker, about `partitions` only when given (default: every replica it holds)."""
        wanted: dict[str, list[int]] | None = None if partitions is None else {}
        for t, p in partitions or ():
            wanted.setdefault(str(t), []).append(int(p))
        with self._translate("describe the brokers' log directories"):
            # retried as a controller request is: a broker just registered may not be in the client's metadata yet
            answer = self._to_controller(lambda: self._admin.describe_log_dirs(
                topic_partitions=wanted, brokers=None if brokers is None else list(brokers)))
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
            found = self._to_controller(lambda: self._admin.list_partition_reassignments(
                keys, timeout_ms=int(self.timeout * 1000)))
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
            answer = self._to_controller(lambda: self._admin.alter_partition_reassignments(
                {_TP(t, p): None for t, p in keys}, timeout_ms=int(self.timeout * 1000)))
        got: Mapping = {(tp.topic, tp.partition): err for tp, err in answer.items()}
        return {k: (None if got[k] is None else _describe(got[k])) if k in got
                else "the controller did not answer for this partition" for k in keys}

    # --- reassignment writes (the KRaft engine's, core.kafka.reassign_writes) ---------------------------

    def alter_reassignments(self, targets: Mapping[TopicPartition, Sequence[int]]) -> dict[TopicPartition, str | None]:
        """AlterPartitionReassignments with a target replica list per partition (KIP-455), as Kafka's tool starts a
        reassignment: {partition: None, or Kafka's error for it, "ErrorName: Kafka's own message"}. The partitions
        Kafka accepted are being reassigned even when others were refused."""
        self.require_cancel()
        wanted = {(str(t), int(p)): [int(b) for b in r] for (t, p), r in targets.items()}
        if not wanted:
            return {}
        request = _AlterReassignments(timeout_ms=int(self.timeout * 1000), topics=AdminClient.
                                      _process_alter_partition_reassignments_input({_TP(*k): r for k, r in wanted.items()}))
        with self._translate("start the reassignment"):
            response = self._to_controller(lambda: self._admin._manager.run(
                self._admin._send_request_to_controller, request, lambda r: [kerrors.for_code(r.error_code)]))
        got = {(t.name, p.partition_index): None if not p.error_code else  # kafka-python's call drops the message
               (f"{_name(kerrors.for_code(p.error_code))}: {p.error_message}" if p.error_message
                else _describe(kerrors.for_code(p.error_code))) for t in response.responses for p in t.partitions}
        return {k: got[k] if k in got else "the controller did not answer for this partition" for k in sorted(wanted)}

    def alter_config_keys(self, changes: Mapping[tuple[str, str], Mapping[str, str | None]], *,
                          validate_only: bool = False) -> dict[tuple[str, str], str | None]:
        """IncrementalAlterConfigs (Kafka 2.3+) of ("topic" | "broker", name) resources: SET each key to its value,
        DELETE it for None; keys not named keep their values. {resource: None, or Kafka's error with its message}.
        A broker's resource goes to that broker, as Kafka's Admin client sends it; each resource succeeds or fails
        on its own."""
        kinds = {"topic": ConfigResourceType.TOPIC, "broker": ConfigResourceType.BROKER}
        asked = {(kind, str(name)): ConfigResource(kinds[kind], str(name), {
            k: (AlterConfigOp.DELETE, None) if v is None else (AlterConfigOp.SET, str(v)) for k, v in keys.items()})
            for (kind, name), keys in sorted(changes.items()) if keys}
        if not asked:
            return {}
        with self._translate("change the topic and broker configs"):
            # a broker just registered may be missing from the client's metadata: _to_controller's retry (SET and
            # DELETE are idempotent, so resending to the brokers already answered is harmless)
            answer = self._to_controller(lambda: self._admin.alter_configs(
                list(asked.values()), validate_only=validate_only, raise_on_unknown=False, incremental=True))
        results = {(kind, name): (answer.get(kind) or {}).get(name) for kind, name in asked}
        return {k: None if v == "OK" else re.sub(r"^\[Error -?\d+\] ", "", v) if v else
                "the brokers did not answer for it" for k, v in results.items()}

    # --- the brokers' own settings ----------------------------------------------------------------------

    def broker_configs(self, brokers: Iterable[int], names: Sequence[str] | None = None
                       ) -> dict[int, dict[str, BrokerConfig] | str]:
        """describeConfigs of each broker's BROKER resource with synonyms (DescribeConfigs v1, Kafka 1.1+): {broker:
        {property: BrokerConfig}}, or for a broker that did not answer, why. A broker resource is answered only by
        that broker (ConfigHelper: "Unexpected broker id"): one request per broker, all in flight at once, the whole
        bounded by the client's timeout. `names`: only these properties (None: every one)."""
        ids = sorted({int(b) for b in brokers})
        if not ids:
            return {}
        ms = int(self.timeout * 1000)
        manager = self._admin._manager
        keys = list(names) if names else None

        def send(b: int) -> object:
            request = AdminClient._describe_configs_request(
                [ConfigResource(ConfigResourceType.BROKER, str(b), keys)], include_synonyms=True)
            try:
                return manager.send(request, node_id=b)
            except Exception as e:  # not in the metadata (UnknownBrokerIdError), not ready
                return e

        async def ask() -> dict[int, object]:
            pending = {b: send(b) for b in ids}
            unknown = [b for b, sent in pending.items() if isinstance(sent, kerrors.UnknownBrokerIdError)]
            if unknown:  # the client's metadata predates the broker (it registered or came back since): once more
                with contextlib.suppress(Exception):
                    await manager.cluster.refresh_metadata()
                pending.update({b: send(b) for b in unknown})
            answers: dict[int, object] = {}
            for b, sent in pending.items():
                if isinstance(sent, Exception):
                    answers[b] = sent
                    continue
                try:
                    answers[b] = await manager.wait_for(sent, ms)
                except Exception as e:  # one broker's failure is that broker's answer
                    answers[b] = e
            return answers

        with self._translate("describe the brokers' configs"):
            answers = manager.run(ask)
        return {b: _broker_answer(b, answer) for b, answer in answers.items()}

    # --- the cluster's metadata (read without ZooKeeper) ------------------------------------------------

    def describe_cluster(self) -> dict:
        """DescribeCluster (Metadata before 2.8): {"cluster_id", "controller_id", "brokers": [{"broker_id",
        "host", "port", "rack"}]}, the live brokers only. Under KRaft, controller_id is a broker the client may send
        controller requests to, not the quorum's leader: that is `quorum()`'s."""
        with self._translate("describe the cluster"):
            return self._admin.describe_cluster()

    def topic_names(self) -> list[str]:
        with self._translate("list the topics"):
            return sorted(self._admin.list_topics())

    def topic_partitions(self, topics: Sequence[str], *, page: int = 2000) -> list[dict]:
        """Every partition of `topics` as the brokers describe it: one dict per topic ("name", "topic_id",
        "partitions": [{"partition_index", "leader_id", "leader_epoch", "replica_nodes", "isr_nodes",
        "offline_replicas", "eligible_leader_replicas"?}]). Through DescribeTopicPartitions (KIP-966, Kafka 3.7+ in
        KRaft mode) in pages of `page` partitions; through Metadata where brokers do not have it (ZooKeeper mode)."""
        names = list(topics)
        if not names:
            return []
        if _DESCRIBE_TOPIC_PARTITIONS in self._api_keys():
            by_name: dict[str, dict] = {}
            cursor = None
            with self._translate("describe the topics' partitions"):
                while True:
                    answer = self._admin.describe_topic_partitions(names, response_partition_limit=page,
                                                                   cursor=cursor)
                    for t in answer["topics"]:
                        seen = by_name.setdefault(t["name"], {**t, "partitions": []})
                        seen["partitions"].extend(t["partitions"])
                        if int(t.get("error_code") or 0):  # a later page from a broker that lags: not all of it
                            seen["error_code"] = t["error_code"]
                    cursor = answer.get("next_cursor")
                    if not cursor:
                        break
            return [by_name[n] for n in sorted(by_name)]
        with self._translate("describe the topics"):
            return sorted(self._admin.describe_topics(names), key=lambda t: t["name"])

    def topic_overrides(self, topics: Sequence[str], *, batch: int = 500) -> dict[str, dict[str, str]]:
        """Each topic's own settings (DYNAMIC_TOPIC_CONFIG: what /config/topics/<t> holds in ZooKeeper mode), in
        requests of `batch` topics. A sensitive value the brokers do not return is left out. A topic the answering
        broker did not describe (it has not applied the topic's record yet, or it was deleted meanwhile: kafka-python
        drops the error and leaves no settings at all, not even defaults) is left out of the answer, never given an
        empty config."""
        names = list(topics)
        out: dict[str, dict[str, str]] = {}
        for i in range(0, len(names), batch):
            chunk = [ConfigResource(ConfigResourceType.TOPIC, n) for n in names[i:i + batch]]
            with self._translate("describe the topics' configs"):
                answer = self._admin.describe_configs(chunk, config_filter="all")
            for name, entries in (answer.get("topic") or {}).items():
                if not entries:
                    continue
                out[name] = {k: v["value"] for k, v in sorted(entries.items())
                             if v.get("config_source") == "DYNAMIC_TOPIC_CONFIG" and v.get("value") is not None}
        return out

    def ask(self, request, what: str):
        """Send one protocol request kafka-python has no call for (or whose answer it would reshape) to any broker and
        wait for its answer, within the client's timeout; failures translated as every other call's."""
        manager = self._admin._manager

        async def send():
            return await manager.wait_for(manager.send(request), int(self.timeout * 1000))

        with self._translate(what):
            return manager.run(send)

    def quorum(self) -> dict | None:
        """DescribeQuorum of the metadata log (KRaft only): leader, epoch, high watermark, voters and observers with
        their log end offsets; None for brokers in ZooKeeper mode, which do not answer it."""
        if _DESCRIBE_QUORUM not in self._api_keys():
            return None
        with self._translate("describe the KRaft quorum"):
            return self._admin.describe_metadata_quorum()


def _source(code: object) -> str:
    try:
        return ConfigSourceType(int(code)).name
    except (TypeError, ValueError):
        return "UNKNOWN"


def _broker_answer(broker: int, answer: object) -> dict[str, BrokerConfig] | str:
    """One broker's DescribeConfigs response as {property: BrokerConfig}, or why there is none."""
    if isinstance(answer, kerrors.UnknownBrokerIdError):
        return f"broker {broker} is not in the brokers' metadata (not running?)"
    if isinstance(answer, kerrors.KafkaTimeoutError):
        return f"no answer in time ({answer})"
    if isinstance(answer, Exception):
        return _describe(answer)
    results = getattr(answer, "results", None) or []
    if not results:
        return f"broker {broker} answered nothing"
    result = results[0]
    code = int(getattr(result, "error_code", 0) or 0)
    if code:
        message = getattr(result, "error_message", None)
        return _describe(kerrors.for_code(code)) + (f" ({message})" if message else "")
    out: dict[str, BrokerConfig] = {}
    for entry in result.configs:
        c = entry.to_dict()
        syns = tuple((str(x["name"]), x.get("value"), _source(x.get("source"))) for x in c.get("synonyms") or ())
        out[str(c["name"])] = (c.get("value"), _source(c.get("config_source")), syns)
    return out


def connect(bootstrap: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT,
            security: KafkaClientSecurity | None = None) -> KafkaAdmin:
    return KafkaAdmin(bootstrap, timeout=timeout, security=security)
