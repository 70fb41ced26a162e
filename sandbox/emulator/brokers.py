"""Stop and start sandbox brokers: write the broker's intent, then wait for the emulator to act on it.

The intent is the only thing written here; the running controller emulator does the rest (closes the
broker's session, or registers it again, then reacts as the controller). Works on any ZooKeeper-mode tree:
a broker without an intent gets one made from its current registration, so it can be started again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from core import zkformat as zf
from core.errors import KeelError, ZkBadVersionError, ZkNodeExistsError
from sandbox.emulator.znodes import EMULATOR, INTENTS, decode_intent, decode_status, encode_intent, intent_path
from core.zk.session import ZkSession


class SandboxControllerNotRunning(KeelError):
    """No controller emulator runs on this tree: nobody would act on a broker intent."""


@dataclass(frozen=True)
class BrokerChange:
    broker_id: int
    up: bool
    changed: bool  # False: the broker already was in that state

    def message(self) -> str:
        state = "up" if self.up else "down"
        if not self.changed:
            return f"broker {self.broker_id} is already {state}"
        return f"broker {self.broker_id} {'started' if self.up else 'stopped'}"


def stop_broker(session: ZkSession, broker_id: int, *, timeout: float = 10.0) -> BrokerChange:
    """Bring a broker down (its registration vanishes, the emulator moves leaders and shrinks ISRs)."""
    return _set(session, broker_id, False, timeout)


def start_broker(session: ZkSession, broker_id: int, *, timeout: float = 10.0) -> BrokerChange:
    """Bring a broker back (registered again, rejoins ISRs, leads nothing until an election)."""
    return _set(session, broker_id, True, timeout)


def _require_emulator(session: ZkSession) -> None:
    if not session.exists(EMULATOR):
        raise SandboxControllerNotRunning(
            f"no sandbox controller is running on {session.target}: start it with "
            f"`python -m sandbox controller --zk {session.target}`, then retry")


def _set(session: ZkSession, broker_id: int, up: bool, timeout: float) -> BrokerChange:
    _require_emulator(session)
    for _ in range(5):  # the intent may change under us (another stop/start): read it again
        reg = session.get(zf.broker_path(broker_id))
        node = session.get(intent_path(broker_id))
        intent = decode_intent(broker_id, node.data) if node.exists else None
        if not reg.exists and intent is None:
            raise KeelError(_unknown(session, broker_id))
        if reg.exists == up and (intent is None or intent.up == up):
            return BrokerChange(broker_id, up, changed=False)
        registration = intent.registration if intent is not None else reg.data.decode(errors="replace")
        data = encode_intent(registration, up)
        try:
            if node.exists:
                session.set(intent_path(broker_id), data, version=node.version)
            else:
                session.create(intent_path(broker_id), data, makepath=True)
            break
        except (ZkBadVersionError, ZkNodeExistsError):
            continue
    else:
        raise KeelError(f"the intent of broker {broker_id} kept changing: is someone else stopping and starting it?")
    _wait(session, broker_id, up, timeout)
    return BrokerChange(broker_id, up, changed=True)


def _wait(session: ZkSession, broker_id: int, up: bool, timeout: float) -> None:
    """Done when the registration is gone (back) and the emulator reports it handled that (its live set)."""
    deadline = time.monotonic() + timeout
    while True:
        registered = session.exists(zf.broker_path(broker_id))
        status = session.get(EMULATOR)
        if not status.exists:
            raise SandboxControllerNotRunning(
                f"the sandbox controller on {session.target} stopped while broker {broker_id} was being "
                f"{'started' if up else 'stopped'}: start it with `python -m sandbox controller --zk "
                f"{session.target}`")
        handled = (broker_id in (decode_status(status.data).get("live_brokers") or ())) == up
        if registered == up and handled:
            return
        if time.monotonic() >= deadline:
            what = "registered again" if up else "gone from /brokers/ids"
            raise KeelError(f"broker {broker_id} is not {what} after {timeout:g} s: is the sandbox controller "
                            f"on {session.target} still working? (see its log)")
        time.sleep(0.05)


def _unknown(session: ZkSession, broker_id: int) -> str:
    known = {int(n) for n in session.children(zf.BROKER_IDS) or () if n.isdigit()}
    known |= {int(n) for n in session.children(INTENTS) or () if n.isdigit()}
    listed = ", ".join(map(str, sorted(known))) or "none"
    return (f"unknown broker id {broker_id}: it is neither registered under /brokers/ids nor known to the "
            f"sandbox ({INTENTS}); known broker ids: {listed}")


__all__ = ["stop_broker", "start_broker", "BrokerChange", "SandboxControllerNotRunning"]
