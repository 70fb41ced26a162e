"""Who is controller: /controller, /controller_epoch and the emulator's own status node.

Mirrors KafkaController's election (`elect`, `onControllerFailover`) and
KafkaZkClient.registerControllerAndIncrementControllerEpoch: the lowest live broker registers the ephemeral
/controller and bumps /controller_epoch in one multi, guarded by the epoch node's version (losing that race
is Kafka's ControllerMovedException); when the broker hosting the controller dies, the lowest live broker
wins the next election. The emulator's status node /keel-sandbox/emulator (ephemeral, like /controller)
says an emulator runs; after our session expired both went with it and are claimed again (a controller
failover: epoch + 1), unless another controller took over meanwhile, in which case the emulator resigns.
"""

from __future__ import annotations

import json
import time

from core import zkformat as zf
from core.errors import (
    BusyError,
    CorruptZnodeError,
    KeelError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkOperationError,
)
from sandbox.emulator.context import ControllerContext, ControllerMovedError, log
from sandbox.emulator.znodes import EMULATOR
from core.zk.session import Op


class ControllerActiveError(BusyError):
    """Another controller (a Kafka broker or an emulator) owns this tree."""


def status(ctx: ControllerContext) -> bytes:
    return json.dumps({"version": 1, "live_brokers": sorted(ctx.live), "controller": ctx.controller_id,
                       "epoch": ctx.epoch, "handled": ctx.handled}, separators=(",", ":")).encode()


def publish(ctx: ControllerContext) -> None:
    """brokers.py waits on this: a stop/start is done once the emulator reports the new live set."""
    if ctx.expired:
        return  # the status node went with the session; the re-read after the reconnect creates it again
    try:
        ctx.zk.set(EMULATOR, status(ctx))
    except ZkOperationError as e:
        log.warning("could not publish the emulator status: %s", e)


def claim(ctx: ControllerContext) -> None:
    """At start: refuse a tree another controller owns, then create the emulator's status node."""
    zk = ctx.zk
    if not zk.exists("/"):
        raise KeelError(f"{ctx.where} does not exist: seed a sandbox first with "
                        f"`python -m sandbox up --zk {ctx.where}`")
    node = zk.get(zf.CONTROLLER)
    if node.exists:
        try:
            holder = f"broker {zf.decode_controller(node.data).broker_id}"
        except CorruptZnodeError:
            holder = "an unreadable /controller"
        raise ControllerActiveError(f"another controller is active on {ctx.where} ({holder} holds "
                                    "/controller): stop it, or wait for its session to expire")
    try:
        zk.create(EMULATOR, status(ctx), ephemeral=True, makepath=True)
    except ZkNodeExistsError:
        raise ControllerActiveError(f"a sandbox controller emulator is already running on {ctx.where} "
                                    f"({EMULATOR} exists)") from None


def reclaim(ctx: ControllerContext) -> None:
    """Our session expired: the ephemeral status node and /controller went with it. Claim the status node
    again and forget /controller (the next election registers it), unless someone else took over."""
    old, ctx.session_id = ctx.session_id, ctx.zk.session_id
    for path in (EMULATOR, zf.CONTROLLER):
        node = ctx.zk.get(path)
        if node.exists and old is not None and node.ephemeral_owner == old:
            try:  # left over from our expired session: ours to remove
                ctx.zk.delete(path, version=node.version)
            except ZkNoNodeError:
                pass
    node = ctx.zk.get(EMULATOR)
    if not node.exists:
        try:
            ctx.zk.create(EMULATOR, status(ctx), ephemeral=True, makepath=True)
            node = None
        except ZkNodeExistsError:
            node = ctx.zk.get(EMULATOR)
    if node is not None and node.exists and node.ephemeral_owner != ctx.session_id:
        raise ControllerMovedError(f"another sandbox controller emulator started on {ctx.where} while our "
                                   "ZooKeeper session was expired")
    node = ctx.zk.get(zf.CONTROLLER)
    if node.exists and node.ephemeral_owner != ctx.session_id:
        try:
            holder = f"broker {zf.decode_controller(node.data).broker_id}"
        except CorruptZnodeError:
            holder = "someone"
        raise ControllerMovedError(f"{holder} registered /controller while our ZooKeeper session was expired")
    if not node.exists:
        ctx.controller_id = None


def take_over(ctx: ControllerContext) -> None:
    """Register /controller for the lowest live broker and bump /controller_epoch, in one multi (as
    KafkaZkClient.registerControllerAndIncrementControllerEpoch does)."""
    node = ctx.zk.get(zf.CONTROLLER_EPOCH)
    current = zf.decode_controller_epoch(node.data) if node.exists else 0
    if not ctx.live:  # nobody can be controller yet; the first broker to register becomes it
        ctx.epoch, ctx.epoch_version = current, node.version
        if not node.exists:
            ctx.zk.create(zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(0), makepath=True)
            ctx.epoch_version = 0
        return
    become_controller(ctx, min(ctx.live), node, bump=ctx.bump or not node.exists)


def become_controller(ctx: ControllerContext, broker_id: int, epoch_node, *, bump: bool) -> None:
    current = zf.decode_controller_epoch(epoch_node.data) if epoch_node.exists else 0
    epoch = current + 1 if bump else current
    ops = []
    if not epoch_node.exists:
        ops.append(Op("create", zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(epoch)))
        version = 0
    elif bump:
        ops.append(Op("set", zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(epoch), version=epoch_node.version))
        version = epoch_node.version + 1
    else:
        ops.append(Op("check", zf.CONTROLLER_EPOCH, version=epoch_node.version))
        version = epoch_node.version
    if ctx.controller_id is not None:
        ops.append(Op("delete", zf.CONTROLLER))
    ops.append(Op("create", zf.CONTROLLER, zf.encode_controller(broker_id, int(time.time() * 1000)),
                  ephemeral=True))
    try:
        ctx.zk.multi(ops)
    except (ZkBadVersionError, ZkNodeExistsError) as e:
        raise ControllerMovedError(f"another controller registered first ({e})") from None
    ctx.epoch, ctx.epoch_version, ctx.controller_id = epoch, version, broker_id


def move_controller(ctx: ControllerContext) -> None:
    """The broker hosting the controller died: the lowest live broker wins the next election."""
    if ctx.controller_id in ctx.live:
        return
    if not ctx.live:
        if ctx.controller_id is not None:
            try:
                ctx.zk.delete(zf.CONTROLLER)
            except ZkNoNodeError:
                pass
            ctx.say(f"no live broker: broker {ctx.controller_id} no longer controller")
            ctx.controller_id = None
        return
    become_controller(ctx, min(ctx.live), ctx.zk.get(zf.CONTROLLER_EPOCH), bump=True)
    ctx.say(f"controller moved to broker {ctx.controller_id} (epoch {ctx.epoch})")


__all__ = ["ControllerActiveError", "status", "publish", "claim", "reclaim", "take_over", "become_controller",
           "move_controller"]
