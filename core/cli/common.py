"""What every `python -m core` subcommand shares: the ZooKeeper options (connect string, digest from the
environment or a file, TLS), opening a session (and settling actions an interrupted run left pending), progress
on stderr, and keeping kazoo's own log lines off the terminal. Imports no subcommand module.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from core.cli.argtypes import CONNECT, REQUEST, seconds
from core.errors import KeelError, SecretError, ValidationError

if TYPE_CHECKING:
    from core.audit.store import Store
    from core.kafka.admin import KafkaAdmin
    from core.zk.session import ZkSession


# --- ZooKeeper options -----------------------------------------------------------------


def add_zk_options(p: argparse.ArgumentParser, required: bool = True) -> None:
    g = p.add_argument_group("ZooKeeper")
    g.add_argument("--zk", required=required, metavar="CONNECT",
                   help="ZooKeeper connect string host:port[,host:port][/chroot] (Kafka's zookeeper.connect)")
    secret = g.add_mutually_exclusive_group()
    secret.add_argument("--zk-digest-file", metavar="PATH",
                        help="digest credentials user:password from the first line of PATH (default: $KEEL_ZK_DIGEST)")
    secret.add_argument("--zk-digest", metavar="USER:PASSWORD",
                        help="digest credentials on the command line: visible to other users (ps); prefer "
                             "$KEEL_ZK_DIGEST or --zk-digest-file")
    g.add_argument("--zk-tls-ca", metavar="PEM", help="CA bundle: connect with TLS")
    g.add_argument("--zk-tls-cert", metavar="PEM", help="client certificate for TLS")
    g.add_argument("--zk-tls-key", metavar="PEM", help="client key for TLS")
    g.add_argument("--connect-timeout", type=seconds(CONNECT), default=10.0, metavar="S",
                   help="give up connecting after S seconds (default 10)")
    g.add_argument("--write-timeout", type=seconds(REQUEST), metavar="S",
                   help="wait at most S seconds for ZooKeeper to confirm a write (default: the session timeout, 15, "
                        "plus the connect timeout); past it Keel says the outcome is unknown and keeps the action "
                        "pending until a later command finds out")


# --- Kafka's Admin API (core.kafka): what only the brokers know ------------------------------


def add_store_option(p: argparse.ArgumentParser, what: str = "action history") -> None:
    """--store: a SQLite file or a postgresql:// URL (core.audit.store), shared by every command that records."""
    p.add_argument("--store", metavar="FILE|URL",
                   help=f"{what}: a SQLite file or a postgresql:// URL (default: $KEEL_STORE, keel.toml's "
                        "[store] url, else .run/keel.sqlite)")


def add_bootstrap_option(p: argparse.ArgumentParser, help: str) -> None:
    g = p.add_argument_group("Kafka (Admin API)")
    g.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]", help=help)
    g.add_argument("--command-config", metavar="FILE",
                   help="Kafka client properties for the brokers (security.protocol, sasl.mechanism, "
                        "sasl.jaas.config, ssl.truststore.*): the file Kafka's own tools take")
    g.add_argument("--kafka-timeout", type=seconds(REQUEST), default=10.0, metavar="S",
                   help="give up on a broker request after S seconds (default 10)")


def kafka_security(args: argparse.Namespace):
    """--command-config read and checked (core.kafka.client_config), or None for PLAINTEXT."""
    path = getattr(args, "command_config", None)
    if not path:
        return None
    from core.kafka.client_config import load_command_config

    security = load_command_config(path)
    if security.ignored:
        print(f"note: {path}: Keel ignores {', '.join(security.ignored)} (client tuning Keel sets itself)",
              file=sys.stderr)
    return security


@contextmanager
def kafka_admin(args: argparse.Namespace, needed_for: str):
    """A core.kafka.admin.KafkaAdmin on --bootstrap-server, closed afterwards; a clear error without one."""
    if not getattr(args, "bootstrap_server", None):
        raise ValidationError(f"{needed_for} needs Kafka's Admin API: give --bootstrap-server HOST:PORT[,HOST:PORT]")
    from core.kafka.admin import KafkaAdmin

    admin = KafkaAdmin(args.bootstrap_server, timeout=args.kafka_timeout, security=kafka_security(args))
    try:
        yield admin
    finally:
        admin.close()


DIGEST_ENV = "KEEL_ZK_DIGEST"


def zk_digest(args: argparse.Namespace) -> str | None:
    """The digest credentials: --zk-digest-file or --zk-digest (with a warning) when given, else $KEEL_ZK_DIGEST.

    A secret on the command line is readable by every user of the machine (ps, /proc/<pid>/cmdline) and
    stays in shell history; the environment and a file are not. Child processes get it the same way."""
    if getattr(args, "zk_digest", None):
        print("warning: --zk-digest puts the password on the command line, where other users can read it "
              f"(ps, /proc/<pid>/cmdline) and shell history keeps it; prefer ${DIGEST_ENV} or --zk-digest-file",
              file=sys.stderr)
        return _checked_digest(args.zk_digest, "--zk-digest")
    if getattr(args, "zk_digest_file", None):
        return read_digest_file(args.zk_digest_file)
    env = os.environ.get(DIGEST_ENV)
    return _checked_digest(env, f"${DIGEST_ENV}") if env else None


def _checked_digest(value: str, where: str) -> str:
    user, colon, _ = value.partition(":")
    if not colon or not user:
        raise SecretError(f"{where} must hold digest credentials as user:password")  # never echo the value
    return value


def read_digest_file(path: str) -> str:
    """user:password from the first line of `path` (stripped); errors name the file, never its content."""
    p = Path(path)
    try:
        if p.is_dir():
            raise SecretError(f"--zk-digest-file {p} is a directory, not a file holding user:password")
        with open(p, encoding="utf-8") as f:
            first = f.readline(64 * 1024)
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise SecretError(f"--zk-digest-file {p} does not exist") from None
    except UnicodeDecodeError:
        raise SecretError(f"--zk-digest-file {p} is not UTF-8 text") from None
    except OSError as e:
        raise SecretError(f"--zk-digest-file {p} cannot be read: {e.strerror or e}") from None
    first = first.strip()
    if not first:
        raise SecretError(f"--zk-digest-file {p} is empty: its first line must be user:password")
    if mode & 0o077:
        print(f"warning: --zk-digest-file {p} can be read by other users (mode {stat.S_IMODE(mode):o}); "
              f"chmod 600 {p}", file=sys.stderr)
    return _checked_digest(first, f"the first line of --zk-digest-file {p}")


@contextmanager
def zk_session(args: argparse.Namespace) -> Iterator[ZkSession]:
    from core.zk.session import TlsOptions, ZkSession, ZkSettings

    tls = None
    if args.zk_tls_ca or args.zk_tls_cert or args.zk_tls_key:  # a key alone is an error the session names
        tls = TlsOptions(ca=args.zk_tls_ca, cert=args.zk_tls_cert, key=args.zk_tls_key)
    write_timeout = getattr(args, "write_timeout", None)
    if write_timeout is not None and not write_timeout > 0:
        raise ValidationError(f"--write-timeout must be a positive number of seconds, got {write_timeout:g}")
    session = ZkSession.open(ZkSettings(connect=args.zk, digest=zk_digest(args), tls=tls,
                                        connect_timeout=args.connect_timeout, write_timeout=write_timeout))
    try:
        yield session
    finally:
        session.close()


class UsageError(ValidationError):
    """A missing or contradictory argument argparse cannot express (one of two options): exit 2, as argparse's."""


def read_cluster(args: argparse.Namespace, *, cluster: str = "",
                 progress: Callable[[str, int, int], None] | None = None):
    """The whole cluster as a snapshot, from ZooKeeper (--zk) or, without --zk, through the brokers' Admin API
    (--bootstrap-server: any cluster, KRaft included). The read commands ask this and need not know which."""
    if getattr(args, "zk", None) is not None:  # given, even empty: the session says what is wrong with it
        from core.zk.reader import read_snapshot

        with zk_session(args) as session:
            return read_snapshot(session, cluster=cluster, progress=progress)
    if getattr(args, "bootstrap_server", None):
        from core.kafka.metadata import read_snapshot as read_through_admin

        with kafka_admin(args, "reading the cluster") as admin:
            return read_through_admin(admin, cluster=cluster)
    raise UsageError("give the cluster: --zk CONNECT (ZooKeeper mode) or --bootstrap-server HOST:PORT "
                     "(the brokers' Admin API: any cluster, KRaft included)")


def stderr_progress(enabled: bool) -> Callable[[str, int, int], None] | None:
    if not enabled:
        return None

    def report(stage: str, done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{stage:>8}: {done:,}/{total:,}", end=end, file=sys.stderr, flush=True)

    return report


@contextmanager
def quiet_kazoo(level: int = logging.CRITICAL) -> Iterator[None]:
    """Keep kazoo's own log lines ("Connection dropped: ...", "Transition to CONNECTING") off stderr while a
    command runs: they show up after a success (kazoo tried a dead server of the connect string first) and
    before a failure that Keel reports itself, in its words, as `error: ...`."""
    loggers = [logging.getLogger(name) for name in ("keel.kazoo", "kazoo")]
    saved = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(level)
    try:
        yield
    finally:
        for log, was in zip(loggers, saved):
            log.setLevel(was)


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed command (`args.func`) with kazoo quiet: 1 and `error: ...` on stderr for a KeelError (2 for a
    UsageError, as argparse's), 130 when interrupted. `python -m core` and `python -m sandbox` both end here, so
    their statuses agree."""
    try:
        with quiet_kazoo():  # every write goes through core.policy.gate (core.cli.common.write_session)
            return args.func(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130




# --- writes: through the gate (core.policy.gate), as the CLI's identity ---------------------------------------------

# The commands that write and the kind each records (core.policy.access.needed_role: delete-topic, rollback and the
# ACL / quota commands need admin).
WRITE_COMMANDS = {"create-topic": "create-topic", "add-partitions": "add-partitions", "alter-config": "alter-config",
                  "delete-topic": "delete-topic", "elect": "preferred-election", "execute": "reassignment",
                  "verify": "remove-throttles", "rollback": "rollback", "cancel": "cancel-reassignment",
                  "log-dirs-execute": "log-dir-move", "throttle": "throttle",
                  "auto-throttle": "throttle", "acl-add": "acl-add", "acl-remove": "acl-remove",
                  "quota-alter": "quota-alter", "security-undo": "security-undo",
                  # issue 30: consumer groups (operator: no kind starts with "delete", see access.needed_role)
                  "reset-offsets": "offsets-reset", "delete-offsets": "offsets-delete", "delete-group": "group-delete",
                  "offsets-undo": "offsets-undo"}


@dataclass(frozen=True)
class Writing:
    """What a write command works with: ZooKeeper's session (--zk) or, for a cluster reached through its brokers
    only (--bootstrap-server without --zk: KRaft), their Admin API; the audit store (None for a dry run, which
    writes nothing anywhere) and the name the store records the cluster under. `handle` is the one of the two the
    engine writes through (core.cluster.engines picks the engine by it)."""

    session: ZkSession | None
    store: Store | None
    cluster: str
    admin: KafkaAdmin | None = None

    @property
    def handle(self) -> ZkSession | KafkaAdmin:
        return self.session if self.session is not None else self.admin


def add_cluster_options(p: argparse.ArgumentParser, bootstrap_help: str | None = None) -> None:
    """--zk (ZooKeeper mode) or --bootstrap-server (the brokers' Admin API, KRaft included): a write command takes
    either; core.cli.common.write_session says which one it got."""
    add_zk_options(p, required=False)
    add_bootstrap_option(p, bootstrap_help or "the brokers' Admin API, HOST:PORT[,HOST:PORT]: the cluster without "
                                              "--zk (KRaft), written through its brokers")


def _through_brokers(args: argparse.Namespace) -> bool:
    if getattr(args, "zk", None) is not None:  # given, even empty: the session says what is wrong with it
        return False
    if getattr(args, "bootstrap_server", None):
        return True
    raise UsageError("give the cluster: --zk CONNECT (ZooKeeper mode) or --bootstrap-server HOST:PORT "
                     "(the brokers' Admin API: any cluster, KRaft included)")


@lru_cache(maxsize=256)
def resolve_host(host: str, port: int) -> frozenset[str]:
    """The addresses a ZooKeeper or broker host name stands for (core.policy.gate compares clusters by them); the name
    itself when it does not resolve."""
    try:
        return frozenset(str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError):
        return frozenset({host.lower()})


def cluster_name(args: argparse.Namespace) -> str:
    """The name a snapshot the command line writes records: --cluster when given, else the keel.toml cluster that
    --zk reaches however it is spelled (core.policy.gate.identify, as a write names it in History), else the canonical
    connect string. Never "": a snapshot file must say which cluster it holds."""
    from core.policy import gate
    from core.policy.config import ConfigError, load_cli_config

    if getattr(args, "cluster", None):
        return args.cluster
    try:
        config = load_cli_config()
    except ConfigError as e:  # a read goes on; only the name falls back
        print(f"warning: {e}; the snapshot is named by its connect string", file=sys.stderr)
        config = None
    return gate.identify(config, zk=getattr(args, "zk", None), bootstrap=getattr(args, "bootstrap_server", None),
                         resolve=resolve_host).label


@contextmanager
def write_session(args: argparse.Namespace) -> Iterator[Writing]:
    """The only way a command writes: ZooKeeper opened, then core.policy.gate's admission as source `cli` with the OS
    user ($KEEL_ACTOR overrides): keel.toml's read_only and roles on the cluster the connect string reaches
    (however spelled), and the cluster's migration state read now. A refusal is recorded; actions an
    interrupted run left pending on this cluster are settled; what the write records names actor, role and the
    cluster's id. A --dry-run only opens ZooKeeper: it writes nothing, not even the audit store."""
    brokers = _through_brokers(args)
    if getattr(args, "dry_run", False):
        if brokers:
            with kafka_admin(args, "reading the cluster") as admin:
                yield Writing(None, None, getattr(args, "cluster", None) or args.bootstrap_server, admin)
            return
        with zk_session(args) as session:
            yield Writing(session, None, getattr(args, "cluster", None) or args.zk)
        return
    if brokers:
        with _brokers_write_session(args) as w:
            yield w
        return
    from core.policy import access, gate
    from core.policy.config import ConfigError, load_cli_config
    from core.audit.store import Store, default_actor
    from core.zk.migration_state import ZkClusterProbe

    command = args.command
    kind = WRITE_COMMANDS[command]
    who = access.cli_identity(default_actor())
    named = getattr(args, "cluster", None)
    store = Store(getattr(args, "store", None))
    try:
        config = load_cli_config()
    except ConfigError as e:  # a KEEL_CONFIG naming no file must not drop its read_only and roles
        e.message += f"; refusing to {command}: keel.toml's read_only and roles would not apply (nothing was written)"
        gate.refuse(who, e, gate.identify(None, zk=args.zk, named=named, resolve=resolve_host), command, store)
        raise
    with zk_session(args) as session:
        probe = ZkClusterProbe(session)
        cluster_id = probe.cluster_id()
        try:
            target = gate.identify(config, zk=args.zk, named=named, resolve=resolve_host, cluster_id=cluster_id,
                                   recorded=store.cluster_names)
        except ValidationError as e:  # --cluster names another cluster than --zk reaches
            gate.refuse(who, e, gate.identify(None, zk=args.zk, resolve=resolve_host), command, store)
            raise
        admission = gate.admit(who, config, target, kind, what=command, probe=probe, store=store)
        _settle_pending(session, store, target)
        with gate.acting(admission, who):
            yield Writing(session, store, target.label)


@contextmanager
def _brokers_write_session(args: argparse.Namespace) -> Iterator[Writing]:
    """write_session for a cluster reached through its brokers: the same gate, its cluster id and state read from
    the brokers (core.kafka.probe). Nothing to settle: an Admin API write is answered or reported unknown then."""
    from core.audit.store import Store, default_actor
    from core.kafka.probe import BrokersProbe
    from core.policy import access, gate
    from core.policy.config import ConfigError, load_cli_config

    command = args.command
    who = access.cli_identity(default_actor())
    named = getattr(args, "cluster", None)
    store = Store(getattr(args, "store", None))
    boot = args.bootstrap_server
    try:
        config = load_cli_config()
    except ConfigError as e:
        e.message += f"; refusing to {command}: keel.toml's read_only and roles would not apply (nothing was written)"
        gate.refuse(who, e, gate.identify(None, bootstrap=boot, named=named, resolve=resolve_host), command, store)
        raise
    with kafka_admin(args, command) as admin:
        probe = BrokersProbe(admin)
        cluster_id = probe.cluster_id()
        try:
            target = gate.identify(config, bootstrap=boot, named=named, resolve=resolve_host, cluster_id=cluster_id,
                                   recorded=store.cluster_names)
        except ValidationError as e:
            gate.refuse(who, e, gate.identify(None, bootstrap=boot, resolve=resolve_host), command, store)
            raise
        admission = gate.admit(who, config, target, WRITE_COMMANDS[command], what=command, probe=probe, store=store)
        with gate.acting(admission, who):
            yield Writing(None, store, target.label, admin)


def _settle_pending(session: ZkSession, store: Store, target) -> None:
    """One stderr note per pending action of this cluster that core.zk.reconcile settled; best effort."""
    from core.zk.reconcile import reconcile_pending

    try:
        settled = reconcile_pending(session, store, target.label, cluster_id=target.cluster_id)
    except Exception as e:  # the command itself reports a broken store or ZooKeeper; the next run retries
        logging.getLogger(__name__).info("could not reconcile pending actions: %s", e)
        return
    for r in settled:
        print(r.note, file=sys.stderr)
