"""How Keel authenticates to Kafka's brokers: the client properties file Kafka's own tools take.

SREs already keep one for `kafka-reassign-partitions.sh --command-config admin.properties`; Keel reads the same
file (CLI `--command-config FILE`, keel.toml `command_config = "FILE"` per cluster) instead of inventing
settings. Reads that file and checks the files it names; no kafka-python and no socket (core.kafka.admin builds
the client).

Supported, in Kafka's names:
* `security.protocol` PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL;
* `sasl.mechanism` PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512, with `sasl.jaas.config` naming PlainLoginModule or
  ScramLoginModule and its `username` / `password`;
* `ssl.truststore.type=PEM` with `ssl.truststore.location` (a CA file) or `ssl.truststore.certificates`;
  `ssl.keystore.type=PEM` with `ssl.keystore.location` (key + certificate chain, for mutual TLS) and
  `ssl.key.password`; `ssl.endpoint.identification.algorithm` ("" turns host-name checking off, as in Kafka).
What Keel cannot do (Kerberos, OAUTHBEARER, JKS / PKCS12 stores, Java callback classes) is refused by name with
what to do instead, never ignored: a connection that silently drops a setting is a connection to the wrong thing.
Other keys (timeouts, client.id, ...) are Kafka client tuning Keel sets itself: they are listed in `ignored`.
Secrets (passwords, the JAAS line) never appear in an error message or a repr.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import ValidationError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
              "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
              "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}
MAX_FILE_BYTES = 1 << 20
_SECRET_KEYS = {"sasl.jaas.config", "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
                "ssl.keystore.key"}
# Keys whose effect Keel would have to run Java for, or that it cannot honour: refused, with what to do instead.
_REFUSED = {
    "sasl.client.callback.handler.class": "Keel cannot run Java callback handlers",
    "sasl.login.callback.handler.class": "Keel cannot run Java callback handlers",
    "sasl.login.class": "Keel cannot run Java login classes",
    "ssl.keystore.key": "put the private key and certificate chain in a PEM file named by ssl.keystore.location",
    "ssl.keystore.certificate.chain": "put the private key and certificate chain in a PEM file named by "
                                      "ssl.keystore.location",
    "ssl.engine.factory.class": "Keel cannot run Java SSL engine factories",
}


class ClientConfigError(ValidationError):
    """The client properties file cannot be used; nothing was sent to any broker."""


@dataclass(frozen=True)
class KafkaClientSecurity:
    """What a client needs to connect as Kafka's tools would with the same properties file."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None  # PEM: the CAs that signed the brokers' certificates
    ca_pem: str | None = field(default=None, repr=False)  # ssl.truststore.certificates, inline
    cert_file: str | None = None  # PEM: private key + certificate chain (mutual TLS)
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    source: str = ""
    ignored: tuple[str, ...] = ()

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def summary(self) -> str:
        """One line without secrets, e.g. `SASL_SSL, SCRAM-SHA-512 as keel-admin, CA /etc/kafka/ca.pem`."""
        parts = [self.protocol]
        if self.uses_sasl:
            parts.append(f"{self.mechanism} as {self.username}")
        if self.uses_ssl:
            parts.append(f"CA {self.ca_file}" if self.ca_file else "inline CA" if self.ca_pem else "system CAs")
            if self.cert_file:
                parts.append(f"client certificate {self.cert_file}")
            if not self.check_hostname:
                parts.append("host names not checked")
        return ", ".join(parts)


# --- Java properties ----------------------------------------------------------------------------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str, source: str = "properties") -> dict[str, str]:
    """java.util.Properties.load's format: `key=value`, `key: value` or `key value`; `#` / `!` comments;
    a trailing backslash continues the line; `\\uXXXX` and the usual escapes. A key given twice keeps the last
    value, as Java does."""
    out: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")  # continuation lines lose their indentation too
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes: the line goes on
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for line in logical:
        key, value = _split(line)
        key, value = _unescape(key, source), _unescape(value, source)
        if key:
            out[key] = value
    return out


def _split(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":") and (i >= n or line[i] in " \t\f=:"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str, source: str) -> str:
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            code = text[i + 2:i + 6]
            if len(code) != 4 or not re.fullmatch(r"[0-9A-Fa-f]{4}", code):
                raise ClientConfigError(f"{source}: malformed \\uXXXX escape")
            out.append(chr(int(code, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


# --- JAAS -----------------------------------------------------------------------------------------------------

_JAAS = re.compile(r"\s*([A-Za-z_$][\w.$]*)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;\s*$", re.S)
_OPTION = re.compile(r'\s*([\w.$-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s";]+)')


def parse_jaas(text: str, where: str) -> tuple[str, dict[str, str]]:
    """(login module class, options) of a one-module `sasl.jaas.config` line. Never echoes the line."""
    m = _JAAS.fullmatch(text)
    if not m:
        raise ClientConfigError(f"{where}: sasl.jaas.config is not `<LoginModule> required key=\"value\" ...;`",
                                hint='e.g. sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule '
                                     'required username="keel" password="...";')
    module, _flag, body = m.groups()
    options: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        om = _OPTION.match(body, pos)
        if not om:
            if body[pos:].strip():
                raise ClientConfigError(f"{where}: sasl.jaas.config has an option that is not key=\"value\" "
                                        f"(after {len(options)} options)")
            break
        value = om.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[om.group(1)] = value
        pos = om.end()
    return module, options


# --- the whole file ---------------------------------------------------------------------------------------------


def security_from_properties(props: dict[str, str], source: str, base_dir: Path | None = None) -> KafkaClientSecurity:
    """Validate `props` (a client properties file's keys) into a KafkaClientSecurity, or ClientConfigError."""
    where = source

    def path_of(key: str) -> str:
        value = props[key].strip()
        path = Path(value).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise ClientConfigError(f"{where}: {key} names {value!r}, which is not a readable file")
        return str(path)

    for key, why in _REFUSED.items():
        if key in props:
            raise ClientConfigError(f"{where}: {key} is not supported: {why}")

    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ClientConfigError(f"{where}: security.protocol must be one of {', '.join(PROTOCOLS)}, "
                                f"got {props['security.protocol']!r}")
    kw: dict[str, object] = {"protocol": protocol, "source": source}

    if protocol.startswith("SASL_"):
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()  # Kafka's default is Kerberos
        if mechanism not in MECHANISMS:
            raise ClientConfigError(
                f"{where}: sasl.mechanism {mechanism} is not supported; Keel speaks "
                f"{', '.join(MECHANISMS)}" + (" (GSSAPI is Kafka's default when sasl.mechanism is missing)"
                                             if "sasl.mechanism" not in props else ""),
                hint="give the brokers a PLAIN or SCRAM listener for Keel, or run Kafka's tools with Keel's JSON")
        if "sasl.jaas.config" not in props:
            raise ClientConfigError(f"{where}: {mechanism} needs sasl.jaas.config with username and password",
                                    hint=f'sasl.jaas.config={MECHANISMS[mechanism]} required username="..." '
                                         'password="...";')
        module, options = parse_jaas(props["sasl.jaas.config"], where)
        if module != MECHANISMS[mechanism]:
            raise ClientConfigError(f"{where}: sasl.mechanism {mechanism} needs {MECHANISMS[mechanism]} in "
                                    f"sasl.jaas.config, not {module}")
        missing = [k for k in ("username", "password") if not options.get(k)]
        if missing:
            raise ClientConfigError(f"{where}: sasl.jaas.config has no {' or '.join(missing)}")
        kw.update(mechanism=mechanism, username=options["username"], password=options["password"])
    elif "sasl.jaas.config" in props or "sasl.mechanism" in props:
        raise ClientConfigError(f"{where}: sasl.* settings are given but security.protocol is {protocol}: "
                                "set SASL_PLAINTEXT or SASL_SSL, or remove them")

    ssl_keys = sorted(k for k in props if k.startswith("ssl."))
    if protocol in ("SSL", "SASL_SSL"):
        for kind in ("truststore", "keystore"):
            store_type = props.get(f"ssl.{kind}.type", "JKS" if f"ssl.{kind}.location" in props else "PEM")
            if store_type.strip().upper() != "PEM":
                raise ClientConfigError(
                    f"{where}: ssl.{kind}.type {store_type} is not supported: Keel reads PEM files",
                    hint=("export the CA as PEM (keytool -exportcert -rfc -keystore truststore.jks -alias CARoot "
                          "-file ca.pem) and set ssl.truststore.type=PEM" if kind == "truststore" else
                          "convert the keystore to one PEM file with the private key and its certificate chain "
                          "(openssl pkcs12 -in keystore.p12 -out keystore.pem) and set ssl.keystore.type=PEM"))
        if "ssl.truststore.location" in props and "ssl.truststore.certificates" in props:
            raise ClientConfigError(f"{where}: give ssl.truststore.location or ssl.truststore.certificates, not both")
        if "ssl.truststore.location" in props:
            kw["ca_file"] = path_of("ssl.truststore.location")
        elif props.get("ssl.truststore.certificates", "").strip():
            kw["ca_pem"] = props["ssl.truststore.certificates"]
        if "ssl.keystore.location" in props:
            kw["cert_file"] = path_of("ssl.keystore.location")
            kw["key_password"] = props.get("ssl.key.password") or None
        algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
        if algorithm not in ("https", ""):
            raise ClientConfigError(f"{where}: ssl.endpoint.identification.algorithm must be https or empty, "
                                    f"got {algorithm!r}")
        kw["check_hostname"] = algorithm == "https"
    elif ssl_keys:
        raise ClientConfigError(f"{where}: ssl.* settings ({ssl_keys[0]}, ...) are given but security.protocol is "
                                f"{protocol}: set SSL or SASL_SSL, or remove them")

    used = {"security.protocol", "sasl.mechanism", "sasl.jaas.config", "ssl.truststore.type",
            "ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.password",
            "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
            "ssl.endpoint.identification.algorithm"}
    kw["ignored"] = tuple(sorted(k for k in props if k not in used))
    return KafkaClientSecurity(**kw)  # type: ignore[arg-type]


def load_command_config(path: str | Path, *, base_dir: Path | None = None,
                        what: str = "--command-config") -> KafkaClientSecurity:
    """Read and validate a client properties file (Kafka's --command-config); ClientConfigError otherwise."""
    p = Path(path).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise ClientConfigError(f"{what} {p}: larger than {MAX_FILE_BYTES >> 20} MiB; is it the right file?")
        text = p.read_text(encoding="utf-8")
    except ClientConfigError:
        raise
    except UnicodeDecodeError:
        raise ClientConfigError(f"{what} {p}: not a text file (UTF-8)") from None
    except OSError as e:
        raise ClientConfigError(f"{what} {p}: cannot read it ({e.strerror or e})") from None
    return security_from_properties(parse_properties(text, f"{what} {p}"), f"{what} {p}", p.parent)


def redacted(props: dict[str, str]) -> dict[str, str]:
    """The properties with every secret value replaced, for logs and the history."""
    return {k: ("***" if k in _SECRET_KEYS or "password" in k else v) for k, v in props.items()}


__all__ = ["KafkaClientSecurity", "ClientConfigError", "parse_properties", "parse_jaas", "security_from_properties",
           "load_command_config", "redacted", "PROTOCOLS", "MECHANISMS"]
