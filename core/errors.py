"""Typed errors. Every refusal Keel makes is one of these, with a message a person can act on.

Where Kafka has its own wording for a refusal, the message uses it verbatim so that an SRE who
knows `kafka-topics.sh` recognises it. The CLI maps KeelError to exit status 1 (2 for usage);
the dashboard shows `str(error)` with `st.error`.
"""

from __future__ import annotations


class KeelError(Exception):
    """Base of every error Keel raises on purpose."""

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


# --- connecting -----------------------------------------------------------------------------


class ConnectStringError(KeelError):
    """A ZooKeeper connect string that cannot be parsed."""


class ZooKeeperUnreachableError(KeelError):
    """No ZooKeeper server answered within the connect timeout."""


class ZooKeeperAuthError(KeelError):
    """ZooKeeper refused the credentials or the ACLs deny the read."""


class NoKafkaError(KeelError):
    """The path reached holds no ZooKeeper-mode Kafka cluster (no brokers registered)."""


class KRaftControllerError(KeelError):
    """A KRaft controller owns the cluster; ZooKeeper writes would be ignored or harmful."""


class MigrationInProgressError(KRaftControllerError):
    """A ZooKeeper -> KRaft migration is under way (/migration exists, or a KRaft controller owns the cluster):
    every write is refused, whatever the front end, until it is finished or rolled back."""


# --- payloads -------------------------------------------------------------------------------


class CorruptZnodeError(KeelError):
    """A znode whose payload is not what Kafka writes there."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"corrupt znode {path}: {reason}")
        self.path = path
        self.reason = reason


class SnapshotFormatError(KeelError):
    """A snapshot JSON document that is not `keel.snapshot/1`."""


# --- validation (Kafka's exception names) ---------------------------------------------------


class ValidationError(KeelError):
    """Input that fails validation; nothing was written."""


class InvalidPartitionsError(ValidationError):
    pass


class InvalidReplicationFactorError(ValidationError):
    pass


class InvalidReplicaAssignmentError(ValidationError):
    pass


class AdminOperationError(ValidationError):
    pass


class InvalidTopicError(ValidationError):
    pass


class TopicExistsError(ValidationError):
    pass


class UnknownTopicError(ValidationError):
    pass


class InvalidConfigurationError(ValidationError):
    pass


class NumberFormatError(ValidationError):
    """Text typed where a number belongs that is not one (or is outside the field's own bounds); `field` names
    the field and `text` is what was typed (core.numbers)."""

    def __init__(self, message: str, field: str, text: str | None, *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.field = field
        self.text = text


class PlanError(ValidationError):
    """A reassignment / election / topics-to-move document that Kafka's tools would refuse."""


class RatesError(PlanError):
    """Partition write rates that cannot be estimated (fewer than two samples) or a --rates document that is not
    one (core.balance.rates)."""


class TooLargeError(ValidationError):
    """An input whose size Keel bounds before doing the work (ZooKeeper's request limit, the controller)."""


class RiskNotAcceptedError(ValidationError):
    """A write Kafka would accept but that harms the cluster (e.g. a topic nobody can write to); it needs
    the operator's explicit confirmation of exactly these risks. `risks` lists them."""

    def __init__(self, message: str, risks: tuple[str, ...] = (), *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.risks = tuple(risks)


# --- state conflicts ------------------------------------------------------------------------


class BusyError(KeelError):
    """Kafka is already doing the same kind of thing (an /admin node exists)."""


class ReassignmentInProgressError(BusyError):
    pass


class ElectionInProgressError(BusyError):
    pass


class ReassignmentNotRunningError(ValidationError):
    """An action on a running reassignment (its progress, its throttle) when none runs."""


class PermissionDeniedError(KeelError):
    """The current role or a read-only instance forbids the action."""


# --- ZooKeeper operations (raised by core.zk so that callers never import kazoo) ------------


class ZkOperationError(KeelError):
    """A ZooKeeper call failed; `path` names the znode involved."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


class ZkNoNodeError(ZkOperationError):
    pass


class ZkNodeExistsError(ZkOperationError):
    pass


class ZkBadVersionError(ZkOperationError):
    """A conditional write lost a race: the znode changed since it was read."""


class ZkNotEmptyError(ZkOperationError):
    pass


# --- local files: inputs, outputs, the action history, TLS material --------------------------


class InputFileError(ValidationError):
    """A file named on the command line (or in the config) that cannot be used: missing, a directory,
    unreadable, or larger than Keel reads; `path` names it."""

    def __init__(self, message: str, path: str | None = None, *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.path = path


class OutputPathError(ValidationError):
    """An output path that cannot be written (its directory is missing, it is a directory, ...)."""

    def __init__(self, message: str, path: str | None = None, *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.path = path


class StoreError(KeelError):
    """The action history database (KEEL_STORE / --store) cannot be opened or written."""

    def __init__(self, message: str, path: str | None = None, *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.path = path


class TlsFileError(ValidationError):
    """A TLS file (CA bundle, client certificate or key) that is missing, unreadable or not PEM;
    `path` names it, `option` says which one it is (e.g. --zk-tls-ca)."""

    def __init__(self, message: str, path: str | None = None, option: str | None = None, *,
                 hint: str | None = None):
        super().__init__(message, hint=hint)
        self.path = path
        self.option = option


class SecretError(ValidationError):
    """Credentials that cannot be used (a digest file missing, empty, or not user:password); never echoes them."""


def changed_meanwhile(what: str) -> str:
    """The message of a write refused because what it was computed from changed before it landed."""
    return (f"{what} changed while it was being written (another client wrote it first); nothing was written. "
            "Try again.")
