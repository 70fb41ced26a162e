"""Kafka bootstrap server lists (`host:port,host:port`), as keel.toml's `bootstrap` and `--bootstrap-server`
take them. Pure: no I/O, no kafka-python (core.policy.config validates with this without loading the client)."""

from __future__ import annotations

import re

from core.errors import ValidationError

# A host name, an IPv4 address, or a bracketed IPv6 address; then a port.
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)$")
EXAMPLE = "broker1:9092,broker2:9092"


def parse_bootstrap(text: object, what: str = "--bootstrap-server") -> tuple[str, ...]:
    """The `host:port` entries of a bootstrap list, in order; ValidationError naming `what` (the option or key;
    "" when the caller names it) otherwise.

    Kafka's clients need a port on every entry (kafka-python would assume 9092, Kafka's tools refuse): Keel
    refuses a missing one rather than guess."""
    lead = f"{what} " if what else ""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"{lead}must be a non-empty list host:port[,host:port], got {text!r}",
                              hint=f"e.g. {EXAMPLE}")
    if any(c.isspace() for c in text.strip()):
        raise ValidationError(f"{lead}must not contain whitespace: {text!r}", hint=f"e.g. {EXAMPLE}")
    out = []
    for entry in text.strip().split(","):
        host, colon, port = entry.rpartition(":")
        if not entry or not colon or not _HOST.match(host) or not port.isascii() or not port.isdigit() \
                or not 0 < int(port) < 65536:
            raise ValidationError(f"{what + ': ' if what else ''}{entry!r} is not host:port (a host name or address, and a port "
                                  "1-65535)", hint=f"e.g. {EXAMPLE}")
        out.append(f"{host}:{int(port)}")
    if len(set(out)) != len(out):
        raise ValidationError(f"{lead}lists a server twice: {text!r}")
    return tuple(out)


def same_brokers(a: tuple[str, ...], b: tuple[str, ...], resolve) -> bool:
    """Do two parsed bootstrap lists reach the same cluster: one broker in common once host names are resolved
    (`resolve(host, port) -> addresses`, as core.zk.settings.same_zookeeper takes it)."""
    def addresses(entries: tuple[str, ...]) -> set[tuple[str, int]]:
        out = set()
        for e in entries:
            host, _, port = e.rpartition(":")
            out |= {(addr, int(port)) for addr in resolve(host.strip("[]"), int(port))}
        return out

    return bool(addresses(a) & addresses(b))


__all__ = ["parse_bootstrap", "same_brokers", "EXAMPLE"]
