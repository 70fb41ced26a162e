"""kafka-python's admin client, connected the way Keel needs it (core.kafka.admin wraps it).

* Connecting that fails releases the client's I/O thread, sockets and metrics (kafka-python keeps them otherwise).
* Refused credentials or a refused certificate stop the connection at once, as Kafka's own clients treat an
  authentication failure as fatal; kafka-python would try again until its bootstrap timeout (10 s by default, the
  whole of it spent on an answer that cannot change).
* kafka-python reports a failed bootstrap as a bare timeout; the cause is only logged, from the client's I/O thread
  (`kafka-io-<client id>`). `CAUSES` keeps the recent ones per client, so the error names the cause.
"""

from __future__ import annotations

import contextlib
import logging
import re
import ssl
import threading
from collections import deque
from typing import Callable

from kafka.admin import KafkaAdminClient

from core.kafka.client_config import ClientConfigError, KafkaClientSecurity

__all__ = ["AdminClient", "AUTH_HINT", "CAUSES", "is_auth_failure", "is_tls_failure", "security_kwargs"]

AUTH_HINT = ("check the username and password in sasl.jaas.config and sasl.mechanism (--command-config, or "
             "command_config in keel.toml), and that the user exists on the brokers (kafka-configs "
             "--describe --entity-type users for SCRAM)")


def is_auth_failure(cause: str) -> bool:
    return "SaslAuthenticationFailed" in cause or "Authentication failed" in cause or "UnsupportedSaslMechanism" in cause


def is_tls_failure(cause: str) -> bool:
    return "Handshake failed" in cause or "SSL" in cause or "CERTIFICATE" in cause


def _is_final(cause: str) -> bool:
    """A refusal the next attempt would meet again: credentials, or a certificate either side does not trust. (Not
    every TLS error: a broker restarting mid-handshake also reads "SSL: ... EOF".)"""
    return is_auth_failure(cause) or "CERTIFICATE" in cause.upper() or "UNKNOWN_CA" in cause.upper()


class AdminClient(KafkaAdminClient):
    """KafkaAdminClient that releases its I/O thread, sockets and metrics when connecting fails, and stops
    connecting at the first refused credentials or certificate."""

    def __init__(self, **configs):
        client_id = configs["client_id"]

        def stop() -> None:  # runs on the I/O thread, inside the bootstrap loop, which ends when its manager closes
            manager = getattr(self, "_manager", None)
            if manager is not None:
                manager.close()

        CAUSES.on_final(client_id, stop)
        try:
            super().__init__(**configs)
        except BaseException:
            for name in ("_client", "_metrics"):
                part = getattr(self, name, None)
                if part is not None:
                    with contextlib.suppress(Exception):
                        part.close()
            net = getattr(self, "_net", None)
            if net is not None:
                with contextlib.suppress(Exception):
                    net.stop()
            raise
        finally:
            CAUSES.on_final(client_id, None)


def _ssl_context(security: KafkaClientSecurity) -> ssl.SSLContext:
    """The TLS settings of `security` as Kafka's clients apply them (system CAs unless a truststore is given)."""
    where = security.source
    try:
        context = ssl.create_default_context(cafile=security.ca_file, cadata=security.ca_pem)
    except (ssl.SSLError, ValueError, OSError) as e:
        raise ClientConfigError(f"{where}: the truststore holds no PEM CA certificate Keel can read ({e})",
                                hint="ssl.truststore.location names a file with -----BEGIN CERTIFICATE----- "
                                     "blocks: the CAs that signed the brokers' certificates") from None
    context.check_hostname = security.check_hostname
    if security.cert_file:
        try:
            context.load_cert_chain(security.cert_file, password=security.key_password)
        except (ssl.SSLError, ValueError, OSError) as e:
            raise ClientConfigError(
                f"{where}: ssl.keystore.location holds no private key and certificate Keel can use ({e})",
                hint="one PEM file with the private key and its certificate chain; ssl.key.password must open "
                     "the key when it is encrypted") from None
    return context


def security_kwargs(security: KafkaClientSecurity | None) -> dict:
    """kafka-python's settings for Kafka's client properties (None: PLAINTEXT)."""
    if security is None:
        return {}
    kw: dict = {"security_protocol": security.protocol}
    if security.uses_sasl:
        kw.update(sasl_mechanism=security.mechanism, sasl_plain_username=security.username,
                  sasl_plain_password=security.password)
    if security.uses_ssl:
        kw["ssl_context"] = _ssl_context(security)
    return kw


class _ConnectionCauses(logging.Handler):
    """The connection failures kafka-python logs, kept per client (by its I/O thread's name)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._lock = threading.Lock()
        self._by_thread: dict[str, deque[str]] = {}
        self._on_final: dict[str, Callable[[], None]] = {}

    def on_final(self, client_id: str, stop: Callable[[], None] | None) -> None:
        """Call `stop` (on the client's I/O thread) when the client meets a refusal that will not change."""
        with self._lock:
            if stop is None:
                self._on_final.pop(f"kafka-io-{client_id}", None)
            else:
                self._on_final[f"kafka-io-{client_id}"] = stop

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not message.startswith(("Bootstrap connection to", "Connection failed")):
            return
        cause = message.split(" failed: ", 1)[-1].rsplit(" (backoff", 1)[0]
        # "[Error 58] SaslAuthenticationFailedError: SaslAuthenticationFailedError: Authentication failed: ..."
        cause = re.sub(r"^\[Error \d+\] (\w+): \1: ", r"\1: ", cause)
        with self._lock:
            if len(self._by_thread) > 256:  # clients that never failed to time out; forget the oldest
                self._by_thread.pop(next(iter(self._by_thread)))
            # every attempt of a bootstrap timeout: a broker that refuses credentials answers some attempts with the
            # error and drops others ("socket disconnected"), so the refusal may be well before the last few
            self._by_thread.setdefault(record.threadName, deque(maxlen=64)).append(cause)
            stop = self._on_final.pop(record.threadName, None) if _is_final(cause) else None
        if stop is not None:
            with contextlib.suppress(Exception):
                stop()

    def last(self, client_id: str) -> str | None:
        """The most telling recent cause for this client: an authentication or TLS failure over a disconnect."""
        with self._lock:
            causes = list(self._by_thread.pop(f"kafka-io-{client_id}", ()))
        for cause in reversed(causes):
            if is_auth_failure(cause) or is_tls_failure(cause):
                return cause
        return causes[-1] if causes else None


CAUSES = _ConnectionCauses()
_manager_log = logging.getLogger("kafka.net.manager")
_manager_log.addHandler(CAUSES)
# kafka-python logs connection failures at ERROR/WARNING ("Unable to bootstrap", "Node ... not ready") before the
# exception Keel translates; Keel reports it once, in its own words. (Only when nobody configured the "kafka"
# logger; the connection manager still logs its warnings to CAUSES alone.)
if logging.getLogger("kafka").level == logging.NOTSET:
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    _manager_log.setLevel(logging.WARNING)
    _manager_log.propagate = False
