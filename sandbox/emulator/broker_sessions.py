"""The sandbox's broker "processes": one ZooKeeper session per broker, driven by its intent node.

A broker process is a ZooKeeper session of its own holding the broker's ephemeral /brokers/ids/<id>
registration: a broker dying is its session closing, exactly how a registration disappears from a real
cluster, and a broker starting registers again with a fresh timestamp, as a starting Kafka broker does. The
intents under /keel-sandbox/brokers (sandbox.emulator.znodes) say which brokers should be up. A broker whose
session expired registers again on its new session, as a Kafka broker does when its ZooKeeper client
re-initialises, unless it was stopped meanwhile. What the controller does about registrations coming and
going is in sandbox.emulator.broker_changes.
"""

from __future__ import annotations

import time

from core import zkformat as zf
from core.errors import CorruptZnodeError, ZkNodeExistsError, ZkNoNodeError
from sandbox.emulator.context import ControllerContext
from sandbox.emulator.znodes import INTENTS, BrokerIntent, decode_intent, intent_path
from core.zk.session import ZkSession

BROKER_SESSION = "<broker-session>"  # queued path (kind: the broker id): a broker's session was renewed


def on_intent_list(ctx: ControllerContext, _arg: str | None) -> None:
    for name in sorted(ctx.zk.children(INTENTS, watch=ctx.watch) or ()):
        if name.isdigit():
            on_intent(ctx, name)


def on_intent(ctx: ControllerContext, name: str | None) -> None:
    if not name or not name.isdigit():
        return
    node = ctx.zk.get(intent_path(int(name)), watch=ctx.watch)
    intent = decode_intent(int(name), node.data) if node.exists else None
    if intent is not None:
        apply_intent(ctx, intent)


def apply_intent(ctx: ControllerContext, intent: BrokerIntent) -> None:
    bid = intent.broker_id
    registered = ctx.zk.exists(zf.broker_path(bid))
    if intent.up and not registered:
        register(ctx, bid, intent.registration)
    elif not intent.up and registered:
        session = ctx.brokers.pop(bid, None)
        if session is not None:
            session.close()  # the broker process dies: ZooKeeper drops its ephemeral registration
            ctx.say(f"broker {bid} stopped: its ZooKeeper session closed")
        else:
            ctx.zk.delete(zf.broker_path(bid))
            ctx.say(f"broker {bid} stopped: deleted its registration (not created by the sandbox)")


def fresh_registration(bid: int, data: bytes) -> bytes:
    try:  # a fresh timestamp, as a starting broker writes one
        reg = zf.decode_broker(bid, data)
        return zf.encode_broker(reg.endpoints, version=reg.version, rack=reg.rack, jmx_port=reg.jmx_port,
                                timestamp_ms=int(time.time() * 1000),
                                listener_security_protocol_map=reg.listener_security_protocol_map or None,
                                features=reg.features)
    except (CorruptZnodeError, ValueError):
        return data


def register(ctx: ControllerContext, bid: int, registration: str) -> None:
    old = ctx.brokers.pop(bid, None)
    if old is not None:
        old.close()
    data = fresh_registration(bid, registration.encode())
    session = ZkSession.open(ctx.settings)
    try:
        session.create(zf.broker_path(bid), data, ephemeral=True, makepath=True)
    except ZkNodeExistsError:
        session.close()
        ctx.say(f"broker {bid} is already registered by another session: left as it is")
        return
    except BaseException:
        session.close()
        raise
    ctx.brokers[bid] = session
    ctx.broker_sids[bid] = session.session_id
    ctx.broker_registrations[bid] = data
    ctx.brokers_expired.discard(bid)
    session.on_state_change(lambda state, bid=bid, session=session: on_broker_session(ctx, bid, session, state))
    ctx.say(f"broker {bid} started: registered /brokers/ids/{bid}")


def on_broker_session(ctx: ControllerContext, bid: int, session: ZkSession, state: str) -> None:
    """Session callback (kazoo's thread): only records and enqueues; the worker re-registers."""
    if ctx.stopped or ctx.brokers.get(bid) is not session:
        return  # a session we closed ourselves (broker stopped, emulator stopping)
    if state == "lost":
        ctx.brokers_expired.add(bid)
    elif state == "connected" and bid in ctx.brokers_expired:
        ctx.brokers_expired.discard(bid)
        ctx.events.put((BROKER_SESSION, str(bid)))


def reregister(ctx: ControllerContext, bid: int) -> None:
    """A broker whose ZooKeeper session expired registers again on its new session (Kafka's broker does so
    when its ZooKeeper client re-initialises), unless it was stopped meanwhile."""
    session = ctx.brokers.get(bid)
    if session is None or not session.connected or ctx.expired or ctx.down_since is not None:
        return  # our own session is not back yet: its re-read (the emulator's resync) registers the broker
    intent = ctx.zk.get(intent_path(bid))
    if intent.exists and (decoded := decode_intent(bid, intent.data)) is not None and not decoded.up:
        return
    path = zf.broker_path(bid)
    node = session.get(path)
    if node.exists:
        if node.ephemeral_owner == session.session_id:
            return  # already registered on this session
        if node.ephemeral_owner != ctx.broker_sids.get(bid):
            ctx.say(f"broker {bid} is registered by another session after its own expired: left as it is")
            return
        try:  # our expired session's node, not yet removed: it is ours to remove
            session.delete(path, version=node.version)
        except ZkNoNodeError:
            pass
    try:
        session.create(path, fresh_registration(bid, ctx.broker_registrations.get(bid, b"")),
                       ephemeral=True, makepath=True)
    except ZkNodeExistsError:
        ctx.say(f"broker {bid} was registered by another session meanwhile: left as it is")
        return
    ctx.broker_sids[bid] = session.session_id
    ctx.say(f"broker {bid} registered again: its ZooKeeper session had expired")


__all__ = ["BROKER_SESSION", "on_intent_list", "on_intent", "apply_intent", "fresh_registration", "register",
           "on_broker_session", "reregister"]
