"""Who is at the keyboard, for the dashboard: the session's `core.policy.access.Identity` from Streamlit's st.user
(oidc), the authenticating proxy's headers (proxy, read once per session from st.context.headers), or the local
user (none); the sign-in screen, the refusal of a sign-in, and the sidebar's identity line.

Failed sign-ins are recorded in the audit store (kind "sign-in", status failed, no cluster): a token naming nobody,
a request that did not come through the proxy (forged identity headers), and, in oidc mode, an error the identity
provider returned to Streamlit's callback (Streamlit handles that route itself and logs it: a handler on its
logger records it). Nothing here ever shows or records a secret: not the proxy's shared secret, not
.streamlit/secrets.toml."""

from __future__ import annotations

import logging
import os
import threading

import streamlit as st

from core.policy import access
from core.policy.access import Identity, SignInError
from core.policy.config import KeelConfig
from core.audit.store import NO_CLUSTER, Store, default_actor
from dashboard.text import md, md_text

log = logging.getLogger(__name__)

SESSION_KEY = "keel_identity"  # (auth settings it was read with, Identity | SignInError)
RECORDED_KEY = "keel_signin_recorded"
BIND_ENV = "KEEL_BIND_ADDRESS"
UNVERIFIED = "(unverified)"  # the actor of a refused sign-in: who it claimed to be is its target
_AUTH_LOGGER = "streamlit.web.server.starlette.starlette_auth_routes"


def request_headers() -> dict[str, str]:
    """The headers of the request that opened this session (the websocket handshake)."""
    try:
        return {k: v for k, v in st.context.headers.items()}
    except Exception:  # no request (a bare script run)
        return {}


def user_claims() -> dict:
    """Streamlit's st.user: the ID token's claims once signed in (oidc)."""
    try:
        return dict(st.user.to_dict())
    except Exception:
        return {}


def exposed() -> bool:
    """Does this dashboard listen beyond loopback? Streamlit's server.address (unset: every interface) and
    $KEEL_BIND_ADDRESS (what scripts/run.sh and the Docker image bind) must both be loopback for it not to."""
    addresses = [st.get_option("server.address")]
    if os.environ.get(BIND_ENV, "").strip():
        addresses.append(os.environ[BIND_ENV].strip())
    return not all(access.is_loopback(a) for a in addresses)


def session_identity() -> Identity:
    """The identity the router resolved for this session (the local user before it ran)."""
    found = st.session_state.get(SESSION_KEY)
    if found is not None and isinstance(found[1], Identity):
        return found[1]
    return access.local_identity(default_actor())


def decision(cfg: KeelConfig, cluster: str) -> access.Decision:
    return access.resolve(session_identity(), cfg, cluster, exposed=exposed())


# --- resolving the session's identity (the router calls `require` on every run) ------------------------------


def require(cfg: KeelConfig) -> Identity:
    """The session's identity; draws the sign-in screen or the refusal and stops the run when there is none."""
    mode = cfg.auth.mode
    if mode == access.NONE:
        who: Identity | SignInError = access.local_identity(default_actor())
    elif mode == access.OIDC:
        _watch_provider_errors()
        claims = user_claims()
        if not claims.get("is_logged_in"):
            st.session_state.pop(SESSION_KEY, None)
            _sign_in_screen(cfg)
            st.stop()
        try:
            who = access.identity_from_claims(claims, cfg.auth)
        except SignInError as e:
            who = e
    else:  # proxy: the headers of the request that opened the session, read once
        cached = st.session_state.get(SESSION_KEY)
        if cached is not None and cached[0] == cfg.auth:
            who = cached[1]
        else:
            try:
                who = access.identity_from_headers(request_headers(), cfg.auth)
            except SignInError as e:
                who = e
    st.session_state[SESSION_KEY] = (cfg.auth, who)
    if isinstance(who, SignInError):
        _refuse(cfg, who)
        st.stop()
    return who


def _sign_in_screen(cfg: KeelConfig) -> None:
    with st.sidebar:
        st.markdown("## :material/anchor: Keel")
        st.caption(":material/lock: Not signed in")
    st.title("Keel", anchor=False)
    st.info("Sign in to use Keel: it shows and changes Kafka clusters, so it needs to know who you are.",
            icon=":material/login:")
    if st.button("Sign in", type="primary", icon=":material/login:", key="keel_login"):
        try:
            st.login(cfg.auth.provider) if cfg.auth.provider else st.login()
        except Exception as e:  # e.g. no [auth] in .streamlit/secrets.toml: Streamlit's message names no secret
            log.warning("sign-in could not start: %s", type(e).__name__)
            st.error(md_text(f"Sign-in is not configured: {e}"), icon=":material/settings_alert:")


def _refuse(cfg: KeelConfig, e: SignInError) -> None:
    if not st.session_state.get(RECORDED_KEY):
        st.session_state[RECORDED_KEY] = True
        record_sign_in_failure(cfg.auth.mode, str(e), e.claimed)
    with st.sidebar:
        st.markdown("## :material/anchor: Keel")
        st.caption(":material/block: Sign-in refused")
    st.title("Keel", anchor=False)
    st.error(f"**Sign-in refused.** {md_text(e)}", icon=":material/block:")
    if cfg.auth.mode == access.OIDC and st.button("Sign out", key="keel_logout_refused", icon=":material/logout:"):
        st.logout()


def record_sign_in_failure(source: str, why: str, claimed: str | None = None) -> None:
    """A failed sign-in in the audit store; best effort (a broken store must not hide the refusal)."""
    try:
        Store().record(cluster=NO_CLUSTER, kind="sign-in", target=claimed or "unknown", summary="sign-in refused",
                       result=why, actor=UNVERIFIED, source=source, role=None)
    except Exception as err:
        log.warning("could not record a failed sign-in: %s", type(err).__name__)


class _ProviderErrors(logging.Handler):
    """Streamlit answers /oauth2callback itself: an error from the identity provider (access denied, a failed
    token exchange) only reaches its log. Record those as failed sign-ins."""

    def emit(self, record: logging.LogRecord) -> None:
        text = record.msg if isinstance(record.msg, str) else ""
        if text.startswith("Error during authentication"):
            error = str(record.args[0]) if record.args else "unknown error"
            why = f"the identity provider refused the sign-in: {error[:200]}"
        elif text.startswith("OAuth token exchange failed"):
            why = "the token exchange with the identity provider failed"
        else:
            return
        record_sign_in_failure(access.OIDC, why)


_watch_lock = threading.Lock()
_watching = False


def _watch_provider_errors() -> None:
    global _watching
    with _watch_lock:
        if not _watching:
            logging.getLogger(_AUTH_LOGGER).addHandler(_ProviderErrors(logging.WARNING))
            _watching = True


# --- the sidebar ----------------------------------------------------------------------------------------------


def sidebar(cfg: KeelConfig, cluster: str) -> access.Decision:
    """Who is signed in, their role on `cluster`, a Sign out button; returns the decision shown."""
    who = session_identity()
    d = decision(cfg, cluster)
    if who.signed_in:
        groups = f" · groups {md(', '.join(who.groups))}" if who.groups else " · no groups"
        st.markdown(f":material/verified_user: Signed in as **{md(who.actor)}** ({who.source}){groups}")
        if cfg.auth.mode == access.OIDC and st.button("Sign out", key="keel_logout", icon=":material/logout:"):
            st.logout()
    else:
        st.markdown(f":material/person_off: **Not signed in** · acting as {md(who.actor)} (the local user)")
    badges = st.container(horizontal=True)
    badges.badge(f"role: {d.role.value}", icon=":material/badge:", color="green" if d.can() else "gray",
                 help=f"Your role on {md(cluster)}: {md(d.why)}")  # why: the [access] rule, an address
    if d.read_only:
        badges.badge("read-only", icon=":material/visibility:", color="orange")
    if d.exposed:
        st.warning(f"**Nobody is signed in and Keel listens beyond loopback**, so everyone who reaches it is a "
                   f"viewer. To act, configure sign-in (`[auth] mode = \"oidc\"` or `\"proxy\"` in {md(cfg.path or 'keel.toml')}; "
                   "README, *Pointing Keel at a real cluster*), or listen on 127.0.0.1 only.",
                   icon=":material/public:")
    if not d.can():
        st.caption("Write actions are disabled: " + ("this instance is read-only." if d.read_only
                                                     else "the viewer role cannot change the cluster."))
    elif not d.can(access.Role.ADMIN):
        st.caption("Deleting topics and rolling back need the admin role.")
    return d
