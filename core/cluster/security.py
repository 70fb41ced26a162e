"""ACL and quota helpers for the pages and the CLI, whichever engine the cluster is written through
(core.cluster.engines.security): the principals Keel itself relies on, and undoing a recorded change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.errors import ValidationError
from core.security import records

if TYPE_CHECKING:
    from core.audit.store import Store
    from core.writes import Applied

Handle = Any  # ZkSession | KafkaAdmin


def relied_on(security: Any) -> dict[str, str]:
    """{principal: why} for the principal Keel connects to the brokers as: the SASL user of its client settings
    (core.kafka.client_config.KafkaClientSecurity, from --command-config or keel.toml's command_config). Empty when
    Keel connects without SASL (a PLAINTEXT or TLS client's principal is the broker's to derive)."""
    username = getattr(security, "username", None)
    if not username:
        return {}
    mechanism = getattr(security, "mechanism", None) or "SASL"
    return {f"User:{username}": f"Keel connects to the brokers as it ({mechanism})"}


def undo(handle: Handle, store: "Store", action_id: int, *, cluster: str, actor: str | None = None,
         accept_risks: bool | Sequence[str] = False, relied_on: Mapping[str, str] | None = None) -> "Applied":
    """Execute the rollback recorded with ACL / quota action `action_id` through the same engine: the bindings an
    acl-add added are removed (with the removal's named risks), those an acl-remove removed added back, a
    quota-alter's keys set back to what they were (deleted where they were not set). The undo is recorded as an
    action of its own; ValidationError for an action that is not an applied ACL / quota change of this cluster."""
    from core.cluster.engines import security

    action = store.action(action_id)
    if action is None or action.kind not in records.KINDS:
        raise ValidationError(f"action {action_id} is not a recorded ACL or quota change",
                              hint="History (or the store) lists the actions; kinds acl-add, acl-remove, quota-alter")
    if action.status != "applied":
        raise ValidationError(f"action {action_id} was not applied (status {action.status}): there is nothing to undo")
    if action.cluster != cluster:
        raise ValidationError(f"action {action_id} was made on cluster {action.cluster}, not {cluster}",
                              hint="undo it on the cluster it changed")
    kind, arg = records.parse_rollback(action.rollback)
    engine = security(handle)
    if kind == records.ACL_ADD:
        return engine.add_acls(handle, store, arg, cluster=cluster, actor=actor)
    if kind == records.ACL_REMOVE:
        return engine.remove_acls(handle, store, arg, cluster=cluster, actor=actor, accept_risks=accept_risks,
                                  relied_on=relied_on)
    entity, values = arg
    return engine.alter_quota(handle, store, entity, values, cluster=cluster, actor=actor)
