"""Who is acting and what they may do: identities, roles per cluster, and the one check every write goes through.

Pure: no I/O, no streamlit, no kazoo. keel.toml's `[auth]` and `[access]` tables are parsed here into frozen
settings (core.policy.config turns a problem into a ConfigError naming the file and the key); the dashboard builds an
`Identity` from Streamlit's `st.user` (oidc) or the proxy's headers (proxy), the CLI from the OS user; `resolve`
gives the role of that identity on one cluster and `check` refuses an action the role does not allow.

Roles: viewer (look), operator (topic writes, elections, reassignments), admin (also deletes topics and rolls
back). Reading messages (peek) is a permission of its own, `data`: granted only by name (`data = [...]` in
`[access]`), never implied by operator or admin (who runs the cluster need not read what flows through it); in
`none` mode by `[keel] data = true`, on loopback only. `may_read_data` / `check_data` decide it.
A role is granted to principals, in `[access]` and, per cluster, `[clusters.<name>.access]` (a role listed there
replaces the global list of that role; the others are inherited):

    group:NAME      a member of group NAME (the groups claim of the ID token, or the proxy's groups header)
    user:SUBJECT    the ID token's subject, or the proxy's user header
    alice@x.org     an email address (case-insensitive)
    *               anyone signed in
    cli, cli:USER   the command line (any OS user, or that one)

Modes (`[auth] mode`):
* none: nobody signs in; the local user acts with `[keel] role`, but only while the dashboard listens on loopback:
  bound to any other address it is a viewer for everyone (anyone who reaches the port would act);
* oidc / proxy: the role is the highest granted to the identity on that cluster, else `[access] default`
  (viewer). `[keel] role` is not used.
The command line acts with the operator's own ZooKeeper credentials: it keeps every right unless `[access]` names a
`cli` principal; then it is checked like a person. read_only binds it either way. A cluster keel.toml does not name
gets the least role any configured cluster gives (core.policy.gate identifies the cluster a command reaches).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from core.errors import PermissionDeniedError, ValidationError

if TYPE_CHECKING:
    from core.policy.config import KeelConfig

__all__ = [
    "MODES", "SOURCES", "AccessRules", "AccessSettingError", "AuthSettings", "Decision", "Identity",
    "ReadOnlyError", "Role", "RoleDeniedError", "SignInError", "check", "cli_identity", "identity_from_claims",
    "identity_from_headers", "is_loopback", "local_identity", "needed_role", "parse_access", "parse_auth",
    "resolve", "DATA", "DataDeniedError", "check_data", "may_read_data",
]


class Role(str, Enum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        return _RANK[self]

    def allows(self, needed: "Role") -> bool:
        return self.rank >= needed.rank


_RANK = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}
ROLE_NAMES = tuple(r.value for r in Role)
DATA = "data"  # the [access] key granting the right to read messages: not a rank, never implied by another role

NONE, OIDC, PROXY, CLI = "none", "oidc", "proxy", "cli"
MODES = (NONE, OIDC, PROXY)
SOURCES = (OIDC, PROXY, CLI, NONE)  # how an actor was identified, as the audit store records it

PROXY_SECRET_ENV = "KEEL_PROXY_SECRET"
MIN_SECRET_CHARS = 16
MAX_HEADER_CHARS = 512

# What each kind of action needs: deleting a topic, rolling back, and changing who may do what (ACLs, client quotas, and
# undoing such a change) are the admin's; every other write the operator's.
ADMIN_ACTIONS = ("delete-topic", "rollback", "acl-add", "acl-remove", "quota-alter", "security-undo")


class AccessSettingError(ValidationError):
    """A problem in keel.toml's [auth] or [access] tables; `key` names the setting (core.policy.config adds the
    file)."""

    def __init__(self, key: str, problem: str, *, hint: str | None = None):
        super().__init__(problem, hint=hint)
        self.key = key
        self.problem = problem


class SignInError(PermissionDeniedError):
    """A sign-in Keel refuses (forged proxy headers, a token naming nobody). `claimed`: who it claimed to be."""

    def __init__(self, message: str, *, claimed: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.claimed = claimed


class DataDeniedError(PermissionDeniedError):
    """The actor may not read messages on the cluster (no `data` grant); recorded in the audit store as refused."""

    def __init__(self, message: str, *, cluster: str | None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.cluster = cluster


class ReadOnlyError(PermissionDeniedError):
    """The instance is read-only: nobody writes."""


class RoleDeniedError(PermissionDeniedError):
    """The actor's role on the cluster does not allow the action (recorded in the audit store as refused)."""

    def __init__(self, message: str, *, role: Role, needed: Role, cluster: str | None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.role, self.needed, self.cluster = role, needed, cluster


# --- settings ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuthSettings:
    """keel.toml's [auth]: how people are identified."""

    mode: str = NONE
    provider: str | None = None  # the [auth.<provider>] of .streamlit/secrets.toml for st.login; None: [auth] itself
    groups_claim: str = "groups"  # the ID-token claim holding the user's groups
    user_header: str = "X-Forwarded-User"
    email_header: str = "X-Forwarded-Email"
    groups_header: str = "X-Forwarded-Groups"
    secret_header: str = "X-Keel-Proxy-Secret"  # set by the proxy on every request it forwards
    require_secret: bool = True  # proxy mode: refuse a request without the shared secret (the proxy is the only way in)
    proxy_secret: str | None = field(default=None, repr=False)  # never printed


@dataclass(frozen=True)
class AccessRules:
    """One [access] table: the principals of each role given there, and the default role if given."""

    grants: tuple[tuple[Role, tuple[str, ...]], ...] = ()
    default: Role | None = None
    data: tuple[str, ...] | None = None  # who may read messages (peek); None: this table does not say

    def principals(self, role: Role) -> tuple[str, ...] | None:
        return next((p for r, p in self.grants if r is role), None)

    def merged(self, override: "AccessRules | None") -> "AccessRules":
        """`override` (a cluster's table) replaces the lists of the roles it names; the others come from self."""
        if override is None:
            return self
        named = {r for r, _ in override.grants}
        return AccessRules(tuple((r, p) for r, p in self.grants if r not in named) + override.grants,
                           override.default if override.default is not None else self.default,
                           override.data if override.data is not None else self.data)

    def names_cli(self) -> bool:
        return any(_is_cli(p) for _, ps in self.grants for p in ps) or any(_is_cli(p) for p in self.data or ())


_AUTH_KEYS = {"mode", "provider", "groups_claim", "user_header", "email_header", "groups_header", "secret_header",
              "require_secret", "proxy_secret_file"}
_HEADER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


def parse_auth(raw: Any, env: Mapping[str, str], read_file=None) -> AuthSettings:
    """[auth] -> AuthSettings. The proxy secret comes from $KEEL_PROXY_SECRET or `proxy_secret_file` (read with
    `read_file(path) -> str`), never from keel.toml itself. Raises AccessSettingError."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise AccessSettingError("auth", "must be a table")
    unknown = sorted(set(raw) - _AUTH_KEYS)
    if unknown:
        raise AccessSettingError(f"auth.{unknown[0]}", "unknown key", hint="allowed: " + ", ".join(sorted(_AUTH_KEYS)))
    mode = raw.get("mode", NONE)
    if not isinstance(mode, str) or mode.strip().lower() not in MODES:
        raise AccessSettingError("auth.mode", f'unknown sign-in mode {mode!r}: must be "oidc", "proxy" or "none"')
    mode = mode.strip().lower()
    texts: dict[str, str] = {}
    for k in ("provider", "groups_claim", "user_header", "email_header", "groups_header", "secret_header"):
        v = raw.get(k)
        if v is None:
            continue
        if not isinstance(v, str) or not v.strip():
            raise AccessSettingError(f"auth.{k}", f"must be a non-empty string, got {v!r}")
        if k.endswith("_header") and not _HEADER.match(v.strip()):
            raise AccessSettingError(f"auth.{k}", f"not an HTTP header name: {v!r}")
        texts[k] = v.strip()
    require_secret = raw.get("require_secret", True)
    if not isinstance(require_secret, bool):
        raise AccessSettingError("auth.require_secret", f"must be true or false, got {require_secret!r}")
    secret = None
    if mode == PROXY and require_secret:
        secret, where = env.get(PROXY_SECRET_ENV) or None, f"${PROXY_SECRET_ENV}"
        path = raw.get("proxy_secret_file")
        if secret is None and path is not None:
            if not isinstance(path, str) or not path.strip() or read_file is None:
                raise AccessSettingError("auth.proxy_secret_file", "must be a file path")
            secret, where = read_file(path.strip()).strip() or None, f"the file {path.strip()}"
        header = texts.get("secret_header", AuthSettings.secret_header)
        if secret is None:
            raise AccessSettingError(
                "auth.proxy_secret_file", f"proxy mode needs the shared secret the proxy sends in {header}",
                hint=f"set ${PROXY_SECRET_ENV} or proxy_secret_file; or require_secret = false if nothing but the "
                     "proxy can reach Keel (then forged headers are not detected)")
        if len(secret) < MIN_SECRET_CHARS:  # never echo it
            raise AccessSettingError("auth.proxy_secret_file", f"the proxy secret from {where} is shorter than "
                                     f"{MIN_SECRET_CHARS} characters", hint="use a long random string")
    return AuthSettings(mode=mode, require_secret=require_secret, proxy_secret=secret, **texts)


def parse_access(raw: Any, key: str = "access") -> AccessRules | None:
    """An [access] table ({role: [principals], default = role}) -> AccessRules. Raises AccessSettingError."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise AccessSettingError(key, "must be a table such as { operator = [\"group:kafka-sre\"] }")
    grants = []
    default = None
    data = None
    for name, value in raw.items():
        if name == "default":
            if not isinstance(value, str) or value.strip().lower() not in ROLE_NAMES:
                raise AccessSettingError(f"{key}.default", f"unknown role {value!r}: must be one of "
                                         + ", ".join(ROLE_NAMES))
            default = Role(value.strip().lower())
            continue
        if name not in ROLE_NAMES and name != DATA:
            raise AccessSettingError(f"{key}.{name}", f"unknown role {name!r}: roles are " + ", ".join(ROLE_NAMES)
                                     + f" (and {DATA}, who may read messages, and default)")
        if not isinstance(value, list):
            raise AccessSettingError(f"{key}.{name}", "must be a list of principals, e.g. [\"group:kafka-sre\", "
                                     "\"alice@example.com\"]")
        principals = tuple(_principal(f"{key}.{name}", p) for p in value)
        if name == DATA:
            data = principals
        else:
            grants.append((Role(name), principals))
    return AccessRules(tuple(grants), default, data)


def _principal(key: str, p: Any) -> str:
    if isinstance(p, str):
        p = p.strip()
        kind, colon, rest = p.partition(":")
        if p == "*" or p == CLI or (colon and kind in ("group", "user", "cli") and rest.strip()) \
                or (not colon and "@" in p.strip("@")):
            return p
    raise AccessSettingError(key, f"not a principal: {p!r}",
                             hint="use group:NAME, user:SUBJECT, an email address, *, cli or cli:USER")


def _is_cli(p: str) -> bool:
    return p == CLI or p.startswith("cli:")


# --- identities -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    actor: str  # what the audit store records: the email, else the subject (oidc, proxy); the OS user (cli, none)
    source: str  # oidc | proxy | cli | none
    email: str | None = None
    subject: str | None = None
    groups: tuple[str, ...] = ()

    @property
    def signed_in(self) -> bool:
        return self.source in (OIDC, PROXY)


def local_identity(user: str) -> Identity:
    """`none` mode: the local user, not signed in."""
    return Identity(actor=user, source=NONE, subject=user)


def cli_identity(user: str) -> Identity:
    return Identity(actor=user, source=CLI, subject=user)


def _clean(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > MAX_HEADER_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return None
    return value


def _groups(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items: Iterable[Any] = re.split(r"[,\s]+", value)
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return ()
    return tuple(dict.fromkeys(g for g in (_clean(i) for i in items) if g))


def identity_from_claims(claims: Mapping[str, Any], auth: AuthSettings) -> Identity:
    """oidc: the ID token's claims (Streamlit's st.user) -> Identity. Refused when it names nobody."""
    email, subject = _clean(claims.get("email")), _clean(claims.get("sub"))
    if email is None and subject is None:
        raise SignInError("the identity provider's token has neither an email nor a subject (sub) claim",
                          hint='ask for the "openid email" scopes in .streamlit/secrets.toml')
    return Identity(actor=email or subject, source=OIDC, email=email, subject=subject,
                    groups=_groups(claims.get(auth.groups_claim)))


def identity_from_headers(headers: Mapping[str, str], auth: AuthSettings) -> Identity:
    """proxy: the headers of the request that opened the session -> Identity.

    With `require_secret`, a request without the proxy's shared secret is refused whatever else it carries: it did
    not come through the proxy (a client that reached Keel directly and forged the identity headers)."""
    lower = {str(k).lower(): v for k, v in headers.items()}
    user, email = _clean(lower.get(auth.user_header.lower())), _clean(lower.get(auth.email_header.lower()))
    claimed = email or user
    if auth.require_secret:
        given = lower.get(auth.secret_header.lower())
        if not isinstance(given, str) or not auth.proxy_secret \
                or not hmac.compare_digest(given.encode(), auth.proxy_secret.encode()):
            raise SignInError(f"this request did not come through Keel's authenticating proxy (no valid "
                              f"{auth.secret_header} header): its identity headers are not trusted",
                              claimed=claimed, hint="open Keel through the proxy's address")
    if claimed is None:
        raise SignInError(f"the proxy sent neither {auth.user_header} nor {auth.email_header}",
                          hint="configure the proxy to pass the signed-in user (oauth2-proxy: --set-xauthrequest "
                               "or --pass-user-headers)")
    return Identity(actor=claimed, source=PROXY, email=email, subject=user,
                    groups=_groups(lower.get(auth.groups_header.lower(), "")))


def is_loopback(address: str | None) -> bool:
    """Is a listen address reachable only from this machine? None / "" is Streamlit's default: every interface."""
    if not address:
        return False
    address = address.strip().strip("[]")
    if address.startswith("unix://") or address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


# --- resolution -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    role: Role
    why: str  # how the role was decided, for the sidebar and the messages
    read_only: bool = False  # the instance forbids every write (for this identity)
    exposed: bool = False  # none mode, listening beyond loopback: capped to viewer

    def can(self, needed: Role = Role.OPERATOR) -> bool:
        return not self.read_only and self.role.allows(needed)


def _matches(p: str, who: Identity) -> bool:
    if who.source == CLI:
        return p == CLI or (p.startswith("cli:") and p[4:].strip() == who.actor)
    if not who.signed_in or _is_cli(p):
        return False
    if p == "*":
        return True
    kind, colon, rest = p.partition(":")
    if colon and kind == "group":
        return rest.strip().casefold() in {g.casefold() for g in who.groups}
    if colon and kind == "user":
        return rest.strip() in (who.subject, who.actor)
    return bool(who.email) and p.casefold() == who.email.casefold()


def rules_for(config: "KeelConfig", cluster: str | None) -> AccessRules:
    base = config.access or AccessRules()
    c = config.clusters.get(cluster) if cluster is not None else None
    return base.merged(c.access if c is not None else None)


def resolve(who: Identity, config: "KeelConfig", cluster: str | None, *, exposed: bool = False) -> Decision:
    """The role of `who` on `cluster`: a keel.toml cluster name, or None for a cluster keel.toml does not name
    (the CLI's --zk matched none of them). Such a cluster gets the least role any configured cluster would give:
    a connect string spelled differently must never open more than the cluster it stands for."""
    if cluster is not None and cluster in config.clusters or not config.clusters:
        return _resolve(who, config, cluster, exposed=exposed)
    least = min((_resolve(who, config, name, exposed=exposed) for name in config.clusters),
                key=lambda d: d.role.rank)
    return Decision(least.role, f"not a cluster keel.toml names: the least role any of its clusters gives "
                                f"({least.why})", read_only=least.read_only, exposed=least.exposed)


def _resolve(who: Identity, config: "KeelConfig", cluster: str | None, *, exposed: bool) -> Decision:
    rules = rules_for(config, cluster)
    if who.source == CLI:
        if not rules.names_cli():
            return Decision(Role.ADMIN, "the command line acts with its own ZooKeeper credentials (keel.toml's "
                                        "[access] names no cli rule)", read_only=config.read_only)
        granted = [r for r, ps in rules.grants if any(_matches(p, who) for p in ps)]
        role = max(granted, key=lambda r: r.rank, default=Role.VIEWER)
        return Decision(role, f"[access] cli rules for {who.actor}", read_only=config.read_only)
    if who.source == NONE or config.auth.mode == NONE:
        if exposed:
            return Decision(Role.VIEWER, "not signed in, and this instance listens beyond loopback",
                            read_only=config.read_only, exposed=True)
        return Decision(config.role, "not signed in: [keel] role of this instance", read_only=config.read_only)
    granted = [(r, p) for r, ps in rules.grants for p in ps if _matches(p, who)]
    best = max(granted, key=lambda g: g[0].rank, default=None)
    default = rules.default or Role.VIEWER
    if best is None or best[0].rank <= default.rank:
        return Decision(default, "no [access] rule names you: the default role", read_only=config.read_only)
    return Decision(best[0], f"granted to {best[1]}", read_only=config.read_only)


def needed_role(kind: str) -> Role:
    """The role an action needs, by its kind (the store's kinds; 'delete' / 'roll back' phrasing accepted too)."""
    k = kind.strip().lower()
    if k in ADMIN_ACTIONS or k.startswith(("delete", "roll back", "rollback")):
        return Role.ADMIN
    return Role.OPERATOR


_WHAT = {Role.OPERATOR: "only an operator may write to ZooKeeper",
         Role.ADMIN: "only an admin may delete topics, roll back reassignments or change ACLs and quotas"}


def check(who: Identity, config: "KeelConfig", cluster: str | None, needed: Role, action: str, *,
          exposed: bool = False) -> Decision:
    """The gate every write goes through: the Decision when `who` may `action` on `cluster`, else
    ReadOnlyError (the instance) or RoleDeniedError (the role; the caller records it as refused)."""
    d = resolve(who, config, cluster, exposed=exposed)
    where = config.path or "keel.toml"
    if d.read_only:
        raise ReadOnlyError(f"cannot {action}: this Keel instance is read-only",
                            hint=f"set read_only = false in the [keel] table of {where}")
    if d.role.allows(needed):
        return d
    known = cluster is not None and cluster in config.clusters
    on = f" on cluster {cluster}" if known else " on a cluster keel.toml does not name" if config.clusters else ""
    if d.exposed:
        hint = ("nobody is signed in and this instance listens beyond loopback, so everyone who reaches it is a "
                f'viewer: configure sign-in ([auth] mode = "oidc" or "proxy" in {where}; README, "Pointing Keel '
                'at a real cluster"), or listen on 127.0.0.1 only')
    elif who.source == CLI and not known:
        hint = (f"a cluster keel.toml does not name gets the least role any of its clusters gives: add it to {where}, "
                "or reach a configured cluster by its own connect string")
    elif who.source == CLI:  # the CLI's role comes from [access] cli rules, whatever the sign-in mode
        hint = f'grant "cli:{who.actor}" the {needed.value} role in [access] of {where}'
    elif who.source == NONE or config.auth.mode == NONE:
        hint = f'set role = "{needed.value}" in the [keel] table of {where}'
    else:
        hint = (f"ask for the {needed.value} role: [access] or [clusters.{cluster}.access] of {where} grants it "
                "to groups and emails")
    raise RoleDeniedError(f"cannot {action}: the role of {who.actor}{on} is {d.role.value!r}; {_WHAT[needed]}",
                          role=d.role, needed=needed, cluster=cluster, hint=hint)


# --- reading messages: the `data` permission ------------------------------------------------------------------


def may_read_data(who: Identity, config: "KeelConfig", cluster: str | None, *, exposed: bool = False
                  ) -> tuple[bool, str]:
    """May `who` read messages (peek) on `cluster`, and why. A cluster keel.toml does not name: only when every
    configured cluster allows it (as `resolve` gives the least role)."""
    if cluster is None and config.clusters or cluster is not None and config.clusters and \
            cluster not in config.clusters:
        answers = [_may_read_data(who, config, name, exposed) for name in config.clusters]
        refused = next((a for a in answers if not a[0]), None)
        if refused is not None:
            return False, f"not a cluster keel.toml names, and one of its clusters refuses: {refused[1]}"
        return True, "every cluster keel.toml names grants it"
    return _may_read_data(who, config, cluster, exposed)


def _may_read_data(who: Identity, config: "KeelConfig", cluster: str | None, exposed: bool) -> tuple[bool, str]:
    rules = rules_for(config, cluster)
    if who.source == CLI:
        if not rules.names_cli():  # its own Kafka credentials (--command-config) read the same with Kafka's tools
            return True, "the command line acts with its own Kafka credentials ([access] names no cli rule)"
        hit = next((p for p in rules.data or () if _matches(p, who)), None)
        return (True, f"[access] data grants {hit}") if hit else (False, f"no [access] data rule names {who.actor}")
    if who.source == NONE or config.auth.mode == NONE:
        if exposed:
            return False, "not signed in, and this instance listens beyond loopback"
        if config.data:
            return True, "not signed in: [keel] data = true"
        return False, "not signed in, and [keel] data is not true"
    hit = next((p for p in rules.data or () if _matches(p, who)), None)
    return (True, f"[access] data grants {hit}") if hit else (False, f"no [access] data rule names {who.actor}")


def check_data(who: Identity, config: "KeelConfig", cluster: str | None, action: str, *,
               exposed: bool = False) -> str:
    """The gate of every peek: why `who` may read messages on `cluster`, else DataDeniedError (the caller records
    it as refused). read_only does not apply: reading writes nothing. Operator and admin do not imply it."""
    ok, why = may_read_data(who, config, cluster, exposed=exposed)
    if ok:
        return why
    where = config.path or "keel.toml"
    known = cluster is not None and cluster in config.clusters
    on = f" on cluster {cluster}" if known else " on a cluster keel.toml does not name" if config.clusters else ""
    if exposed and who.source != CLI:
        hint = ("nobody is signed in and this instance listens beyond loopback: configure sign-in ([auth] mode = "
                f'"oidc" or "proxy" in {where}) and grant data in [access], or listen on 127.0.0.1 only')
    elif who.source == CLI:
        hint = f'add "cli:{who.actor}" to data = [...] in [access] of {where}'
    elif who.source == NONE or config.auth.mode == NONE:
        hint = f"set data = true in the [keel] table of {where}"
    else:
        hint = (f"ask for the data permission: data = [...] in [access] or [clusters.{cluster}.access] of {where} "
                "(operator and admin do not include it)")
    raise DataDeniedError(f"cannot {action}: {who.actor} may not read messages{on} ({why}); reading data is a "
                          "permission of its own", cluster=cluster, hint=hint)
