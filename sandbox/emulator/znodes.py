"""The sandbox's own znodes (not Kafka's): broker intents and the controller emulator's status node.

The seeder leaves, per broker, an intent node /keel-sandbox/brokers/<id> holding the registration payload and
whether the broker should be up; `sandbox broker stop|start` rewrites it and the controller emulator acts on
it (its broker "processes" register or close their ZooKeeper sessions). The emulator's ephemeral status node
/keel-sandbox/emulator says it runs and what it last saw. Seeder, emulator and broker commands all share this.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

SANDBOX_ROOT = "/keel-sandbox"
INTENTS = SANDBOX_ROOT + "/brokers"     # /keel-sandbox/brokers/<id>: what the broker "process" should do
EMULATOR = SANDBOX_ROOT + "/emulator"   # ephemeral: a controller emulator is running (payload: its status)


def intent_path(broker_id: int) -> str:
    return f"{INTENTS}/{broker_id}"


@dataclass(frozen=True)
class BrokerIntent:
    """Payload of /keel-sandbox/brokers/<id>: the registration to write when up, and whether it is up."""

    broker_id: int
    registration: str  # the /brokers/ids/<id> payload, as a JSON string
    up: bool


def encode_intent(registration: str, up: bool) -> bytes:
    return json.dumps({"registration": registration, "up": up}, separators=(",", ":")).encode()


def decode_intent(broker_id: int, data: bytes | None) -> BrokerIntent | None:
    """None when the node is missing or unreadable (an intent nobody can act on)."""
    try:
        obj = json.loads(data or b"")
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("registration"), str):
        return None
    return BrokerIntent(broker_id, obj["registration"], bool(obj.get("up", True)))


def decode_status(data: bytes | None) -> dict:
    """Payload of /keel-sandbox/emulator: {"version":1,"live_brokers":[...],"controller":id,"epoch":n}."""
    try:
        obj = json.loads(data or b"")
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


__all__ = ["SANDBOX_ROOT", "INTENTS", "EMULATOR", "BrokerIntent", "intent_path", "encode_intent", "decode_intent",
           "decode_status"]
