"""Security (issue 29): every ACL binding, filtered; who may do what on a resource; everything a principal may do and
through which binding; client quotas and the effective quota of a user + client id (the level it came from).
Admins edit: add / remove bindings, set / delete quotas (previewed, named risks confirmed, through the write gate,
recorded in History) and undo a recorded change.

The engine decides (core.cluster.engines.security, core.security.acls / quotas, core.cluster.security); the page
draws (dashboard.security_panels). The same page serves ZooKeeper-mode and KRaft clusters."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.cluster import engines
from core.cluster import security as cluster_security
from core.errors import KeelError
from core.policy.access import Role
from core.security import acls as authz
from core.security import quotas as q
from core.security import records
from core.security.model import (CLUSTER_NAME, DEFAULT, QUOTA_KEYS, Binding, Operation, PatternType, Permission,
                                 QuotaEntity, Resource, ResourceType)
from dashboard import actions, frame, security_panels as panels, ui
from dashboard.text import md, md_text

RESULT = "security_action_result"
ANY = "any"

ctx = frame.page_context()
conn, cfg = ctx.conn, ctx.config
st.title("Security", anchor=False)

try:
    sec = panels.read(conn)
except KeelError as e:
    st.error(f"Cannot read the ACLs and quotas of **{md(ctx.cluster.name)}**: {md_text(e)}", icon=":material/block:")
    st.stop()

acls_ = sec.acls
where = "ZooKeeper" if acls_.source == "zookeeper" else "the brokers (Admin API)"
if acls_.authorizer:  # known through the brokers: authorizer.class.name
    where += f" · authorizer `{acls_.authorizer.rsplit('.', 1)[-1]}`"
head = st.container(horizontal=True, vertical_alignment="center", gap="medium")  # wraps: the button stays whole
head.caption(f"Cluster **{md(ctx.cluster.name)}** · read from {where} · {len(acls_.bindings):,} binding(s), "
             f"{len(sec.quotas):,} quota entit{'y' if len(sec.quotas) == 1 else 'ies'}")
# an ACL or quota change moves no snapshot, so nothing redraws this page by itself: every run reads anew
head.button("Read again", key="sec_refresh", icon=":material/refresh:", width="content",
             help="Read the bindings and quotas again (changes made elsewhere)")
st.caption(panels.super_users_note(acls_) + " " + panels.no_acl_note(acls_))
reason = actions.blocked_reason(cfg, "change ACLs or quotas", needs=Role.ADMIN)


# --- writes: each runs through actions.run (the gate, the role re-checked at click time, the audit record) ----------


def _write(kind: str, target: str, work, context: str, form: actions.FormGuard) -> None:
    actions.run(RESULT, work, cfg=cfg, action=f"{kind} {target}", scope=kind, context=context, needs=Role.ADMIN,
                form=form)


def _done(applied) -> str:
    return f"{applied.summary[0].upper()}{applied.summary[1:]}; action #{applied.action_id} in History."


def _add(bindings: tuple[Binding, ...], context: str, form: actions.FormGuard) -> None:
    def work() -> str:
        h = conn.write_session()
        return _done(engines.security(h).add_acls(h, actions.store(), bindings, cluster=ctx.cluster.name,
                                                  actor=actions.actor()))
    _write("acl-add", "ACL bindings", work, context, form)


def _remove(bindings: tuple[Binding, ...], accepted: list[str], context: str, form: actions.FormGuard) -> None:
    def work() -> str:  # the engine re-reads the bindings and refuses a risk that was not accepted by its text
        h = conn.write_session()
        return _done(engines.security(h).remove_acls(h, actions.store(), bindings, cluster=ctx.cluster.name,
                                                     actor=actions.actor(), accept_risks=accepted,
                                                     relied_on=_relied_on()))
    _write("acl-remove", "ACL bindings", work, context, form)


def _alter_quota(entity: QuotaEntity, values: dict, context: str, form: actions.FormGuard) -> None:
    def work() -> str:
        h = conn.write_session()
        return _done(engines.security(h).alter_quota(h, actions.store(), entity, values, cluster=ctx.cluster.name,
                                                     actor=actions.actor()))
    _write("quota-alter", q.entity_label(entity), work, context, form)


def _relied_on() -> dict[str, str]:
    """The principal Keel itself connects to the brokers as (its SASL user): removing its last ALLOW is a named
    risk."""
    return cluster_security.relied_on(ctx.cluster.kafka_security)


def _undo(action_id: int, accepted: list[str], context: str, form: actions.FormGuard) -> None:
    def work() -> str:
        h = conn.write_session()
        return _done(cluster_security.undo(h, actions.store(), action_id, cluster=ctx.cluster.name,
                                           actor=actions.actor(), accept_risks=accepted, relied_on=_relied_on()))
    _write("security-undo", f"action #{action_id}", work, context, form)


def _confirm(label: str, key: str, risks=()) -> tuple[bool, list[str]]:
    """The confirmation box, and one box per named risk keyed by its text (a new risk is never covered by an old
    tick)."""
    for risk in risks:
        st.warning(f"**Risk:** {md(risk)}", icon=":material/report:")
    ok = st.checkbox(label, key=key, disabled=reason is not None)
    accepted = [r for r in risks if st.checkbox(f"I understand: {md(r)}", key=f"{key.split('::')[0]}_risk::{actions.fingerprint(key, r)}",
                                                disabled=reason is not None)]
    return ok and len(accepted) == len(risks), accepted


# --- the tabs ---------------------------------------------------------------------------------------------------------

bindings_tab, principal_tab, quotas_tab, undo_tab = st.tabs(
    [":material/list: Bindings", ":material/person: Principal", ":material/speed: Quotas", ":material/undo: Undo"],
    key="sec_tabs", on_change="rerun")


def _pick(label: str, options, key: str, container) -> object:
    return container.selectbox(label, [ANY, *options], key=key,
                               format_func=lambda o: "any" if o == ANY else getattr(o, "name", o))


def bindings_section() -> None:
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="small")
    type_ = _pick("Resource type", list(ResourceType), "sec_f_type", row)
    pattern = _pick("Pattern", list(PatternType), "sec_f_pattern", row)
    name = row.text_input("Resource name", key="sec_f_name", placeholder="matches name…",
                          help="The bindings that apply to this name: literal, the wildcard '*' and prefixes "
                               "(Kafka's matching)") or None
    principal = row.text_input("Principal", key="sec_f_principal", placeholder="User:alice") or None
    operation = _pick("Operation", list(Operation), "sec_f_operation", row)
    permission = _pick("Permission", list(Permission), "sec_f_permission", row)
    chosen = dict(type=type_, pattern=pattern, operation=operation, permission=permission)
    shown = panels.sorted_bindings(authz.filter_bindings(
        acls_.bindings, name=name.strip() if name else None, principal=principal.strip() if principal else None,
        **{k: (None if v == ANY else v) for k, v in chosen.items()}))
    st.caption(f"{len(shown):,} of {len(acls_.bindings):,} bindings"
               + ("" if reason else " · select rows to remove them"))
    df = panels.binding_frame(shown)
    table_key = "sec_bindings::" + actions.fingerprint([authz.binding_label(b) for b in shown])
    event = st.dataframe(df, hide_index=True, key=table_key, on_select="rerun", selection_mode="multi-row",
                         height=min(460, 38 + 35 * max(len(df), 1)), column_config=panels.BINDING_WIDTHS)
    if name and type_ != ANY:
        st.markdown(f"**Who may use {md(type_.name.lower())} {md(repr(name.strip()))}**")
        panels.who_table(acls_, type_, name.strip(), key="sec_who")
    with st.expander("As `kafka-acls --list` prints them"):
        st.code(authz.list_text(shown) or "(no bindings)", language=None)
    selected = [shown[i] for i in (event.selection.rows if event is not None else []) if i < len(shown)]
    if selected:
        remove_form(tuple(selected))
    else:  # after a removal the rows are gone, and with them the form: its outcome stays here
        actions.show(RESULT, scope="acl-remove")
    add_form()


def remove_form(removing: tuple[Binding, ...]) -> None:
    st.subheader(f"Remove {len(removing)} binding(s)", anchor=False)
    actions.show_blocked(reason)
    st.dataframe(panels.binding_frame(removing), hide_index=True, key="sec_remove_preview")
    risks = authz.removal_risks(acls_, removing, _relied_on())
    context = actions.fingerprint([authz.binding_label(b) for b in removing], risks)
    ok, accepted = _confirm(f"Remove these {len(removing)} binding(s) from **{md(ctx.cluster.name)}**",
                     f"sec_remove_confirm::{context}", risks)
    st.button("Remove bindings", type="primary", key="sec_remove_apply", icon=":material/remove_moderator:",
              disabled=reason is not None or not ok, help=reason, on_click=_remove,
              args=(removing, accepted, context, actions.guard(confirm=f"sec_remove_confirm::{context}")))
    actions.show(RESULT, scope="acl-remove", context=context)


def add_form() -> None:
    st.subheader("Add bindings", anchor=False)
    actions.show_blocked(reason)
    off = reason is not None
    c1, c2, c3 = st.columns([2, 1, 1])
    principal = c1.text_input("Principal", key="sec_add_principal", placeholder="User:alice", disabled=off,
                              help="Type:name, as --allow-principal takes it; User:* is every user")
    permission = c2.selectbox("Permission", list(Permission), key="sec_add_permission", disabled=off,
                              format_func=lambda p: p.name)
    host = c3.text_input("Host", "*", key="sec_add_host", disabled=off, help="* is every host")
    c4, c5, c6 = st.columns([1, 1, 2])
    type_ = c4.selectbox("Resource type", list(ResourceType), key="sec_add_type", disabled=off,
                         format_func=lambda t: t.name)
    pattern = c5.selectbox("Pattern", list(PatternType), key="sec_add_pattern", disabled=off,
                           format_func=lambda p: p.name)
    if type_ == ResourceType.CLUSTER:
        name = c6.text_input("Resource name", CLUSTER_NAME, key="sec_add_name_cluster", disabled=True)
    else:
        name = c6.text_input("Resource name", key="sec_add_name", disabled=off, placeholder="orders, or * for all")
    ops = st.multiselect("Operations", list(Operation), key="sec_add_ops", disabled=off,
                         format_func=lambda o: o.name)
    if not (principal or "").strip() or not (name or "").strip() or not ops:
        st.caption("Name a principal, a resource and at least one operation to see the bindings to add.")
        actions.show(RESULT, scope="acl-add")
        return
    resource = Resource(type_, name.strip(), pattern)
    adding = tuple(Binding(resource, principal.strip(), (host or "").strip(), op, permission) for op in ops)
    try:
        authz.validate_bindings(adding)
    except KeelError as e:
        actions.show_error(e)
        actions.show(RESULT, scope="acl-add")
        return
    new = tuple(b for b in adding if b not in set(acls_.bindings))
    if not new:  # e.g. just added: the outcome stays on screen
        st.caption("Every one of these bindings exists (in the list above).")
        actions.show(RESULT, scope="acl-add")
        return
    if len(new) < len(adding):
        st.caption(f"{len(adding) - len(new)} of these bindings exist already: only the others are added.")
    st.dataframe(panels.binding_frame(new), hide_index=True, key="sec_add_preview")
    context = actions.fingerprint([authz.binding_label(b) for b in new])
    ok, _ = _confirm(f"Add these {len(new)} binding(s) to **{md(ctx.cluster.name)}**", f"sec_add_confirm::{context}")
    st.button("Add bindings", type="primary", key="sec_add_apply", icon=":material/add_moderator:",
              disabled=reason is not None or not ok, help=reason, on_click=_add,
              args=(new, context, actions.guard(prefixes=("sec_add_",), confirm=f"sec_add_confirm::{context}")))
    actions.show(RESULT, scope="acl-add", context=context)


def principal_section() -> None:
    known = sorted({b.principal for b in acls_.bindings})
    c1, c2 = st.columns([1, 1], vertical_alignment="bottom")
    picked = c1.selectbox("Principal in a binding", known, index=None, key="sec_principal_pick",
                          placeholder="Choose a principal…")
    typed = c2.text_input("Or any principal", key="sec_principal_typed", placeholder="User:bob",
                          help="Also a principal no binding names: what User:* bindings give it")
    principal = (typed or "").strip() or picked
    if not principal:
        st.caption("Choose a principal to see everything it may do, and through which binding.")
        return
    df = panels.rights_frame(acls_, principal)
    st.markdown(f"**{md(principal)}**: {len(df):,} right(s) from its own and `User:*` bindings"
                + (" (a super user may do everything besides)" if acls_.super_users is None else ""))
    st.dataframe(df, hide_index=True, key="sec_rights", height=min(460, 38 + 35 * max(len(df), 1)),
                 column_config={**panels.BINDING_WIDTHS,
                                "Through binding": st.column_config.TextColumn(width="large")})


def _entity_name(text: str) -> str | None:
    t = (text or "").strip()
    return t or None


def quotas_section() -> None:
    df = panels.quota_frame(sec.quotas)
    if df.empty:
        st.caption("No client quotas are set on this cluster.")
    else:
        st.dataframe(df, hide_index=True, key="sec_quotas")
    st.markdown("**Effective quota** of a connection, resolved in Kafka's order (user + client id first, the "
                "default client id last)")
    c1, c2 = st.columns(2)
    user = c1.text_input("User", key="sec_eff_user", placeholder="alice")
    client = c2.text_input("Client id", key="sec_eff_client", placeholder="producer-1")
    if (user or "").strip() or (client or "").strip():
        st.dataframe(panels.effective_frame(sec.quotas, user.strip(), client.strip()), hide_index=True,
                     key="sec_effective")
    quota_form()


def quota_form() -> None:
    st.subheader("Set or delete a quota", anchor=False)
    actions.show_blocked(reason)
    off = reason is not None
    c1, c2 = st.columns(2)
    user = _entity_name(c1.text_input("User", key="sec_q_user", disabled=off,
                                      help=f"Blank: no user part; {DEFAULT} for the default user"))
    client = _entity_name(c2.text_input("Client id", key="sec_q_client", disabled=off,
                                        help=f"Blank: no client-id part; {DEFAULT} for the default client id"))
    if user is None and client is None:
        st.caption("Name a user, a client id or both (or <default>) to edit their quota.")
        actions.show(RESULT, scope="quota-alter")
        return
    entity = QuotaEntity(user, client)
    current = next((dict(x.values) for x in sec.quotas if x.entity == entity), {})
    st.caption(f"{md(q.entity_label(entity))}: blank a value to delete it.")
    cols = st.columns(len(QUOTA_KEYS))
    fields = {k: ui.float_field(k, current.get(k), key=f"sec_q_val::{actions.fingerprint(entity)}::{k}",
                                container=cols[i], optional=True, disabled=off)
              for i, k in enumerate(QUOTA_KEYS)}
    if ui.invalid(*fields.values()):
        actions.show(RESULT, scope="quota-alter")
        return
    values = {k: f.value for k, f in fields.items() if f.value != current.get(k)}
    if not values:
        st.caption("No change yet.")
        actions.show(RESULT, scope="quota-alter")
        return
    try:
        q.validate(entity, {k: v for k, v in values.items() if v is not None})
    except KeelError as e:
        actions.show_error(e)
        actions.show(RESULT, scope="quota-alter")
        return
    st.dataframe(pd.DataFrame([{"Key": k, "Current": current.get(k), "New": "(deleted)" if v is None else v}
                               for k, v in sorted(values.items())], columns=["Key", "Current", "New"]),
                 hide_index=True, key="sec_q_preview")
    context = actions.fingerprint(entity, sorted(values.items()), current)
    ok, _ = _confirm(f"Change the quota of **{md(q.entity_label(entity))}**", f"sec_q_confirm::{context}")
    st.button("Apply quota", type="primary", key="sec_q_apply", icon=":material/speed:",
              disabled=reason is not None or not ok, help=reason, on_click=_alter_quota,
              args=(entity, values, context, actions.guard(prefixes=("sec_q_",), confirm=f"sec_q_confirm::{context}")))
    actions.show(RESULT, scope="quota-alter", context=context)


def undo_section() -> None:
    try:
        recorded = actions.store().actions(ctx.cluster.name, kind=list(records.KINDS), limit=50)
    except Exception as e:  # an unreadable store must not take the page down
        st.error(md_text(f"Cannot read the audit store: {type(e).__name__}: {e}"), icon=":material/database:")
        return
    undoable = [a for a in recorded if a.status == "applied" and a.rollback is not None and not a.rolled_back_by]
    if not undoable:
        st.caption("No recorded ACL or quota change of this cluster can be undone.")
        actions.show(RESULT, scope="security-undo")
        return
    chosen = st.selectbox("Recorded change", undoable, key="sec_undo_pick",
                          format_func=lambda a: f"#{a.id} · {a.at} · {a.summary}")
    ui.action_link(chosen.id)
    try:
        kind, arg = records.parse_rollback(chosen.rollback)
    except KeelError as e:
        actions.show_error(e)
        return
    risks: list[str] = []
    if kind == records.QUOTA_ALTER:
        entity, values = arg
        st.markdown(f"Sets the quota of **{md(q.entity_label(entity))}** back:")
        st.dataframe(pd.DataFrame([{"Key": k, "Back to": "(deleted)" if v is None else v}
                                   for k, v in sorted(values.items())], columns=["Key", "Back to"]),
                     hide_index=True, key="sec_undo_preview")
    else:
        st.markdown(f"{'Adds back' if kind == records.ACL_ADD else 'Removes'} {len(arg)} binding(s):")
        st.dataframe(panels.binding_frame(arg), hide_index=True, key="sec_undo_preview")
        if kind == records.ACL_REMOVE:
            risks = authz.removal_risks(acls_, arg, _relied_on())
    actions.show_blocked(reason)
    context = actions.fingerprint(chosen.id, chosen.rollback, risks)
    ok, accepted = _confirm(f"Undo action #{chosen.id}", f"sec_undo_confirm::{context}", risks)
    st.button("Undo", type="primary", key="sec_undo_apply", icon=":material/undo:",
              disabled=reason is not None or not ok, help=reason, on_click=_undo,
              args=(chosen.id, accepted, context, actions.guard("sec_undo_pick", confirm=f"sec_undo_confirm::{context}")))
    actions.show(RESULT, scope="security-undo", context=context)


with bindings_tab:
    bindings_section()
with principal_tab:
    principal_section()
with quotas_tab:
    quotas_section()
with undo_tab:
    undo_section()
