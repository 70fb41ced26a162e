"""Keel's own configuration: which clusters the console shows and what it may do to them.

`keel.toml` (or the file named by the environment variable ``KEEL_CONFIG``)::

    [keel]
    role = "operator"        # viewer | operator | admin: the local user's role when [auth] mode is "none"
    read_only = false
    data = false             # "none" mode: may the local user read messages (peek)? ([access] data when signed in)

    [auth]                   # who is at the keyboard (core.policy.access): mode = "none" | "oidc" | "proxy"
    mode = "none"

    [access]                 # roles granted to groups and emails (oidc, proxy); per cluster: [clusters.<name>.access]
    operator = ["group:kafka-sre", "alice@example.com"]

    [store]                  # the audit store (History): a SQLite file (default .run/keel.sqlite) or PostgreSQL,
    url = "postgresql://keel@db.example.com:5432/keel"   # one history for several Keel instances ($KEEL_STORE wins)

    [clusters.demo]
    zk = "127.0.0.1:2181/keel-demo"
    description = "Sandbox cluster started by make run"
    # bootstrap = "broker1:9092,broker2:9092"   # Kafka's Admin API: partition sizes, cancel a reassignment
    # command_config = "admin.properties"       # SASL / TLS to the brokers: the file Kafka's tools take
    # digest = "user:password"
    # tls = { ca = "ca.pem", cert = "client.pem", key = "client.key" }
    # connect_timeout = 5.0
    # min_insync_replicas = 2                   # server.properties' value, assumed when the brokers cannot be read

A cluster's digest credentials may instead come from the environment variable
``KEEL_ZK_DIGEST_<NAME>`` (the cluster name upper-cased, every non-alphanumeric character turned into
``_``), which wins over the file so that secrets need not be written there. Relative TLS and command_config
paths are resolved against the directory of the config file.

Pure apart from reading the one file: no kazoo, no streamlit. Bad config raises `ConfigError` naming the
file and the key, so the console can show a message an SRE can act on. The gate every write goes through is
core.policy.access.check (identity + config + cluster -> role); `can_act` / `require_operator` are the instance-wide
form of it for the `none` mode's `[keel] role`.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from core.policy.access import AccessRules, AccessSettingError, AuthSettings, Role, parse_access, parse_auth
from core.errors import PermissionDeniedError, TlsFileError, ValidationError

if TYPE_CHECKING:
    from core.kafka.client_config import KafkaClientSecurity

__all__ = [
    "AccessRules",
    "AuthSettings",
    "CONFIG_ENV",
    "DEFAULT_CONNECT_TIMEOUT",
    "ClusterConfig",
    "ConfigError",
    "KeelConfig",
    "Role",
    "TlsConfig",
    "can_act",
    "check_cluster_tls",
    "check_tls_files",
    "config_path",
    "digest_env_var",
    "load_cli_config",
    "load_config",
    "parse_config",
    "require_operator",
    "store_url",
]

CONFIG_ENV = "KEEL_CONFIG"
DIGEST_ENV_PREFIX = "KEEL_ZK_DIGEST_"
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_POLL_INTERVAL = 2.0  # seconds between reads of a cluster without ZooKeeper (core.kafka.poller)
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO_ROOT / "keel.toml"

_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_KEEL_KEYS = {"role", "read_only", "data"}
_CLUSTER_KEYS = {"zk", "description", "digest", "tls", "connect_timeout", "bootstrap", "command_config", "access",
                 "poll_interval",
                 "min_insync_replicas"}
_TLS_KEYS = {"ca", "cert", "key", "key_password", "verify"}
_STORE_KEYS = {"url"}
_PG_SCHEMES = ("postgresql", "postgres")


class ConfigError(ValidationError):
    """keel.toml (or the file KEEL_CONFIG names) is missing or invalid; `path` and `key` say where."""

    def __init__(self, path: str | os.PathLike | None, key: str | None, problem: str, *, hint: str | None = None):
        where = str(path) if path is not None else "<config>"
        if key:
            where += f": {key}"
        super().__init__(f"invalid Keel config {where}: {problem}", hint=hint)
        self.path = None if path is None else str(path)
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class TlsConfig:
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    key_password: str | None = field(default=None, repr=False)
    verify: bool = True


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    # ZooKeeper's connect string; None for a cluster read through its brokers only (bootstrap: KRaft clusters)
    zk: str | None
    description: str = ""
    digest: str | None = field(default=None, repr=False)  # "user:password"; never printed
    tls: TlsConfig | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    # Kafka's bootstrap servers "host:port,host:port" (core.kafka's Admin API: partition sizes from the brokers,
    # cancelling a running reassignment); None when Keel reaches only ZooKeeper.
    bootstrap: str | None = None
    # command_config: Kafka's client properties file (SASL / TLS to the brokers), read when keel.toml is loaded.
    kafka_security: KafkaClientSecurity | None = field(default=None, repr=False)
    access: AccessRules | None = None  # [clusters.<name>.access]: overrides [access] role by role
    # The brokers' static min.insync.replicas (server.properties), assumed where Keel cannot read it from the brokers
    # (no bootstrap, or they do not answer); None: Kafka's default, 1 (core.broker_defaults).
    min_insync_replicas: int | None = None
    # seconds between two reads of a cluster read through its brokers (KRaft gives clients no watches)
    poll_interval: float = DEFAULT_POLL_INTERVAL

    @property
    def through_brokers(self) -> bool:
        """Read through the brokers' Admin API (no ZooKeeper: a KRaft cluster)."""
        return self.zk is None

    @property
    def digest_user(self) -> str | None:
        return self.digest.split(":", 1)[0] if self.digest else None


@dataclass(frozen=True)
class KeelConfig:
    role: Role
    read_only: bool
    clusters: Mapping[str, ClusterConfig]  # in file order; the first one is the default
    path: str | None = None
    auth: AuthSettings = AuthSettings()  # [auth]: none | oidc | proxy
    access: AccessRules | None = None  # [access]: roles granted to groups and emails
    data: bool = False  # [keel] data: "none" mode's local user may read messages (core.policy.access.check_data)
    store_url: str | None = field(default=None, repr=False)  # [store] url: a postgresql:// URL or a SQLite file

    @property
    def default_cluster(self) -> str | None:
        return next(iter(self.clusters), None)

    def cluster(self, name: str) -> ClusterConfig:
        try:
            return self.clusters[name]
        except KeyError:
            known = ", ".join(self.clusters) or "none"
            raise ConfigError(self.path, f"clusters.{name}", f"no such cluster (configured: {known})") from None

    # Mapping is not hashable; keep KeelConfig usable as a cache key.
    def __hash__(self) -> int:
        return hash((self.role, self.read_only, tuple(self.clusters.items()), self.path, self.auth, self.access,
                     self.data, self.store_url))


# --- loading -------------------------------------------------------------------------------


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """The file KEEL_CONFIG names (relative to the working directory), else keel.toml at the repo root."""
    env = os.environ if env is None else env
    named = env.get(CONFIG_ENV, "").strip()
    return Path(named).expanduser() if named else DEFAULT_CONFIG


def load_cli_config(env: Mapping[str, str] | None = None) -> KeelConfig | None:
    """keel.toml for the command line's writes: the file KEEL_CONFIG names, which must exist and parse (a typo in
    the path of a read_only config must not open the cluster: ConfigError), else the checkout's keel.toml when
    there is one, else None (no keel.toml: the command line keeps every right)."""
    env = os.environ if env is None else env
    if env.get(CONFIG_ENV, "").strip() or DEFAULT_CONFIG.is_file():
        return load_config(env=env)
    return None


def digest_env_var(cluster: str) -> str:
    """`KEEL_ZK_DIGEST_<NAME>`: the name upper-cased, every non-alphanumeric character replaced by `_`."""
    return DIGEST_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", cluster).upper()


def load_config(path: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> KeelConfig:
    env = os.environ if env is None else env
    p = Path(path) if path is not None else config_path(env)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        how = f"named by {CONFIG_ENV}" if env.get(CONFIG_ENV, "").strip() and path is None else "expected"
        raise ConfigError(p, None, f"file not found ({how})",
                          hint=f"create it or point {CONFIG_ENV} at your keel.toml") from None
    except IsADirectoryError:
        raise ConfigError(p, None, "is a directory, not a TOML file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(p, None, f"not UTF-8 text: {e}") from None
    except OSError as e:
        raise ConfigError(p, None, f"cannot be read: {e.strerror or e}") from None
    return parse_config(text, source=p, env=env)


def parse_config(text: str, source: str | os.PathLike = "<string>", env: Mapping[str, str] | None = None) -> KeelConfig:
    env = os.environ if env is None else env
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(source, None, f"not valid TOML: {e}") from None
    except RecursionError:  # tomllib is recursive: arrays nested thousands deep exhaust the stack
        raise ConfigError(source, None, "not a Keel config: values are nested too deeply") from None
    except ValueError:  # int() of more than 4,300 digits (Python's limit; no number of keel.toml is that long)
        raise ConfigError(source, None, "not a Keel config: a number in it has thousands of digits") from None

    keel = doc.get("keel", {})
    if not isinstance(keel, dict):
        raise ConfigError(source, "keel", f"must be a table, got {_kind(keel)}")
    _no_unknown(source, "keel", keel, _KEEL_KEYS)

    role_raw = keel.get("role", Role.VIEWER.value)
    if not isinstance(role_raw, str) or role_raw.strip().lower() not in {r.value for r in Role}:
        raise ConfigError(source, "keel.role", f"must be \"viewer\", \"operator\" or \"admin\", got {role_raw!r}")
    role = Role(role_raw.strip().lower())

    read_only = keel.get("read_only", False)
    if not isinstance(read_only, bool):
        raise ConfigError(source, "keel.read_only", f"must be true or false, got {read_only!r}")
    data = keel.get("data", False)
    if not isinstance(data, bool):
        raise ConfigError(source, "keel.data", f"must be true or false, got {data!r}")

    clusters_raw = doc.get("clusters")
    if clusters_raw is None:
        raise ConfigError(source, "clusters", "no clusters configured",
                          hint='add a table such as [clusters.demo] with zk = "host:2181/chroot"')
    if not isinstance(clusters_raw, dict):
        raise ConfigError(source, "clusters", f"must be a table of [clusters.<name>] tables, got {_kind(clusters_raw)}")
    if not clusters_raw:
        raise ConfigError(source, "clusters", "no clusters configured",
                          hint='add a table such as [clusters.demo] with zk = "host:2181/chroot"')

    base_dir = Path(source).parent if not str(source).startswith("<") else None
    clusters = {name: _cluster(source, name, body, env, base_dir) for name, body in clusters_raw.items()}
    try:
        auth = parse_auth(doc.get("auth"), env, read_file=lambda p: _read_secret_file(source, base_dir, p))
        access = parse_access(doc.get("access"))
    except AccessSettingError as e:
        raise ConfigError(source, e.key, e.problem, hint=e.hint) from None
    return KeelConfig(role=role, read_only=read_only, clusters=clusters,
                      path=None if str(source).startswith("<") else str(source), auth=auth, access=access,
                      data=data, store_url=_store(source, doc.get("store"), base_dir))


def store_url(env: Mapping[str, str] | None = None) -> str | None:
    """keel.toml's [store] url (core.audit.store's default when $KEEL_STORE is not set), None without one. Only
    that table is read: a keel.toml broken elsewhere is reported by load_config, which every front end calls."""
    p = config_path(env)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError, ValueError):
        return None
    return _store(p, doc.get("store"), p.parent)


def _store(source, raw: Any, base_dir: Path | None) -> str | None:
    """[store] url: a postgresql:// URL as it is, or a SQLite file (relative to keel.toml's directory)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(source, "store", f"must be a table, got {_kind(raw)}")
    _no_unknown(source, "store", raw, _STORE_KEYS)
    url = raw.get("url")
    hint = 'e.g. url = "postgresql://keel@db.example.com:5432/keel", or a SQLite file such as "keel.sqlite"'
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(source, "store.url", f"must be a non-empty string, got {url!r}", hint=hint)
    url = url.strip()
    if "://" in url:
        scheme, rest = url.split("://", 1)
        if scheme.lower() not in _PG_SCHEMES:
            raise ConfigError(source, "store.url", f"unsupported scheme {scheme!r}: PostgreSQL (postgresql://) or "
                                                   "a SQLite file path", hint=hint)
        if not rest.strip("/"):
            raise ConfigError(source, "store.url", "names no PostgreSQL server", hint=hint)
        return url
    path = Path(url).expanduser()
    return os.path.normpath(path if path.is_absolute() or base_dir is None else base_dir / path)


def _read_secret_file(source, base_dir: Path | None, path: str) -> str:
    """[auth] proxy_secret_file: the first line; errors name the file, never its content."""
    p = Path(path).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    try:
        with open(p, encoding="utf-8") as f:
            return f.readline(4096)
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(source, "auth.proxy_secret_file", f"cannot read {p}: {getattr(e, 'strerror', None) or e}"
                          ) from None


def _cluster(source, name: str, body: Any, env: Mapping[str, str], base_dir: Path | None) -> ClusterConfig:
    key = f"clusters.{name}"
    if not _CLUSTER_NAME.match(name):
        raise ConfigError(source, key, "cluster names must start with a letter or digit and use only "
                                       "letters, digits, '.', '_' and '-'")
    if not isinstance(body, dict):
        raise ConfigError(source, key, f"must be a table, got {_kind(body)}")
    _no_unknown(source, key, body, _CLUSTER_KEYS)

    zk = body.get("zk")
    if zk is None and body.get("bootstrap") is None:
        raise ConfigError(source, f"{key}.zk", "missing: give zk (a ZooKeeper-mode cluster) or bootstrap (the "
                          "brokers' Admin API: any cluster, KRaft included)",
                          hint='the ZooKeeper connect string Kafka uses, e.g. zk = "zk1:2181,zk2:2181/kafka", or '
                               'bootstrap = "broker1:9092,broker2:9092" for a KRaft cluster')
    if zk is not None:
        if not isinstance(zk, str) or not zk.strip():
            raise ConfigError(source, f"{key}.zk", f"must be a non-empty connect string, got {zk!r}")
        zk = zk.strip()
        if any(c.isspace() for c in zk):
            raise ConfigError(source, f"{key}.zk", f"must not contain whitespace: {zk!r}")

    description = body.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(source, f"{key}.description", f"must be a string, got {_kind(description)}")

    var = digest_env_var(name)
    from_env = bool(env.get(var))
    digest = env.get(var) if from_env else body.get("digest")
    if digest is not None and (not isinstance(digest, str) or ":" not in digest or digest.startswith(":")):
        # Never echo the value: it is a secret.
        raise ConfigError(source, f"{key}.digest" if not from_env else f"{key}.digest (from environment {var})",
                          "digest credentials must look like user:password")

    tls = _tls(source, f"{key}.tls", body.get("tls"), base_dir)

    timeout = body.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or not 0 < timeout <= 300:
        raise ConfigError(source, f"{key}.connect_timeout", f"must be a number of seconds in (0, 300], got {timeout!r}")

    bootstrap = body.get("bootstrap")
    if bootstrap is not None:
        from core.kafka.bootstrap import EXAMPLE, parse_bootstrap

        try:
            bootstrap = ",".join(parse_bootstrap(bootstrap, ""))
        except ValidationError as e:
            raise ConfigError(source, f"{key}.bootstrap", e.message,
                              hint=f'Kafka\'s bootstrap servers, e.g. bootstrap = "{EXAMPLE}"') from None

    security = None
    command_config = body.get("command_config")
    if command_config is not None:
        from core.kafka.client_config import load_command_config

        if not isinstance(command_config, str) or not command_config.strip():
            raise ConfigError(source, f"{key}.command_config", "must be the path of a Kafka client properties file")
        if bootstrap is None:
            raise ConfigError(source, f"{key}.command_config", "is for the brokers' Admin API: give bootstrap too",
                              hint='bootstrap = "broker1:9092,broker2:9092"')
        try:
            security = load_command_config(command_config, base_dir=base_dir, what="file")
        except ValidationError as e:
            raise ConfigError(source, f"{key}.command_config", e.message, hint=e.hint) from None

    min_isr = body.get("min_insync_replicas")  # issue 23: assumed where the brokers' own settings cannot be read
    if min_isr is not None and (isinstance(min_isr, bool) or not isinstance(min_isr, int)
                                or not 1 <= min_isr <= 2**31 - 1):
        raise ConfigError(source, f"{key}.min_insync_replicas", f"must be a whole number of at least 1, got "
                          f"{min_isr!r}", hint="the min.insync.replicas of the brokers' server.properties, e.g. "
                          "min_insync_replicas = 2")

    poll = body.get("poll_interval", DEFAULT_POLL_INTERVAL)
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or not math.isfinite(poll) or not 0.5 <= poll <= 600:
        raise ConfigError(source, f"{key}.poll_interval", f"must be a number of seconds in [0.5, 600], got {poll!r}",
                          hint="how often Keel re-reads a cluster through its brokers, e.g. poll_interval = 2")

    try:
        access = parse_access(body.get("access"), f"{key}.access")
    except AccessSettingError as e:
        raise ConfigError(source, e.key, e.problem, hint=e.hint) from None

    return ClusterConfig(name=name, zk=zk, description=description.strip(), digest=digest, tls=tls,
                         connect_timeout=float(timeout), bootstrap=bootstrap, kafka_security=security,
                         access=access, min_insync_replicas=min_isr, poll_interval=float(poll))


def _tls(source, key: str, raw: Any, base_dir: Path | None) -> TlsConfig | None:
    if raw is None or raw is False:
        return None
    if raw is True:
        return TlsConfig()
    if not isinstance(raw, dict):
        raise ConfigError(source, key, f"must be a table like {{ ca = \"ca.pem\" }} or true, got {_kind(raw)}")
    _no_unknown(source, key, raw, _TLS_KEYS)
    files: dict[str, str | None] = {}
    for k in ("ca", "cert", "key"):
        v = raw.get(k)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise ConfigError(source, f"{key}.{k}", f"must be a file path, got {v!r}")
        if v is not None:
            p = Path(v.strip()).expanduser()
            if not p.is_absolute() and base_dir is not None:
                p = base_dir / p
            v = str(p)
        files[k] = v
    if (files["cert"] is None) != (files["key"] is None):
        raise ConfigError(source, key, "cert and key must be given together (client certificate authentication)")
    password = raw.get("key_password")
    if password is not None and not isinstance(password, str):
        raise ConfigError(source, f"{key}.key_password", "must be a string")
    verify = raw.get("verify", True)
    if not isinstance(verify, bool):
        raise ConfigError(source, f"{key}.verify", f"must be true or false, got {verify!r}")
    return TlsConfig(ca=files["ca"], cert=files["cert"], key=files["key"], key_password=password, verify=verify)


# --- TLS files ------------------------------------------------------------------------------

# A CA bundle of every public root is ~250 KB; anything this large is not a PEM file meant for ZooKeeper.
MAX_TLS_FILE_BYTES = 16 * 2**20
TLS_OPTIONS = {"ca": "--zk-tls-ca", "cert": "--zk-tls-cert", "key": "--zk-tls-key"}
_TLS_WHAT = {"ca": "TLS CA file", "cert": "TLS client certificate", "key": "TLS client key"}
_PEM_CERT = b"-----BEGIN CERTIFICATE-----"
_PEM_KEY = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")


def check_tls_files(ca: str | None, cert: str | None, key: str | None, key_password: str | None = None, *,
                    options: Mapping[str, str] = TLS_OPTIONS) -> None:
    """Raise TlsFileError naming the file unless every given TLS file exists, is readable and is PEM of the
    right kind, and a client certificate comes with its key (a separate file or in the same PEM).

    Called before connecting: a bad file would otherwise show as "could not connect ... check that ZooKeeper
    is running" after the whole connect timeout. `options` names the settings in messages (CLI flags by
    default; `clusters.<name>.tls.<k>` for keel.toml)."""
    import ssl

    if key and not cert:
        raise TlsFileError(f"{_TLS_WHAT['key']} {key} is given without a client certificate",
                           key, options["key"], hint=f"give the certificate too ({options['cert']})")
    if ca:
        if _PEM_CERT not in _read_tls(ca, "ca", options):
            raise TlsFileError(f"{_TLS_WHAT['ca']} {ca} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                               ca, options["ca"])
        try:
            ssl.create_default_context(cafile=ca)
        except ssl.SSLError as e:
            raise TlsFileError(f"{_TLS_WHAT['ca']} {ca} is not a usable PEM certificate bundle: {e.reason or e}",
                               ca, options["ca"]) from None
    if cert:
        data = _read_tls(cert, "cert", options)
        if _PEM_CERT not in data:
            raise TlsFileError(f"{_TLS_WHAT['cert']} {cert} holds no PEM certificate "
                               "(-----BEGIN CERTIFICATE-----)", cert, options["cert"])
        if not key and not _PEM_KEY.search(data):
            raise TlsFileError(f"{_TLS_WHAT['cert']} {cert} holds no private key and no key file is given",
                               cert, options["cert"],
                               hint=f"give the key with {options['key']}, or put it in the same PEM file")
        if key and not _PEM_KEY.search(_read_tls(key, "key", options)):
            raise TlsFileError(f"{_TLS_WHAT['key']} {key} holds no PEM private key (-----BEGIN PRIVATE KEY-----)",
                               key, options["key"])
        try:
            # "" rather than None: OpenSSL would otherwise prompt on the terminal for an encrypted key's password.
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(cert, key, key_password or "")
        except ssl.SSLError as e:
            both = f"{cert} and key {key}" if key else cert
            raise TlsFileError(f"{_TLS_WHAT['cert']} {both} cannot be loaded: {e.reason or e}", cert, options["cert"],
                               hint="check that the key belongs to the certificate and its password") from None


def _read_tls(path: str, role: str, options: Mapping[str, str]) -> bytes:
    what = _TLS_WHAT[role]
    p = Path(path)
    try:
        if p.is_dir():
            raise TlsFileError(f"{what} {path} is a directory, not a PEM file", path, options[role])
        with open(p, "rb") as f:
            data = f.read(MAX_TLS_FILE_BYTES + 1)
    except FileNotFoundError:
        raise TlsFileError(f"{what} {path} does not exist", path, options[role]) from None
    except OSError as e:
        raise TlsFileError(f"{what} {path} cannot be read: {e.strerror or e}", path, options[role]) from None
    if len(data) > MAX_TLS_FILE_BYTES:
        raise TlsFileError(f"{what} {path} is larger than {MAX_TLS_FILE_BYTES // 2**20} MiB: not a PEM file",
                           path, options[role])
    return data


def check_cluster_tls(config: KeelConfig, name: str) -> None:
    """check_tls_files for one configured cluster, as a ConfigError naming keel.toml's key.

    Not part of load_config on purpose: one cluster's missing CA must not hide every other cluster of the
    console; the file is checked when that cluster is opened (ZkSession does the same check)."""
    tls = config.cluster(name).tls
    if tls is None:
        return
    options = {k: f"clusters.{name}.tls.{k}" for k in ("ca", "cert", "key")}
    try:
        check_tls_files(tls.ca, tls.cert, tls.key, tls.key_password, options=options)
    except TlsFileError as e:
        raise ConfigError(config.path, e.option, e.message, hint=e.hint) from None


def _no_unknown(source, key: str, table: dict, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(source, f"{key}.{unknown[0]}", "unknown key",
                          hint="allowed: " + ", ".join(sorted(allowed)))


def _kind(v: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(v), type(v).__name__)


# --- the role gate -------------------------------------------------------------------------


def can_act(config: KeelConfig) -> bool:
    """True when this instance may write to ZooKeeper: the operator role and not read-only."""
    return config.role.allows(Role.OPERATOR) and not config.read_only


def require_operator(config: KeelConfig, action: str = "change the cluster") -> None:
    """Raise PermissionDeniedError unless `can_act(config)`; every write in the browser calls this first."""
    where = config.path or "keel.toml"
    if config.read_only:
        raise PermissionDeniedError(
            f"cannot {action}: this Keel instance is read-only",
            hint=f"set read_only = false in the [keel] table of {where}",
        )
    if not config.role.allows(Role.OPERATOR):
        raise PermissionDeniedError(
            f"cannot {action}: the role is {config.role.value!r}; only an operator may write to ZooKeeper",
            hint=f'set role = "operator" in the [keel] table of {where}',
        )
