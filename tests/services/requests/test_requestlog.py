"""The request log's JSON lines of each Kafka release family (2.8-3.6, 3.7+ with requestApiVersionDeprecated, 4.x
with null bodies and the processor in the connection; kafka_lines.completed follows RequestConvertToJson), read
into the fields that attribute a change; secrets never reach the record; lines not in the form are named."""
from __future__ import annotations

import pytest

from services.normalize.redaction import REDACTED
from services.requests.authorizer import Passed, Unread
from schemas.requests.record import (REQUEST_LOGGER, AclChange, Body, ConfigSet, FeatureChange, QuotaChange,
                                      RequestLine, ScramChange, Target)
from services.requests.requestlog import completed as read_line
from tests.services.requests.kafka_lines import completed


def read(message: str) -> RequestLine | Unread | Passed:
    return read_line(message, "kafka-request.log", 9, 1000, "DEBUG")


def ok(message: str) -> RequestLine:
    got = read(message)
    assert isinstance(got, RequestLine), got
    return got


def body_of(message: str) -> Body:
    b = ok(message).body
    assert b is not None
    return b


CREATE_TOPICS = {"topics": [{"name": "orders", "numPartitions": -1, "replicationFactor": -1,
                             "assignments": [{"partitionIndex": 0, "brokerIds": [1, 2, 3]},
                                             {"partitionIndex": 1, "brokerIds": [2, 3, 1]}],
                             "configs": [{"name": "cleanup.policy", "value": "compact"},
                                         {"name": "rsm.config.secret", "value": "s3cr3t-topic"}]}],
                 "timeoutMs": 30000, "validateOnly": False}
CREATE_TOPICS_RESPONSE = {"throttleTimeMs": 0, "topics": [{"name": "orders", "topicId": "AAAAAAAAAAAAAAAAAAAAAA",
                                                           "errorCode": 0, "errorMessage": None}]}


@pytest.mark.parametrize("family", ["2.8", "3.x", "4.x"])
def test_create_topics_in_every_family(family):
    connection = "10.0.0.1:9092-10.0.0.5:52314-3-12" if family == "4.x" else "10.0.0.1:9092-10.0.0.5:52314-12"
    got = ok(completed(19, "CREATE_TOPICS", 7, CREATE_TOPICS, CREATE_TOPICS_RESPONSE, family=family,
                       connection=connection, deprecated=True))
    assert (got.log, got.form, got.file, got.line, got.time_ms) == (REQUEST_LOGGER, "request-json",
                                                                     "kafka-request.log", 9, 1000)
    assert (got.api, got.api_key, got.api_version, got.correlation_id, got.client_id) == (
        "CreateTopics", 19, 7, 7, "adminclient-1")
    assert (got.principal, got.host, got.listener, got.security_protocol, got.software_name,
            got.software_version, got.connection, got.forwarded) == (
        "User:alice", "10.0.0.5", "EXTERNAL", "SASL_SSL", "apache-kafka-java", "3.7.0", connection, False)
    assert got.error_codes == () and got.outcome is None and got.resources == ()
    b = got.body
    assert b is not None
    assert b.topics == ("orders",) and b.counts == (("orders", -1),) and b.replication_factors == (("orders", -1),)
    assert b.targets == (Target("orders", 0, (1, 2, 3)), Target("orders", 1, (2, 3, 1)))
    assert b.configs == (ConfigSet(2, "orders", "cleanup.policy", None, "compact", False),
                         ConfigSet(2, "orders", "rsm.config.secret", None, REDACTED, True))
    assert b.validate_only is False
    assert "s3cr3t" not in repr(got)


def test_a_line_without_its_body_has_none():
    for family in ("3.x", "4.x"):  # "" before 4.x, null after
        assert ok(completed(19, "CREATE_TOPICS", 7, None, None, family=family)).body is None


def test_the_responses_error_codes_are_the_outcome():
    response = {"throttleTimeMs": 0, "topics": [{"name": "a", "errorCode": 29}, {"name": "b", "errorCode": 36},
                                                {"name": "c", "errorCode": 29}, {"name": "d", "errorCode": 0}]}
    assert ok(completed(19, "CREATE_TOPICS", 7, CREATE_TOPICS, response)).error_codes == (29, 36)


def test_reassignment_with_a_cancel():
    request = {"timeoutMs": 60000, "topics": [{"name": "t", "partitions": [
        {"partitionIndex": 0, "replicas": [4, 5, 6]}, {"partitionIndex": 1, "replicas": None}]}]}
    b = ok(completed(45, "ALTER_PARTITION_REASSIGNMENTS", 0, request, {"errorCode": 0})).body
    assert b is not None and b.targets == (Target("t", 0, (4, 5, 6)), Target("t", 1, None))


@pytest.mark.parametrize("version, request_body, election, every", [
    (0, {"topicPartitions": [{"topic": "t", "partitions": [0, 2]}], "timeoutMs": 1}, "PREFERRED", False),
    (1, {"electionType": 0, "topicPartitions": None, "timeoutMs": 1}, "PREFERRED", True),
    (2, {"electionType": 1, "topicPartitions": [{"topic": "t", "partitions": [0, 2]}], "timeoutMs": 1}, "UNCLEAN",
     False),
])
def test_elect_leaders(version, request_body, election, every):
    b = ok(completed(43, "ELECT_LEADERS", version, request_body, {"errorCode": 0})).body
    assert b is not None and b.election_type == election and b.elect_all is every
    assert b.targets == (() if every else (Target("t", 0, None), Target("t", 2, None)))


def test_config_changes_are_redacted_by_the_archives_rules():
    request = {"resources": [{"resourceType": 4, "resourceName": "1", "configs": [
        {"name": "listener.name.external.ssl.keystore.password", "configOperation": 0, "value": "[hidden]"},
        {"name": "sasl.jaas.config", "configOperation": 0, "value": "org.Login required password=\"pw1\";"},
        {"name": "log.retention.ms", "configOperation": 1, "value": None},
        {"name": "min.insync.replicas", "configOperation": 0, "value": "2"}]}], "validateOnly": False}
    got = ok(completed(44, "INCREMENTAL_ALTER_CONFIGS", 1, request, {"responses": []}))
    assert got.body is not None and got.body.configs == (
        ConfigSet(4, "1", "listener.name.external.ssl.keystore.password", "SET", REDACTED, True),
        ConfigSet(4, "1", "sasl.jaas.config", "SET", REDACTED, True),
        ConfigSet(4, "1", "log.retention.ms", "DELETE", None, False),
        ConfigSet(4, "1", "min.insync.replicas", "SET", "2", False))
    assert "pw1" not in repr(got)
    legacy = {"resources": [{"resourceType": 2, "resourceName": "t", "configs": [
        {"name": "retention.ms", "value": "1000"}]}], "validateOnly": True}
    b = ok(completed(33, "ALTER_CONFIGS", 2, legacy, {"responses": []})).body
    assert b is not None and b.configs == (ConfigSet(2, "t", "retention.ms", None, "1000", False),)
    assert b.validate_only is True


def test_scram_credentials_keep_no_salt_nor_salted_password():
    salted = "c2FsdGVkLXBhc3N3b3JkLWJ5dGVzLTMyLWxvbmctLS0tLQ=="
    request = {"deletions": [{"name": "old", "mechanism": 1}],
               "upsertions": [{"name": "alice", "mechanism": 2, "iterations": 8192, "salt": "c2FsdHNhbHQ=",
                               "saltedPassword": salted}]}
    got = ok(completed(51, "ALTER_USER_SCRAM_CREDENTIALS", 0, request, {"results": []}))
    assert got.body is not None and got.body.scram == (ScramChange("delete", "old", 1, None, None),
                                                       ScramChange("upsert", "alice", 2, 8192, 34))
    assert salted not in repr(got) and "c2FsdHNhbHQ" not in repr(got)


def test_acls_quotas_features_nodes():
    acls = {"creations": [{"resourceType": 2, "resourceName": "t", "resourcePatternType": 3, "principal": "User:b",
                           "host": "*", "operation": 3, "permissionType": 3}]}
    assert body_of(completed(30, "CREATE_ACLS", 3, acls, {"results": []})).acls == (
        AclChange("create", 2, "t", 3, "User:b", "*", 3, 3),)
    filters = {"filters": [{"resourceTypeFilter": 2, "resourceNameFilter": None, "principalFilter": "User:b",
                            "hostFilter": None, "operation": 1, "permissionType": 1}]}  # version 0: no pattern
    assert body_of(completed(31, "DELETE_ACLS", 0, filters, {"filterResults": []})).acls == (
        AclChange("delete", 2, None, None, "User:b", None, 1, 1),)
    quotas = {"entries": [{"entity": [{"entityType": "user", "entityName": None}],
                           "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}],
              "validateOnly": False}
    assert body_of(completed(49, "ALTER_CLIENT_QUOTAS", 1, quotas, {"entries": []})).quotas == (
        QuotaChange((("user", None),), "producer_byte_rate", 1024.0, False),)
    features = {"timeoutMs": 1, "featureUpdates": [{"feature": "metadata.version", "maxVersionLevel": 21,
                                                    "upgradeType": 1}], "validateOnly": False}
    assert body_of(completed(57, "UPDATE_FEATURES", 1, features, {"errorCode": 0})).features == (
        FeatureChange("metadata.version", 21, 1, None),)
    assert body_of(completed(64, "UNREGISTER_BROKER", 0, {"brokerId": 4}, {"errorCode": 0})).nodes == (4,)
    deleted = {"topicNames": ["a", "b"], "timeoutMs": 1}
    assert body_of(completed(20, "DELETE_TOPICS", 5, deleted, {"responses": []})).topics == ("a", "b")
    by_id = {"topics": [{"name": None, "topicId": "q1w2e3r4t5y6u7i8o9p0aa"}], "timeoutMs": 1}
    b = ok(completed(20, "DELETE_TOPICS", 6, by_id, {"responses": []})).body
    assert b is not None and b.topics == () and b.topic_ids == ("q1w2e3r4t5y6u7i8o9p0aa",)


def test_krafts_forwarded_pair_the_brokers_line_and_the_controllers():
    grow = {"topics": [{"name": "t", "count": 6, "assignments": None}], "timeoutMs": 1, "validateOnly": False}
    broker = ok(completed(37, "CREATE_PARTITIONS", 3, grow, {"results": []}, correlation=41))
    controller = ok(completed(37, "CREATE_PARTITIONS", 3, grow, {"results": []}, correlation=41, forwarded=True,
                              connection="10.0.0.9:9093-10.0.0.1:40112-7", listener="CONTROLLER",
                              protocol="SASL_PLAINTEXT", software=("unknown", "unknown")))
    assert broker.forwarded is False and broker.host == "10.0.0.5" and broker.listener == "EXTERNAL"
    # the controller's connection is the broker's: the client's host is not on its line
    assert controller.forwarded is True and controller.host is None and controller.listener == "CONTROLLER"
    assert (controller.principal, controller.client_id, controller.correlation_id, controller.software_name) == (
        "User:alice", "adminclient-1", 41, "unknown")
    assert broker.body == controller.body and broker.body is not None and broker.body.counts == (("t", 6),)


def test_an_envelope_keeps_the_length_of_what_it_carries_never_its_bytes():
    got = ok(completed(58, "ENVELOPE", 0, {"requestData": "AAECAwQFBgc=", "requestPrincipal": "AAE=",
                                           "clientHostAddress": "CgAABQ=="}, {"errorCode": 31}))
    assert got.body is not None and got.body.withheld_bytes == 8 and got.error_codes == (31,)
    assert "AAECAwQFBgc" not in repr(got)


def test_other_apis_are_passed_unparsed():
    line = completed(0, "PRODUCE", 9, {"acks": -1, "topicData": "not even read"}, {"responses": []})
    assert read(line) == Passed("#0")
    assert read(line[:80]) == Passed("#0")  # passed by its opening: the rest is not read


@pytest.mark.parametrize("message, says", [
    ("Completed request:RequestHeader(apiKey=CREATE_TOPICS, apiVersion=5, clientId=a, correlationId=1) -- "
     "CreateTopicsRequestData(...)", "before 2.8"),
    ("Received request from a client", "not 'Completed request:'"),
    (completed(19, "CREATE_TOPICS", 7, CREATE_TOPICS, {})[:200], "does not parse"),
    (completed(19, "CREATE_TOPICS", 7, CREATE_TOPICS, {}, principal=None),  # type: ignore[arg-type]
     "principal: not a string"),
    (completed(19, "DELETE_TOPICS", 7, CREATE_TOPICS, {}), "requestApiKeyName: DELETE_TOPICS is not API 19's name"),
    (completed(19, "CREATE_TOPICS", 7, {"topics": [{"name": 5}]}, {}), "request.topics[0].name: not a string"),
    (completed(43, "ELECT_LEADERS", 2, {"electionType": 7, "topicPartitions": None}, {}), "not an election type"),
    (completed(51, "ALTER_USER_SCRAM_CREDENTIALS", 0, {"deletions": [], "upsertions": [
        {"name": "a", "mechanism": 1, "iterations": 1, "salt": "abc", "saltedPassword": "abcd"}]}, {}), "not base64"),
    (completed(19, "CREATE_TOPICS", 7, CREATE_TOPICS, {}).replace('"correlationId":7', '"correlationId":1e999'),
     "correlationId: not an integer"),
    ("Completed request:" + '{"isForwarded":false,"requestHeader":{"requestApiKey":19,' + "[" * 100_000,
     "does not parse"),
])
def test_lines_not_in_the_form_are_named(message, says):
    got = read(message)
    assert isinstance(got, Unread) and says in got.reason, got
