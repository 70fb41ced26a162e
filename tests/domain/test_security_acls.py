"""core.security.acls: Kafka's authorizer rules (AclAuthorizer / StandardAuthorizerData, 3.9) and kafka-acls --list."""

from __future__ import annotations

import pytest

from core.errors import ValidationError
from core.security import acls as authz
from core.security.model import (CLUSTER_NAME, Acls, Binding, Operation, PatternType, Permission, Resource,
                                 ResourceType)

T, G, C, TX = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
Op = Operation
ALLOW, DENY = Permission.ALLOW, Permission.DENY
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def b(principal, op, name="orders", *, type=T, perm=ALLOW, host="*", pattern=LIT) -> Binding:
    return Binding(Resource(type, name, pattern), principal, host, op, perm)


def acls(*bindings, super_users=()) -> Acls:
    return Acls(tuple(bindings), "zookeeper", super_users)


# --- the rules --------------------------------------------------------------------------------------------------------

def test_implied_operations_follow_kafka():
    assert authz.implied(Op.READ) == {Op.READ, Op.DESCRIBE}
    for op in (Op.WRITE, Op.DELETE, Op.ALTER):
        assert authz.implied(op) == {op, Op.DESCRIBE}
    assert authz.implied(Op.ALTER_CONFIGS) == {Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}
    assert authz.implied(Op.ALL) == frozenset(Operation)
    assert authz.implied(Op.CREATE) == {Op.CREATE}
    assert authz.implied(Op.DESCRIBE_CONFIGS) == {Op.DESCRIBE_CONFIGS}  # not DESCRIBE
    assert authz.denied_by(Op.READ) == {Op.READ}
    assert authz.denied_by(Op.ALL) == frozenset(Operation)


def test_resource_matching_literal_wildcard_prefixed():
    assert authz.resource_matches(Resource(T, "orders"), T, "orders")
    assert not authz.resource_matches(Resource(T, "orders"), T, "orders2")
    assert not authz.resource_matches(Resource(T, "orders"), G, "orders")
    assert authz.resource_matches(Resource(T, "*"), T, "anything")
    assert authz.resource_matches(Resource(T, "ord", PRE), T, "orders")
    assert not authz.resource_matches(Resource(T, "ord", PRE), T, "or")
    assert not authz.resource_matches(Resource(T, "*", PRE), T, "orders")  # a prefixed '*' is not the wildcard
    assert not authz.resource_matches(Resource(T, "ord"), T, "orders")  # a literal is not a prefix


def test_allow_grants_and_implies_describe():
    a = acls(b("User:alice", Op.WRITE))
    assert authz.decide(a, "User:alice", Op.WRITE, T, "orders").allowed
    d = authz.decide(a, "User:alice", Op.DESCRIBE, T, "orders")
    assert d.allowed and d.by == (b("User:alice", Op.WRITE),)
    assert not authz.decide(a, "User:alice", Op.READ, T, "orders").allowed
    assert not authz.decide(a, "User:bob", Op.WRITE, T, "orders").allowed


def test_alter_configs_implies_describe_configs_only():
    a = acls(b("User:ops", Op.ALTER_CONFIGS))
    assert authz.decide(a, "User:ops", Op.DESCRIBE_CONFIGS, T, "orders").allowed
    assert not authz.decide(a, "User:ops", Op.DESCRIBE, T, "orders").allowed


def test_deny_beats_allow():
    a = acls(b("User:alice", Op.ALL), b("User:alice", Op.WRITE, perm=DENY))
    d = authz.decide(a, "User:alice", Op.WRITE, T, "orders")
    assert not d.allowed and d.by == (b("User:alice", Op.WRITE, perm=DENY),) and "DENY" in d.reason
    assert authz.decide(a, "User:alice", Op.READ, T, "orders").allowed


def test_deny_denies_only_its_own_operation_but_deny_all_denies_every_one():
    a = acls(b("User:alice", Op.READ), b("User:alice", Op.READ, perm=DENY))
    assert authz.decide(a, "User:alice", Op.DESCRIBE, T, "orders").allowed  # DENY READ does not deny DESCRIBE
    a = acls(b("User:alice", Op.READ), b("User:alice", Op.ALL, perm=DENY))
    assert not authz.decide(a, "User:alice", Op.DESCRIBE, T, "orders").allowed


def test_wildcard_principal_host_and_resource():
    a = acls(b("User:*", Op.READ, "*"))
    assert authz.decide(a, "User:anyone", Op.READ, T, "whatever").allowed
    a = acls(b("User:*", Op.READ), b("User:mallory", Op.ALL, "*", perm=DENY))
    assert authz.decide(a, "User:alice", Op.READ, T, "orders").allowed
    assert not authz.decide(a, "User:mallory", Op.READ, T, "orders").allowed
    # host: a binding for one address applies to that address only; "*" to every one
    a = acls(b("User:alice", Op.WRITE, host="10.0.0.1"))
    assert authz.decide(a, "User:alice", Op.WRITE, T, "orders", "10.0.0.1").allowed
    assert not authz.decide(a, "User:alice", Op.WRITE, T, "orders", "10.0.0.2").allowed
    assert not authz.decide(a, "User:alice", Op.WRITE, T, "orders").allowed  # an unnamed host
    a = acls(b("User:alice", Op.WRITE), b("User:alice", Op.WRITE, perm=DENY, host="10.0.0.9"))
    assert authz.decide(a, "User:alice", Op.WRITE, T, "orders", "10.0.0.1").allowed
    assert not authz.decide(a, "User:alice", Op.WRITE, T, "orders", "10.0.0.9").allowed
    # "User:*" is the only wildcard principal: another type's "*" names nobody else
    a = acls(b("Group:*", Op.READ))
    assert not authz.decide(a, "User:alice", Op.READ, T, "orders").allowed


def test_prefixed_bindings_apply_and_their_deny_wins():
    a = acls(b("User:alice", Op.WRITE, "pay", pattern=PRE), b("User:alice", Op.WRITE, "payments-eu", perm=DENY))
    assert authz.decide(a, "User:alice", Op.WRITE, T, "payments").allowed
    assert not authz.decide(a, "User:alice", Op.WRITE, T, "payments-eu").allowed
    assert not authz.decide(a, "User:alice", Op.WRITE, T, "orders").allowed


def test_no_acl_on_the_resource_is_denied_and_says_which_setting_decides():
    a = acls(b("User:alice", Op.WRITE, "other"))
    d = authz.decide(a, "User:alice", Op.WRITE, T, "orders")
    assert not d.allowed and d.by == () and "allow.everyone.if.no.acl.found" in d.reason
    assert authz.decide(a, "User:alice", Op.WRITE, T, "orders", allow_everyone_if_no_acl=True).allowed
    # any binding on the resource (even another principal's) means the setting no longer applies
    a = acls(b("User:bob", Op.READ))
    d = authz.decide(a, "User:alice", Op.WRITE, T, "orders", allow_everyone_if_no_acl=True)
    assert not d.allowed and "allow.everyone" not in d.reason


def test_super_users_allowed_everything_and_unknown_super_users_said():
    a = acls(b("User:admin", Op.ALL, perm=DENY), super_users=("User:admin",))
    d = authz.decide(a, "User:admin", Op.DELETE, T, "orders")
    assert d.allowed and "super" in d.reason
    assert not authz.decide(a, "User:bob", Op.DELETE, T, "orders").allowed
    # super.users holds names, not patterns: "User:*" there makes nobody else a super user (exact match in Kafka)
    a = acls(b("User:bob", Op.READ), super_users=("User:*",))
    assert not authz.decide(a, "User:alice", Op.READ, T, "orders").allowed
    zk = Acls((b("User:bob", Op.READ),), "zookeeper", None)
    assert "super.users is not known" in authz.decide(zk, "User:alice", Op.READ, T, "orders").reason


def test_who_may_lists_granting_and_denying_bindings_including_implied_wildcard_and_prefixed():
    write = b("User:alice", Op.WRITE)
    star = b("User:*", Op.READ, "*")
    prefixed = b("User:bob", Op.ALL, "ord", pattern=PRE)
    deny = b("User:bob", Op.DELETE, perm=DENY)
    other = b("User:carol", Op.READ, "elsewhere")
    access = authz.who_may(acls(write, star, prefixed, deny, other), T, "orders")
    assert set(access) == set(authz.WHO_MAY_OPERATIONS)
    assert set(access[Op.WRITE].allowed) == {write, prefixed}
    assert set(access[Op.READ].allowed) == {star, prefixed}
    assert set(access[Op.DESCRIBE].allowed) == {write, star, prefixed}
    assert access[Op.DELETE].denied == (deny,) and set(access[Op.DELETE].allowed) == {prefixed}
    assert access[Op.DESCRIBE].denied == ()
    assert other not in {x for acc in access.values() for x in acc.allowed}


def test_principals_allowed_applies_deny():
    a = acls(b("User:alice", Op.WRITE), b("User:bob", Op.WRITE), b("User:bob", Op.WRITE, perm=DENY),
             b("User:carol", Op.READ))
    assert authz.principals_allowed(a, Op.WRITE, T, "orders") == {"User:alice"}
    assert authz.principals_allowed(a, Op.DESCRIBE, T, "orders") == {"User:alice", "User:bob", "User:carol"}
    a = acls(b("User:*", Op.WRITE), b("User:mallory", Op.WRITE, perm=DENY))
    assert authz.principals_allowed(a, Op.WRITE, T, "orders") == {"User:*"}


def test_rights_of_counts_wildcard_bindings_and_implied_operations():
    mine = b("User:alice", Op.READ)
    everyone = b("User:*", Op.WRITE, "logs")
    group_all = b("User:alice", Op.ALL, "g1", type=G)
    rights = authz.rights_of(acls(mine, everyone, group_all, b("User:bob", Op.READ)), "User:alice")
    got = {(r.resource.name, r.operation, r.permission, r.binding) for r in rights}
    assert got == {("orders", Op.READ, ALLOW, mine), ("orders", Op.DESCRIBE, ALLOW, mine),
                   ("logs", Op.WRITE, ALLOW, everyone), ("logs", Op.DESCRIBE, ALLOW, everyone),
                   ("g1", Op.READ, ALLOW, group_all), ("g1", Op.DESCRIBE, ALLOW, group_all),
                   ("g1", Op.DELETE, ALLOW, group_all)}
    deny = b("User:alice", Op.READ, perm=DENY)
    assert [(r.operation, r.permission) for r in authz.rights_of(acls(deny), "User:alice")] == [(Op.READ, DENY)]


def test_filter_bindings():
    a1, a2 = b("User:alice", Op.WRITE), b("User:alice", Op.READ, "pay", pattern=PRE)
    b1, star = b("User:bob", Op.READ, perm=DENY), b("User:*", Op.READ, "*")
    g = b("User:alice", Op.READ, "g1", type=G)
    every = (a1, a2, b1, star, g)
    assert authz.filter_bindings(every) == every
    assert authz.filter_bindings(every, principal="User:alice") == (a1, a2, g)
    assert authz.filter_bindings(every, type=G) == (g,)
    assert authz.filter_bindings(every, type="topic", operation="Read", permission="ALLOW") == (a2, star)
    assert authz.filter_bindings(every, pattern=PRE) == (a2,)
    assert authz.filter_bindings(every, name="payments") == (a2, star)  # Kafka's matching: prefix and "*"
    assert authz.filter_bindings(every, name="orders", type=T) == (a1, b1, star)
    with pytest.raises(ValidationError, match="unknown Operation"):
        authz.filter_bindings(every, operation="Fly")


# --- kafka-acls --list --------------------------------------------------------------------------------------------

# `kafka-acls --authorizer-properties zookeeper.connect=... --list`, Kafka 3.9.1 (AclCommand), captured verbatim
KAFKA_LIST = (
    "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=*, patternType=LITERAL)`: \n"
    " \t(principal=User:mallory, host=10.0.0.7, operation=ALL, permissionType=DENY) \n"
    "\n"
    "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=pay-, patternType=PREFIXED)`: \n"
    " \t(principal=User:*, host=*, operation=DESCRIBE, permissionType=ALLOW) \n"
    "\n"
    "Current ACLs for resource `ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx-, patternType=PREFIXED)`: \n"
    " \t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW) \n"
    "\n"
    "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n"
    " \t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n"
    "\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n"
    "\t(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)\n"
    "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n"
    "\n"
    "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: \n"
    " \t(principal=User:broker, host=*, operation=CLUSTER_ACTION, permissionType=ALLOW) \n"
    "\n"
    "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=g1, patternType=LITERAL)`: \n"
    " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n"
    "\n")
KAFKA_BINDINGS = frozenset({
    b("User:mallory", Op.ALL, "*", perm=DENY, host="10.0.0.7"),
    b("User:*", Op.DESCRIBE, "pay-", pattern=PRE),
    b("User:alice", Op.WRITE, "tx-", type=TX, pattern=PRE),
    b("User:bob", Op.READ), b("User:alice", Op.WRITE), b("User:bob", Op.WRITE), b("User:alice", Op.READ),
    b("User:broker", Op.CLUSTER_ACTION, CLUSTER_NAME, type=C),
    b("User:alice", Op.READ, "g1", type=G),
})


def test_parse_list_text_reads_kafkas_output():
    assert authz.parse_list_text(KAFKA_LIST) == KAFKA_BINDINGS


def test_list_text_is_kafkas_format_and_round_trips():
    text = authz.list_text(KAFKA_BINDINGS)
    assert authz.parse_list_text(text) == KAFKA_BINDINGS
    # the same blocks as Kafka's, resource by resource (Kafka's order is a hash map's)
    def blocks(t):
        return {blk.splitlines()[0]: set(x.strip() for x in blk.splitlines()[1:])
                for blk in t.split("\n\n") if blk}
    assert blocks(text) == blocks(KAFKA_LIST)
    # a single resource with a single entry is byte for byte Kafka's
    one = (b("User:broker", Op.CLUSTER_ACTION, CLUSTER_NAME, type=C),)
    assert authz.list_text(one) == (
        "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: \n"
        " \t(principal=User:broker, host=*, operation=CLUSTER_ACTION, permissionType=ALLOW) \n\n")
    assert authz.list_text(()) == ""


def test_parse_list_text_skips_principal_headers_and_warnings_and_refuses_garbage():
    text = ("Warning: support for ACL configuration directly through the authorizer is deprecated\n"
            "ACLs for principal `User:alice`\n"
            "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=g1, patternType=LITERAL)`: \n"
            " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n\n")
    assert authz.parse_list_text(text) == {b("User:alice", Op.READ, "g1", type=G)}
    with pytest.raises(ValidationError, match="before any"):
        authz.parse_list_text(" \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n")
    with pytest.raises(ValidationError, match="unknown Operation 'FLY'"):
        authz.parse_list_text(text.replace("operation=READ", "operation=FLY"))


# --- edits ----------------------------------------------------------------------------------------------------------

def test_removal_risks_names_a_relied_on_principal_losing_its_last_allow():
    keel = b("User:keel", Op.DESCRIBE, "*")
    a = acls(keel, b("User:alice", Op.WRITE))
    risks = authz.removal_risks(a, [keel], {"User:keel": "Keel connects as it"})
    assert len(risks) == 1 and "User:keel (Keel connects as it) loses DESCRIBE" in risks[0]
    # another ALLOW still lets it in: no risk
    a = acls(keel, b("User:keel", Op.ALL, "*"))
    assert authz.removal_risks(a, [keel], {"User:keel": "Keel connects as it"}) == []
    # a User:* binding it relied on counts too
    star = b("User:*", Op.READ)
    assert authz.removal_risks(acls(star), [star], {"User:keel": "Keel connects as it"}) != []
    # removing someone else's binding or a DENY: no risk
    a = acls(keel, b("User:alice", Op.WRITE), b("User:keel", Op.WRITE, perm=DENY))
    assert authz.removal_risks(a, [b("User:alice", Op.WRITE), b("User:keel", Op.WRITE, perm=DENY)],
                               {"User:keel": "Keel connects as it"}) == []
    # a super user loses nothing
    a = Acls((keel,), "brokers", ("User:keel",))
    assert authz.removal_risks(a, [keel], {"User:keel": "Keel connects as it"}) == []


def test_removal_risks_names_brokers_losing_cluster_action():
    repl = b("User:broker", Op.CLUSTER_ACTION, CLUSTER_NAME, type=C)
    risks = authz.removal_risks(acls(repl, b("User:alice", Op.WRITE)), [repl], {})
    assert len(risks) == 1 and "User:broker loses CLUSTER_ACTION" in risks[0] and "replicate" in risks[0]
    assert authz.removal_risks(acls(repl, b("User:broker", Op.ALL, CLUSTER_NAME, type=C)), [repl], {}) == []
    assert authz.removal_risks(acls(repl, b("User:alice", Op.WRITE)), [b("User:alice", Op.WRITE)], {}) == []


def test_removal_risks_are_stable_strings_for_require_accepted():
    keel = b("User:keel", Op.READ)
    a = acls(keel)
    first = authz.removal_risks(a, [keel], {"User:keel": "Keel connects as it"})
    assert first == authz.removal_risks(a, {keel}, {"User:keel": "Keel connects as it"})
    assert "READ, DESCRIBE" in first[0] or "DESCRIBE, READ" in first[0]


def test_validate_bindings_refuses_what_kafka_refuses_or_never_matches():
    authz.validate_bindings([b("User:alice", Op.WRITE), b("User:*", Op.READ, "*", host="10.0.0.1"),
                             b("User:x", Op.CLUSTER_ACTION, CLUSTER_NAME, type=C), b("User:y", Op.ALL, "g", type=G),
                             b("User:z", Op.WRITE, "p", pattern=PRE, host="::1")])
    cases = [
        (b("alice", Op.WRITE), "'Type:name'"),
        (b("User:", Op.WRITE), "'Type:name'"),
        (b("User:alice", Op.WRITE, host="broker-1.example"), "not '\\*' or an IP address"),
        (b("User:alice", Op.ALTER, "other", type=C), "LITERAL 'kafka-cluster'"),
        (b("User:alice", Op.WRITE, "*", pattern=PRE), "PREFIXED '\\*' matches no name"),
        (b("User:alice", Op.WRITE, "g1", type=G), "GROUP only supports operations"),
        (b("User:alice", Op.WRITE, ""), "empty"),
        (b("User:alice", Op.WRITE, "a/b"), "'/'"),
    ]
    for binding, message in cases:
        with pytest.raises(ValidationError, match=message):
            authz.validate_bindings([binding])
    with pytest.raises(ValidationError) as info:  # every problem named at once
        authz.validate_bindings([c[0] for c in cases])
    assert info.value.message.count(";") == len(cases) - 1


def test_binding_from_args_is_kafka_acls_add():
    made = authz.binding_from_args(principals=["User:alice", "User:bob"], operations=["Read", "Write"], type="topic",
                                   name="orders")
    assert set(made) == {b(p, op) for p in ("User:alice", "User:bob") for op in (Op.READ, Op.WRITE)}
    made = authz.binding_from_args(principals=["User:broker"], operations=[Op.CLUSTER_ACTION], type=C, name="",
                                   permission="deny", hosts=["10.0.0.1"])
    assert made == (b("User:broker", Op.CLUSTER_ACTION, CLUSTER_NAME, type=C, perm=DENY, host="10.0.0.1"),)
    with pytest.raises(ValidationError, match="no binding"):
        authz.binding_from_args(principals=[], operations=["Read"], type=T, name="orders")
    with pytest.raises(ValidationError, match="only supports"):
        authz.binding_from_args(principals=["User:a"], operations=["Write"], type=G, name="g")
