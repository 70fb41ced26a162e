"""What every `python -m core` subcommand shares: the ZooKeeper options (connect string, digest from the
environment or a file, TLS), opening a session (and settling actions an interrupted run left pending), progress
on stderr, and keeping kazoo's own log lines off the terminal. Imports no subcommand module.
"""

from __future__ import annotations

import argparse
import logging
import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from core.cli.argtypes import CONNECT, REQUEST, seconds
from core.errors import SecretError, ValidationError

if TYPE_CHECKING:
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
        if hasattr(args, "store"):  # a command that records actions: settle what an interrupted run left pending
            _reconcile_pending(session, args)
        yield session
    finally:
        session.close()


def _reconcile_pending(session: ZkSession, args: argparse.Namespace) -> None:
    """One stderr note per pending action of this cluster that core.zk.reconcile settled; best effort."""
    import logging

    from core.store import Store
    from core.zk.reconcile import reconcile_pending

    try:
        settled = reconcile_pending(session, Store(args.store), getattr(args, "cluster", None) or args.zk)
    except Exception as e:  # the command itself reports a broken store or ZooKeeper; the next run retries
        logging.getLogger(__name__).info("could not reconcile pending actions: %s", e)
        return
    for r in settled:
        print(r.note, file=sys.stderr)


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




# --- who acts: the CLI's identity and role (core.access), recorded with every action ---------------------

# The commands that write to ZooKeeper and the role each needs (core.access.needed_role's split).
WRITE_COMMANDS = {"create-topic": "create-topic", "add-partitions": "add-partitions", "alter-config": "alter-config",
                  "delete-topic": "delete-topic", "elect": "preferred-election", "execute": "reassignment",
                  "verify": "remove-throttles", "rollback": "rollback", "cancel": "cancel-reassignment"}


@contextmanager
def acting_as_cli(args: argparse.Namespace) -> Iterator[None]:
    """Run a command as source `cli` with the OS user ($KEEL_ACTOR overrides): a write command is checked against
    keel.toml's [access] first (core.access: the CLI keeps every right unless a `cli` principal is named there),
    a refusal is recorded in the action history, and every action the command records carries actor, source and
    role. keel.toml is read only when it exists (KEEL_CONFIG, else the checkout's); read-only commands skip all."""
    command = getattr(args, "command", None)
    kind = WRITE_COMMANDS.get(command)
    if kind is None or getattr(args, "dry_run", False):
        yield
        return
    from core import access
    from core.config import config_path, load_config
    from core.store import Store, acting, default_actor

    who = access.cli_identity(default_actor())
    decision = access.Decision(access.Role.ADMIN, "no keel.toml")
    if config_path().is_file():
        config = load_config()
        cluster = _configured_cluster(config, args)
        try:
            decision = access.check(who, config, cluster, access.needed_role(kind), command)
        except access.RoleDeniedError as e:
            if hasattr(args, "store"):
                try:
                    Store(args.store).record(cluster=getattr(args, "cluster", None) or getattr(args, "zk", "") or "",
                                             kind="refused", target=command, summary=f"refused: {command}",
                                             result=str(e), actor=who.actor, source=who.source, role=e.role.value)
                except Exception as store_error:  # the refusal itself is what the user must see
                    logging.getLogger(__name__).info("could not record the refusal: %s", store_error)
            raise
    with acting(who.actor, who.source, decision.role.value):
        yield


def _configured_cluster(config, args: argparse.Namespace) -> str | None:
    """The keel.toml cluster a command acts on: --cluster when configured, else the one with this --zk."""
    name = getattr(args, "cluster", None)
    if name in config.clusters:
        return name
    zk = (getattr(args, "zk", None) or "").strip()
    return next((c.name for c in config.clusters.values() if c.zk == zk), None)
