"""core.security.acls.decide against Kafka's own authorizer: the same bindings and questions put to
org.apache.kafka.metadata.authorizer.StandardAuthorizer (the KRaft authorizer; AclAuthorizer's rules are the same) in a
JVM on the fetched jars, no broker. Thousands of random cases must agree one by one."""

from __future__ import annotations

import random
import subprocess

import pytest

from core.security.acls import decide
from core.security.model import (CLUSTER_NAME, Acls, Binding, Operation, PatternType, Permission, Resource,
                                 ResourceType)
from sandbox.processes import kafka as kafka_runner
from tests.kafka.realkafka import kafka_version

pytestmark = pytest.mark.kafka_min("3.3", "StandardAuthorizer")

# Reads scenarios on stdin ("R" super.users / allow.everyone, "B" a binding, "Q" a question), prints Kafka's answers.
ORACLE = r"""
import java.io.*;
import java.net.InetAddress;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.resource.*;
import org.apache.kafka.common.security.auth.*;
import org.apache.kafka.common.utils.SecurityUtils;
import org.apache.kafka.metadata.authorizer.*;
import org.apache.kafka.server.authorizer.*;

public class Oracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StandardAuthorizer auth = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            if (f[0].equals("R")) {
                auth = new StandardAuthorizer();
                Map<String, Object> cfg = new HashMap<>();
                cfg.put("super.users", f[1]);
                cfg.put("allow.everyone.if.no.acl.found", f[2]);
                auth.configure(cfg);
                auth.completeInitialLoad();
            } else if (f[0].equals("B")) {
                auth.addAcl(Uuid.randomUuid(), new StandardAcl(ResourceType.valueOf(f[1]), f[2],
                    PatternType.valueOf(f[3]), f[4], f[5], AclOperation.valueOf(f[6]), AclPermissionType.valueOf(f[7])));
            } else if (f[0].equals("Q")) {
                KafkaPrincipal p = SecurityUtils.parseKafkaPrincipal(f[1]);
                InetAddress addr = InetAddress.getByName(f[2]);
                AuthorizableRequestContext ctx = new AuthorizableRequestContext() {
                    public String listenerName() { return "PLAINTEXT"; }
                    public SecurityProtocol securityProtocol() { return SecurityProtocol.PLAINTEXT; }
                    public KafkaPrincipal principal() { return p; }
                    public InetAddress clientAddress() { return addr; }
                    public int requestType() { return 0; }
                    public int requestVersion() { return 0; }
                    public String clientId() { return "oracle"; }
                    public int correlationId() { return 1; }
                };
                Action a = new Action(AclOperation.valueOf(f[3]),
                    new ResourcePattern(ResourceType.valueOf(f[4]), f[5], PatternType.LITERAL), 1, false, false);
                System.out.println(auth.authorize(ctx, List.of(a)).get(0));
            }
        }
        System.out.flush();
    }
}
"""

TYPES = (ResourceType.TOPIC,) * 6 + (ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID)
NAMES = ("orders", "ord", "orders-eu", "*", "pay")  # literal, prefixes of each other, the wildcard
ASKED_NAMES = ("orders", "orders-eu", "ord", "pay", "payroll", "x")
PRINCIPALS = ("User:alice", "User:bob", "User:*")
HOSTS = ("*", "*", "10.0.0.1")
# a request asks for one operation, never ALL; the implied ones (DESCRIBE, DESCRIBE_CONFIGS) more often
ASKED = [o for o in Operation if o is not Operation.ALL] + [Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS] * 4
BOUND = [o for o in Operation] + [Operation.READ, Operation.WRITE, Operation.ALTER_CONFIGS, Operation.DESCRIBE] * 2


def scenarios(seed: int, count: int):
    """(lines for the oracle, [(Keel's answer, the case)]) for `count` random sets of bindings, 8 questions each."""
    rnd = random.Random(seed)
    lines, ours = [], []
    for _ in range(count):
        supers = ("User:admin",) if rnd.random() < 0.3 else ()
        everyone = rnd.random() < 0.2
        lines.append(f"R\t{';'.join(supers)}\t{str(everyone).lower()}")
        bindings: list[Binding] = []
        for _ in range(rnd.randint(0, 7)):
            t = rnd.choice(TYPES)
            name, pattern = ((CLUSTER_NAME, PatternType.LITERAL) if t is ResourceType.CLUSTER
                             else (rnd.choice(NAMES), rnd.choice(list(PatternType))))
            b = Binding(Resource(t, name, pattern), rnd.choice(PRINCIPALS), rnd.choice(HOSTS), rnd.choice(BOUND),
                        rnd.choice(list(Permission)))
            if b in bindings:  # Kafka holds a set
                continue
            bindings.append(b)
            lines.append(f"B\t{t.name}\t{name}\t{pattern.name}\t{b.principal}\t{b.host}\t{b.operation.name}\t"
                         f"{b.permission.name}")
        acls = Acls(tuple(bindings), "brokers", supers)
        for _ in range(8):
            t = rnd.choice(TYPES)
            name = CLUSTER_NAME if t is ResourceType.CLUSTER else rnd.choice(ASKED_NAMES)
            who, host, op = (rnd.choice(("User:alice", "User:bob", "User:admin", "User:carol")),
                             rnd.choice(("10.0.0.1", "10.0.0.2")), rnd.choice(ASKED))
            lines.append(f"Q\t{who}\t{host}\t{op.name}\t{t.name}\t{name}")
            d = decide(acls, who, op, t, name, host, allow_everyone_if_no_acl=everyone)
            ours.append(("ALLOWED" if d.allowed else "DENIED", (bindings, supers, everyone, who, host, op, t, name)))
    return lines, ours


def test_decide_agrees_with_kafkas_standard_authorizer(tmp_path):
    version = kafka_version()
    try:
        lib = kafka_runner.lib_dir(version)
    except kafka_runner.KafkaNotFetchedError:
        kafka_runner.fetch(version)  # as the `kafka` fixture does: a failed fetch is an error, never a skip
        lib = kafka_runner.lib_dir(version)
    source = tmp_path / "Oracle.java"
    source.write_text(ORACLE)
    lines, ours = scenarios(seed=29, count=1500)
    run = subprocess.run(["java", "-cp", f"{lib}/*", str(source)], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, timeout=300)
    kafka_says = [x for x in run.stdout.splitlines() if x in ("ALLOWED", "DENIED")]
    assert run.returncode == 0 and len(kafka_says) == len(ours), run.stderr[-3000:]
    disagree = [(k, case) for k, (mine, case) in zip(kafka_says, ours) if k != mine]
    assert disagree == [], f"{len(disagree)} of {len(ours)} answers differ from Kafka's, e.g. {disagree[:3]}"
    assert 0.1 < kafka_says.count("ALLOWED") / len(ours) < 0.5  # both answers well represented
