"""Keel's rules against Kafka's own code, run in a JVM on the fetched jars (no broker): core.security.acls.decide
against org.apache.kafka.metadata.authorizer.StandardAuthorizer (KRaft, in memory) and
kafka.security.authorizer.AclAuthorizer (ZooKeeper mode, on a real ZooKeeper chroot); core.security.quotas.effective
against kafka.server.ClientQuotaManager's precedence. Every random case must agree."""

from __future__ import annotations

import random
import subprocess

import pytest

from core.security.acls import decide
from core.security.model import (CLUSTER_NAME, DEFAULT, Acls, Binding, Operation, PatternType, Permission, Quota,
                                 QuotaEntity, Resource, ResourceType)
from core.security.quotas import effective
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
    // args: "standard" (KRaft's StandardAuthorizer, in memory) or "zk <connect>" (AclAuthorizer, on ZooKeeper)
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        boolean zk = args[0].equals("zk");
        Authorizer auth = null;
        String config = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            if (f[0].equals("R")) {
                if (zk && (f[1] + "/" + f[2]).equals(config)) {  // same settings: empty the store, keep the authorizer
                    for (var r : auth.deleteAcls(null, List.of(AclBindingFilter.ANY))) r.toCompletableFuture().get();
                    continue;
                }
                if (auth != null) auth.close();
                Map<String, Object> cfg = new HashMap<>();
                cfg.put("super.users", f[1]);
                cfg.put("allow.everyone.if.no.acl.found", f[2]);
                config = f[1] + "/" + f[2];
                if (zk) {
                    cfg.put("zookeeper.connect", args[1]);
                    auth = new kafka.security.authorizer.AclAuthorizer();
                    auth.configure(cfg);
                    for (var r : auth.deleteAcls(null, List.of(AclBindingFilter.ANY))) r.toCompletableFuture().get();
                } else {
                    StandardAuthorizer standard = new StandardAuthorizer();
                    standard.configure(cfg);
                    standard.completeInitialLoad();
                    auth = standard;
                }
            } else if (f[0].equals("B")) {
                ResourcePattern pattern = new ResourcePattern(ResourceType.valueOf(f[1]), f[2], PatternType.valueOf(f[3]));
                AccessControlEntry entry = new AccessControlEntry(f[4], f[5], AclOperation.valueOf(f[6]),
                    AclPermissionType.valueOf(f[7]));
                if (zk) {
                    for (var r : auth.createAcls(null, List.of(new AclBinding(pattern, entry)))) {
                        var e = r.toCompletableFuture().get().exception();
                        if (e.isPresent()) throw e.get();
                    }
                } else {
                    ((StandardAuthorizer) auth).addAcl(Uuid.randomUuid(),
                        StandardAcl.fromAclBinding(new AclBinding(pattern, entry)));
                }
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
        if (auth != null) auth.close();
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


def scenarios(seed: int, count: int, *, grouped: bool = False):
    """(lines for the oracle, [(Keel's answer, the case)]) for `count` random sets of bindings, 8 questions each."""
    rnd = random.Random(seed)
    lines, ours = [], []
    for i in range(count):
        supers = ("User:admin",) if rnd.random() < 0.3 else ()
        everyone = rnd.random() < 0.2
        if grouped:  # four settings in turn, so that one AclAuthorizer serves a run of scenarios
            supers, everyone = (("User:admin",) if i * 4 // count % 2 else ()), i * 4 // count >= 2
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


def _oracle(tmp_path, lines: list[str], *mode: str, source: str = ORACLE, name: str = "Oracle") -> list[str]:
    version = kafka_version()
    try:
        lib = kafka_runner.lib_dir(version)
    except kafka_runner.KafkaNotFetchedError:
        kafka_runner.fetch(version)  # as the `kafka` fixture does: a failed fetch is an error, never a skip
        lib = kafka_runner.lib_dir(version)
    path = tmp_path / f"{name}.java"
    path.write_text(source)
    run = subprocess.run(["java", "-cp", f"{lib}/*", str(path), *mode], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return [x for x in run.stdout.splitlines() if not x.startswith("log4j:")]


def _agree(kafka_says: list[str], ours) -> None:
    assert len(kafka_says) == len(ours)
    disagree = [(k, case) for k, (mine, case) in zip(kafka_says, ours) if k != mine]
    assert disagree == [], f"{len(disagree)} of {len(ours)} answers differ from Kafka's, e.g. {disagree[:3]}"
    assert 0.1 < kafka_says.count("ALLOWED") / len(ours) < 0.5  # both answers well represented


def test_decide_agrees_with_kafkas_standard_authorizer(tmp_path):
    lines, ours = scenarios(seed=29, count=1500)
    _agree(_oracle(tmp_path, lines, "standard"), ours)


def test_decide_agrees_with_kafkas_acl_authorizer_on_zookeeper(tmp_path, zk_connect):
    lines, ours = scenarios(seed=30, count=200, grouped=True)
    _agree(_oracle(tmp_path, lines, "zk", zk_connect), ours)


# --- quotas ---------------------------------------------------------------------------------------------------------

QUOTA_ORACLE = r"""
import java.io.*;
import java.util.*;
import kafka.server.*;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Quota;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.config.ClientQuotaManagerConfig;
import scala.Option;

// "R": a new ClientQuotaManager; "U user client value" (user / client "-" for none); "Q user client": the quota
public class QuotaOracle {
    static Option<String> opt(String s) { return s.equals("-") ? Option.empty() : Option.apply(s); }
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        ClientQuotaManager m = null;
        Metrics metrics = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            if (f[0].equals("R")) {
                if (m != null) { m.shutdown(); metrics.close(); }
                metrics = new Metrics();
                m = new ClientQuotaManager(new ClientQuotaManagerConfig(), metrics, QuotaType.Produce$.MODULE$, Time.SYSTEM, "oracle", Option.empty());
            } else if (f[0].equals("U")) {
                m.updateQuota(opt(f[1]), opt(f[2]), opt(f[2]), Option.apply(Quota.upperBound(Double.parseDouble(f[3]))));
            } else if (f[0].equals("Q")) {
                double b = m.quota(f[1], f[2]).bound();
                System.out.println(b == Long.MAX_VALUE ? "NONE" : Double.toString(b));
            }
        }
        if (m != null) { m.shutdown(); metrics.close(); }
    }
}
"""
USERS = ("alice", "bob", DEFAULT, None)
CLIENTS = ("c1", "c2", DEFAULT, None)


def test_effective_quota_agrees_with_kafkas_client_quota_manager(tmp_path):
    rnd = random.Random(29)
    lines, ours = [], []
    entities = [QuotaEntity(u, c) for u in USERS for c in CLIENTS if (u, c) != (None, None)]
    for _ in range(600):
        lines.append("R")
        chosen = rnd.sample(entities, rnd.randint(0, 7))
        quotas = [Quota(e, {"producer_byte_rate": float(100 + i)}) for i, e in enumerate(chosen)]
        for q in quotas:
            lines.append(f"U\t{q.entity.user or '-'}\t{q.entity.client or '-'}\t{q.values['producer_byte_rate']}")
        for _ in range(6):
            user, client = rnd.choice(("alice", "bob", "carol")), rnd.choice(("c1", "c2", "c3", ""))
            lines.append(f"Q\t{user}\t{client}")
            hit = effective(quotas, user, client).get("producer_byte_rate")
            ours.append(("NONE" if hit is None else repr(hit[0]), (chosen, user, client)))
    kafka_says = _oracle(tmp_path, lines, source=QUOTA_ORACLE, name="QuotaOracle")
    assert len(kafka_says) == len(ours)
    disagree = [(k, case) for k, (mine, case) in zip(kafka_says, ours) if k != mine]
    assert disagree == [], f"{len(disagree)} of {len(ours)} answers differ from Kafka's, e.g. {disagree[:3]}"
    assert 0.2 < kafka_says.count("NONE") / len(ours) < 0.8
