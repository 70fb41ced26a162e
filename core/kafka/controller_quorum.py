"""The KRaft quorum read from the controllers themselves, as `kafka-metadata-quorum.sh --bootstrap-controller`
does (KIP-919, Kafka 3.7+: controllers answer ApiVersions, DescribeQuorum and DescribeCluster on their controller
listener). Before a migration the brokers run in ZooKeeper mode and never answer DescribeQuorum: the controllers are
the only ones that can tell whether the quorum is healthy.

kafka-python's KafkaAdminClient cannot bootstrap from a controller (it sends Metadata, which a controller listener
does not serve), so DescribeQuorum (topic __cluster_metadata, partition 0) goes over a plain connection. Only the
quorum's leader answers it (Kafka 3.9's KafkaRaftClient.handleDescribeQuorumRequest: NOT_LEADER_OR_FOLLOWER from
the others): each given controller is asked in turn and, when none of them leads, the leader's controller endpoint
comes from DescribeCluster (endpoint type 2, the controllers), as Kafka's Admin client finds it. Reads only."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Sequence

import kafka.errors as kerrors

from core.kafka.admin import KafkaAdminError, _describe
from core.kafka.admin_client import security_kwargs
from core.kafka.bootstrap import parse_bootstrap
from core.kafka.client_config import KafkaClientSecurity
from core.kafka.metadata import quorum_of
from core.model import Quorum

METADATA_TOPIC = "__cluster_metadata"
_CONTROLLERS = 2  # DescribeCluster's EndpointType: 1 brokers, 2 controllers (KIP-919)
_ids = itertools.count(1)

_HINT = ("give a KRaft controller's controller listener (controller.listener.names / listeners in its "
         "server.properties, e.g. controller1:9093), Kafka 3.7 or later, reachable from here; the brokers' "
         "security settings are used for it (--command-config, or command_config in keel.toml)")


class ControllerQuorumError(KafkaAdminError):
    """No controller of --bootstrap-controller told the quorum (not reachable, not a controller, not the leader
    and no leader known)."""


class _NotLeader(Exception):
    def __init__(self, leader: str | None):
        self.leader = leader


def _client(servers: Sequence[str], security: KafkaClientSecurity | None, ms: int):
    from kafka.net.compat import KafkaNetClient

    return KafkaNetClient(bootstrap_servers=list(servers), client_id=f"keel-quorum-{next(_ids)}",
                          request_timeout_ms=ms, socket_connection_setup_timeout_ms=ms,
                          reconnect_backoff_max_ms=1000, **security_kwargs(security))


def _ask(servers: Sequence[str], security: KafkaClientSecurity | None, timeout: float) -> tuple[dict, str]:
    """(DescribeQuorum's answer as a dict, the server that gave it); _NotLeader(leader endpoint or None) when every
    server answered but none leads; KafkaAdminError naming each server's failure otherwise."""
    from kafka.protocol.admin import DescribeClusterRequest, DescribeQuorumRequest

    ms = int(timeout * 1000)
    client = _client(servers, security, ms)
    manager = client._manager
    failures: dict[str, str] = {}

    async def one(node) -> dict | None:
        conn = await manager.get_connection(node.node_id, timeout_ms=ms, pop_on_close=False,
                                            refresh_metadata_on_err=False)
        topic = DescribeQuorumRequest.TopicData
        request = DescribeQuorumRequest(topics=[topic(topic_name=METADATA_TOPIC,
                                                      partitions=[topic.PartitionData(partition_index=0)])])
        answer = (await manager.wait_for(conn.send_request(request), ms)).to_dict()
        if answer.get("error_code"):
            raise kerrors.for_code(answer["error_code"])(answer.get("error_message") or "")
        parts = [p for t in answer.get("topics") or () for p in t.get("partitions") or ()]
        code = parts[0].get("error_code") if parts else None
        if code == kerrors.NotLeaderForPartitionError.errno:
            return None
        if code:
            raise kerrors.for_code(code)(parts[0].get("error_message") or "")
        return answer

    async def leader_of(node) -> str | None:
        conn = await manager.get_connection(node.node_id, timeout_ms=ms, pop_on_close=False,
                                            refresh_metadata_on_err=False)
        answer = await manager.wait_for(conn.send_request(DescribeClusterRequest(
            include_cluster_authorized_operations=False, endpoint_type=_CONTROLLERS)), ms)
        for b in answer.brokers:
            if b.broker_id == answer.controller_id:
                return f"{b.host}:{b.port}"
        return None

    async def run():
        followers = []
        for node in manager.cluster.bootstrap_brokers():
            where = f"{node.host}:{node.port}"
            try:
                answer = await one(node)
            except kerrors.IncompatibleBrokerVersion:
                failures[where] = ("answers, but not DescribeQuorum: not a KRaft controller (a ZooKeeper-mode "
                                   "broker's listener?) or older than Kafka 3.7")
                continue
            except Exception as e:
                failures[where] = _describe(e) if str(e) or getattr(e, "description", "") else type(e).__name__
                continue
            if answer is not None:
                return answer, where
            followers.append(node)
        for node in followers:  # they answered, none leads: ask one of them who does
            try:
                leader = await leader_of(node)
            except Exception:  # no DescribeCluster (no controller registration yet): said as "no leader named"
                continue
            raise _NotLeader(leader)
        raise _NotLeader(None) if followers else KafkaAdminError("")

    try:
        client._net.start()
        return client._net.run(run)
    except KafkaAdminError:
        shown = "; ".join(f"{s}: {why}" for s, why in failures.items()) or "no answer"
        raise ControllerQuorumError(f"no KRaft controller of {','.join(servers)} answered DescribeQuorum within "
                                    f"{timeout:g} s ({shown})", hint=_HINT) from None
    finally:
        with contextlib.suppress(Exception):
            client.close()
        with contextlib.suppress(Exception):
            client._net.stop(timeout_ms=2000)


def controller_quorum(controllers: str, *, security: KafkaClientSecurity | None = None,
                      timeout: float = 10.0) -> tuple[Quorum, str]:
    """(the quorum as its leader describes it, the controller address that answered), asked of the controllers of
    `controllers` ("host:port[,host:port]", their controller listener); ControllerQuorumError with what to check
    when none answers, ValidationError for a malformed address."""
    servers = parse_bootstrap(controllers, "--bootstrap-controller")
    try:
        answer, where = _ask(servers, security, timeout)
    except _NotLeader as e:
        if e.leader is None or e.leader in servers:
            raise ControllerQuorumError(
                f"the controllers of {controllers} answered DescribeQuorum but none leads the quorum, and none "
                "named a leader (an election under way, or no majority of the voters running)",
                hint="start a majority of the controllers, or give the leader's address; "
                     "kafka-metadata-quorum.sh --bootstrap-controller ... describe --status shows it") from None
        answer, where = _ask((e.leader,), security, timeout)
    quorum = quorum_of(answer)
    if quorum is None:
        raise ControllerQuorumError(f"the controller {where} answered DescribeQuorum without the partition "
                                    f"{METADATA_TOPIC}-0", hint=_HINT)
    return quorum, where


def quorum_fact(controllers: str | None, *, security: KafkaClientSecurity | None = None,
                timeout: float = 10.0) -> tuple[Quorum | None, str | None, str | None]:
    """For readiness: (quorum, the controller that answered, None) or (None, None, why not); all None when no
    controller address was given. A malformed address raises (ValidationError): it is the operator's input."""
    if controllers is None or not controllers.strip():
        return None, None, None
    servers = parse_bootstrap(controllers.strip(), "--bootstrap-controller")
    try:
        quorum, where = controller_quorum(",".join(servers), security=security, timeout=timeout)
    except KafkaAdminError as e:
        return None, None, str(e)
    return quorum, where, None


__all__ = ["ControllerQuorumError", "controller_quorum", "quorum_fact", "METADATA_TOPIC"]
