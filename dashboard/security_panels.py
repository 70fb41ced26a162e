"""Who may do what (issue 29), drawn: the tables of the Security page and the "who may" section of a topic's page.

The engine decides: the bindings and quotas come from the cluster's engine (core.cluster.engines.security: ZooKeeper
or the brokers' Admin API), what they mean from core.security.acls (Kafka's authorizer) and core.security.quotas
(Kafka's eight quota levels). Nothing here resolves a right or a quota itself; these functions lay the answers out.
Quota values are the only config values shown: the reader keeps SCRAM credentials (same /config/users nodes) out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from core.cluster import engines
from core.errors import KeelError
from core.security import acls as authz
from core.security import quotas as q
from core.security.model import QUOTA_KEYS, Acls, Binding, Operation, Quota, ResourceType
from dashboard.text import md, md_text

# who, may or may not, do what, on what: the principal first (at 900 px the table scrolls sideways after ~4 columns)
BINDING_COLUMNS = ["Principal", "Permission", "Operation", "Resource type", "Resource", "Pattern", "Host"]
QUOTA_COLUMNS = ["Entity", *QUOTA_KEYS]
RIGHT_COLUMNS = ["Permission", "Operation", "Resource type", "Resource", "Pattern", "Through binding"]
WHO_COLUMNS = ["Operation", "Allowed", "Denied", "Through bindings"]
# what a topic's page answers (the spec's five, the config pair too: an SRE asks "who may change retention")
TOPIC_OPERATIONS = (Operation.READ, Operation.WRITE, Operation.DESCRIBE, Operation.ALTER, Operation.DELETE,
                    Operation.CREATE, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS)


@dataclass(frozen=True)
class Security:
    """What the cluster's engine read: every binding, and the quotas (never a credential)."""

    acls: Acls
    quotas: tuple[Quota, ...]


ACLS_MAX_AGE = 10.0  # s: how old the bindings a topic's section shows may be (the Security page always reads anew)
_ACLS_MEMO = "security.acls"


def read(conn) -> Security:
    """Bindings and quotas, read now through the connection's handle (ZkSession or KafkaAdmin); KeelError when the
    cluster cannot be read. Not cached: an ACL change moves no snapshot, and the page shows what is there now."""
    handle = conn.write_session()
    engine = engines.security(handle)
    acls = engine.read_acls(handle)
    conn.memo(_ACLS_MEMO).update(at=time.monotonic(), acls=acls)
    return Security(acls, tuple(engine.read_quotas(handle)))


def recent_acls(conn) -> Acls:
    """The bindings as read at most ACLS_MAX_AGE ago (by this or another session): a topic's section is redrawn with
    every live update of the Topics page, and through the brokers a read is two requests (DescribeAcls and the
    brokers' super.users)."""
    memo = conn.memo(_ACLS_MEMO)
    if memo.get("acls") is not None and time.monotonic() - memo.get("at", 0.0) < ACLS_MAX_AGE:
        return memo["acls"]
    handle = conn.write_session()
    acls = engines.security(handle).read_acls(handle)
    memo.update(at=time.monotonic(), acls=acls)
    return acls


def super_users_note(a: Acls) -> str:
    """What the brokers' super.users mean for every answer on the page (they pass every check)."""
    if a.super_users is None:
        where = ("from ZooKeeper (they are in each broker's server.properties)" if a.source == "zookeeper" else
                 "through the Admin API (the brokers do not tell them)")
        return f"The brokers' `super.users` cannot be seen {where}: they may do everything, whatever the bindings say."
    if not a.super_users:
        return "No `super.users` are configured on the brokers."
    return "`super.users` (may do everything, whatever the bindings say): " + ", ".join(md(u) for u in a.super_users)


def no_acl_note(a: Acls) -> str:
    if a.authorizer == "":
        return "The brokers run without an authorizer (`authorizer.class.name` is empty): no binding is enforced."
    return ("A resource with no binding at all is refused to everyone but super users, unless the brokers set "
            "`allow.everyone.if.no.acl.found=true`.")


def binding_frame(bindings) -> pd.DataFrame:
    rows = [{"Resource type": b.resource.type.name, "Pattern": b.resource.pattern.name, "Resource": b.resource.name,
             "Principal": b.principal, "Host": b.host, "Operation": b.operation.name, "Permission": b.permission.name}
            for b in bindings]
    return pd.DataFrame(rows, columns=BINDING_COLUMNS)


BINDING_WIDTHS = {"Permission": st.column_config.TextColumn(width="small"),
                  "Pattern": st.column_config.TextColumn(width="small"),
                  "Host": st.column_config.TextColumn(width="small")}


def sorted_bindings(bindings) -> list[Binding]:
    return sorted(bindings, key=lambda b: (b.resource.key, b.principal, b.host, b.operation.name, b.permission.name))


def quota_text(key: str, value: float | None) -> str:
    """A quota value with its unit, as an SRE reads it ("" where the entity does not set the key)."""
    if value is None:
        return ""
    if key.endswith("_byte_rate"):
        return f"{value:,.0f} B/s"
    if key == "request_percentage":
        return f"{value:g} %"
    return f"{value:g}/s"  # controller_mutation_rate: partition mutations per second


def quota_frame(quotas) -> pd.DataFrame:
    """One row per quota entity (Kafka's words: "user alice, client-id c1", "default user")."""
    rows = []
    for quota in quotas:  # in the reader's order (users, then client ids)
        row = {"Entity": q.entity_label(quota.entity)}
        row.update({k: quota_text(k, quota.values.get(k)) for k in QUOTA_KEYS})
        rows.append(row)
    return pd.DataFrame(rows, columns=QUOTA_COLUMNS)


def effective_frame(quotas, user: str, client: str) -> pd.DataFrame:
    """Per key, the quota Kafka applies to (user, client) and the level it came from (core.security.quotas)."""
    found = q.effective(quotas, user, client)
    rows = []
    for k in QUOTA_KEYS:
        hit = found.get(k)
        rows.append({"Key": k, "Value": "unlimited" if hit is None else quota_text(k, hit[0]),
                     "From": "no level sets it" if hit is None else q.entity_label(hit[1])})
    return pd.DataFrame(rows, columns=["Key", "Value", "From"])


def rights_frame(a: Acls, principal: str) -> pd.DataFrame:
    rows = [{"Resource type": r.resource.type.name, "Pattern": r.resource.pattern.name, "Resource": r.resource.name,
             "Operation": r.operation.name, "Permission": r.permission.name,
             "Through binding": authz.binding_label(r.binding)} for r in authz.rights_of(a, principal)]
    return pd.DataFrame(rows, columns=RIGHT_COLUMNS)


def who_frame(a: Acls, type_: ResourceType, name: str) -> pd.DataFrame:
    """Per operation: the principals named in bindings who end up allowed (deny applied), who is denied, and the
    bindings behind both (core.security.acls.who_may / principals_allowed)."""
    access = authz.who_may(a, type_, name)
    rows = []
    for op in TOPIC_OPERATIONS:
        acc = access.get(op)
        if acc is None:
            continue
        allowed = sorted(authz.principals_allowed(a, op, type_, name))
        denied = sorted({b.principal for b in acc.denied})
        rows.append({"Operation": op.name, "Allowed": ", ".join(allowed) or "only super users",
                     "Denied": ", ".join(denied),
                     "Through bindings": "; ".join(authz.binding_label(b) for b in (*acc.denied, *acc.allowed))})
    return pd.DataFrame(rows, columns=WHO_COLUMNS)


def who_table(a: Acls, type_: ResourceType, name: str, *, key: str) -> None:
    st.dataframe(who_frame(a, type_, name), hide_index=True, key=key,
                 column_config={"Allowed": st.column_config.TextColumn(width="medium"),
                                "Through bindings": st.column_config.TextColumn(width="large")})


def topic_access(conn, topic: str) -> None:
    """A topic page's section: who may read, write, describe, alter, delete it (the hook in views/topics.py).
    A cluster whose ACLs cannot be read says why and the rest of the page is unaffected."""
    with st.expander("Who may use this topic (ACLs)", icon=":material/shield_person:"):
        try:
            acls = recent_acls(conn)
        except KeelError as e:
            st.caption(f"The ACLs could not be read: {md_text(e)}")
            return
        if not acls.bindings:
            st.caption("The cluster has no ACL bindings.")
        else:
            who_table(acls, ResourceType.TOPIC, topic, key="topic_who_may")
        st.caption(super_users_note(acls) + " " + no_acl_note(acls))
        st.page_link("views/security.py", label="All bindings on the Security page", icon=":material/shield:")
