"""The authorizer's decision lines of each Kafka release family (kafka_lines.py builds them from the format strings
of AclAuthorizer 2.8.0-3.8.0, StandardAuthorizerData 3.3.0-4.x and SimpleAclAuthorizer 2.8.0), read whole;
the lines that are not read are named, never split at a guess."""
from __future__ import annotations

import pytest

from services.requests.authorizer import Passed, Unread, decision
from schemas.requests.record import AUTHORIZER_LOGGER, RequestLine, Resource
from tests.services.requests.kafka_lines import (acl_authorizer, matching_acl, simple_acl,
                                                 standard_authorizer)


def read(message: str, level: str = "DEBUG") -> RequestLine | Unread | Passed:
    return decision(message, "kafka-authorizer.log", 3, 1000, level)


def test_zookeeper_modes_acl_authorizer_2_8_to_3_x():
    got = read(acl_authorizer("User:alice", True, "Alter", "10.0.0.5", "Topic:LITERAL:orders", "CreatePartitions"))
    assert isinstance(got, RequestLine)
    assert (got.log, got.form, got.principal, got.outcome, got.operation, got.host, got.api, got.api_key,
            got.ref_count, got.rule) == (AUTHORIZER_LOGGER, "acl-authorizer", "User:alice", "allowed", "ALTER",
                                         "10.0.0.5", "CreatePartitions", 37, 1, None)
    assert got.resources == (Resource("Topic", "LITERAL", "orders"),)
    assert (got.file, got.line, got.time_ms, got.level) == ("kafka-authorizer.log", 3, 1000, "DEBUG")


@pytest.mark.parametrize("pascal, name", [("AlterConfigs", "ALTER_CONFIGS"), ("ClusterAction", "CLUSTER_ACTION"),
                                          ("Create", "CREATE"), ("All", "ALL")])
def test_the_pascal_case_operation_is_read_as_the_enums_name(pascal, name):
    got = read(acl_authorizer("User:bob", False, pascal, "::1", "Cluster:LITERAL:kafka-cluster", "CreateTopics"))
    assert isinstance(got, RequestLine) and got.operation == name and got.outcome == "denied" and got.host == "::1"


@pytest.mark.parametrize("rule", [
    "SuperUser", "DefaultAllow", "DefaultDeny",
    matching_acl("TOPIC", "orders", "LITERAL", "User:alice", "ALTER", "ALLOW"),
    matching_acl("TOPIC", "ord", "PREFIXED", "User:*", "ALL", "DENY", host="10.0.0.5"),
])
def test_krafts_standard_authorizer_3_3_to_4_x(rule):
    allowed = "Deny" not in rule and "DENY" not in rule
    got = read(standard_authorizer("User:CN=Alice Smith,OU=ops", allowed, "ALTER", "0:0:0:0:0:0:0:1",
                                   "Topic:PREFIXED:ord", "CreateTopics", rule, refs=3),
               "DEBUG" if allowed else "INFO")
    assert isinstance(got, RequestLine)
    assert (got.form, got.principal, got.operation, got.host, got.rule, got.ref_count, got.api_key) == (
        "standard-authorizer", "User:CN=Alice Smith,OU=ops", "ALTER", "0:0:0:0:0:0:0:1", rule, 3, 19)
    assert got.outcome == ("allowed" if allowed else "denied")
    assert got.resources == (Resource("Topic", "PREFIXED", "ord"),)


def test_a_resource_name_with_colons_keeps_them():
    got = read(acl_authorizer("User:a", True, "Delete", "10.0.0.5", "Group:LITERAL:team:a:b", "DeleteAcls"))
    assert isinstance(got, RequestLine) and got.resources == (Resource("Group", "LITERAL", "team:a:b"),)


def test_2_8s_simple_acl_authorizer_names_no_request():
    got = read(simple_acl("User:alice", True, "Alter", "10.0.0.5", "Topic:LITERAL:orders"))
    assert isinstance(got, RequestLine)
    assert (got.form, got.api, got.api_key, got.ref_count, got.operation) == ("simple-acl", None, None, None, "ALTER")
    # its decisions no change asks for are passed over by their operation
    assert read(simple_acl("User:alice", True, "Read", "10.0.0.5", "Topic:LITERAL:orders")) == Passed("(read)")


@pytest.mark.parametrize("api", ["Produce", "Fetch", "Metadata", "DescribeConfigs", "99"])
def test_decisions_for_apis_that_change_no_controller_state_are_passed(api):
    assert read(acl_authorizer("User:a", True, "Read", "10.0.0.5", "Topic:LITERAL:t", api)) == Passed(api)
    assert read(standard_authorizer("User:a", True, "READ", "10.0.0.5", "Topic:LITERAL:t", api, "SuperUser")) \
        == Passed(api)


@pytest.mark.parametrize("principal, resource", [
    ("User:x is Allowed Operation = y", "Topic:LITERAL:t"),
    ("User:a from host = 1.2.3.4", "Topic:LITERAL:t"),
    ("User:a", "Group:LITERAL:g for request = Fetch with resourceRefCount = 1"),
    ("User:a", "Group:LITERAL:g on resource = Topic:LITERAL:other"),
])
def test_a_name_holding_the_lines_words_makes_it_ambiguous_not_guessed(principal, resource):
    for message in (acl_authorizer(principal, True, "Alter", "10.0.0.5", resource, "CreateTopics"),
                    standard_authorizer(principal, True, "ALTER", "10.0.0.5", resource, "CreateTopics", "SuperUser")):
        got = read(message)
        assert isinstance(got, Unread) and "ambiguous" in got.reason, message


@pytest.mark.parametrize("message", [
    "Principal = User:a is Allowed Operation = Alter from host = 10.0.0.5",  # cut
    "Principal = User:a is Maybe Operation = Alter from host = h on resource = Topic:LITERAL:t",
    "Principal = User:a is Allowed Operation = Alter from host = h on resource = topic-t for request = CreateTopics "
    "with resourceRefCount = 1",  # a resource without its type and pattern
    "Principal = User:a is Allowed Operation = Alter from host = h on resource = Topic:LITERAL:t for request = "
    "CreateTopics with resourceRefCount = many",
    "Principal = User:a is Allowed Operation = Alter from host = h on resource = Topic:LITERAL:t for request = "
    "CreateTopics with resourceRefCount = 1 based on rule x based on rule y",
    "User:a was allowed to Alter Topic:t",  # a plugin authorizer's own line
])
def test_lines_in_none_of_the_forms_are_named(message):
    got = read(message)
    assert isinstance(got, Unread) and got.reason


@pytest.mark.parametrize("message", [
    # AclAuthorizer.authorizeAction's DEBUG lines (2.8.0 to 3.8.0), beside the decision's own
    "No acl found for resource ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL), authorized = false",
    "principal = User:admin is a super user, allowing operation without checking acls.",
    "operation = ALTER on resource = ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) from host = "
    "10.0.0.5 is ALLOW based on acl = (principal=User:alice, host=*, operation=ALTER, permissionType=ALLOW)",
])
def test_how_acl_authorizer_decided_is_counted_not_kept(message):
    assert read(message) == Passed("(how AclAuthorizer decided)")
