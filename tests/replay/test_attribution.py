"""Attribution (replay/attribution.py): each change matched to the request that made it, the
controller's own changes said as such, and the rest said unattributed or ambiguous, never guessed."""
from __future__ import annotations

from schemas.events import (
    BrokerChange, BrokerChangeKind, ConfigChange, ConfigResourceType, ControllerEvent, ElectionType, PartitionChange,
    PartitionChangeKind as K, PartitionState, SourceKind, SourcePosition, TopicChange, TopicChangeKind,
)
from replay.attribution import (
    AMBIGUOUS, BOOTSTRAP, CONTROLLER, REQUEST, UNATTRIBUTED, attribute, denied,
)
from schemas.requests.record import AUTHORIZER_LOGGER, REQUEST_LOGGER, Body, ConfigSet, RequestLine, Resource, Target

T0 = 1_800_000_000_000
A = PartitionState((1, 2, 3), (1, 2, 3), 1, 1, 1)


def ev(seq: int, payload, at: int = T0, bootstrap: bool = False) -> ControllerEvent:
    return ControllerEvent(f"e{seq}", "c", seq, SourcePosition(SourceKind.KRAFT_LOG, seq), at, at, 1, 1, payload,
                           bootstrap=bootstrap)


def req(api: str, at: int, principal: str = "User:alice", body: Body | None = None, forwarded: bool = False,
        correlation: int = 7, errors: tuple[int, ...] = ()) -> RequestLine:
    return RequestLine(REQUEST_LOGGER, "json", "controller.log" if forwarded else "broker.log", 1, at, "DEBUG",
                       principal, api, None, correlation_id=correlation, client_id=f"{principal[5:]}-tool",
                       listener="CONTROLLER" if forwarded else "EXTERNAL", forwarded=forwarded, error_codes=errors,
                       body=body)


def allowed(api: str, at: int, resource: Resource, principal: str = "User:alice", outcome: str = "allowed"):
    return RequestLine(AUTHORIZER_LOGGER, "standard-authorizer", "authorizer.log", 1, at, "DEBUG", principal, api,
                       None, host="10.0.3.7", outcome=outcome, resources=(resource,))


def created(seq: int, topic: str, at: int = T0) -> list[ControllerEvent]:
    return [ev(seq, TopicChange(TopicChangeKind.CREATED, topic, "tid")),
            ev(seq + 1, PartitionChange(topic, "tid", 0, None, A, (K.CREATE,)), at)]


def test_a_created_topic_is_the_request_of_whoever_created_it():
    lines = [req("CreateTopics", T0 - 40, body=Body(topics=("orders",))),
             req("CreateTopics", T0 - 20, body=Body(topics=("orders",)), forwarded=True),  # the controller's line
             allowed("CreateTopics", T0 - 21, Resource("Topic", "LITERAL", "orders")),
             req("CreateTopics", T0 - 30, "User:bob", Body(topics=("payments",)), correlation=3)]
    got = attribute(created(0, "orders"), lines)
    assert [a.cause for a in got] == [REQUEST, REQUEST]
    for a in got:
        assert len(a.requests) == 1 and [x.forwarded for x in a.requests[0]] == [False, True]  # the broker's first
        assert a.requests[0][0].principal == "User:alice" and "CreateTopics by User:alice" in a.why
        assert [d.resources[0].name for d in a.decisions] == ["orders"]


def test_controller_changes_are_said_to_be_the_controllers():
    shrink = PartitionChange("orders", "tid", 0, A, PartitionState((1, 2, 3), (1, 2), 1, 1, 2), (K.ISR,))
    failover = PartitionChange("orders", "tid", 0, A, PartitionState((1, 2, 3), (2, 3), 2, 2, 2),
                               (K.LEADER, K.ISR), ElectionType.CLEAN)
    fenced = BrokerChange(1, BrokerChangeKind.FENCED, None, None)
    got = attribute([ev(0, shrink), ev(1, failover), ev(2, fenced)], [])
    assert [a.cause for a in got] == [CONTROLLER] * 3
    assert "AlterPartition" in got[0].why and "clean election" in got[1].why and "broker 1 fenced" in got[2].why


def test_a_preferred_election_is_a_request_when_one_asked_else_the_rebalance():
    pref = PartitionChange("orders", "tid", 0, A, PartitionState((1, 2, 3), (1, 2, 3), 2, 2, 2), (K.LEADER,),
                           ElectionType.PREFERRED)
    asked = req("ElectLeaders", T0 - 5, "User:carol",
                Body(topics=("orders",), targets=(Target("orders", 0, None),), election_type="PREFERRED"))
    got = attribute([ev(0, pref)], [asked])
    assert got[0].cause == REQUEST and got[0].requests[0][0].principal == "User:carol"
    other_partition = req("ElectLeaders", T0 - 5, "User:carol", Body(targets=(Target("orders", 1, None),)))
    got = attribute([ev(0, pref)], [other_partition])
    assert got[0].cause == CONTROLLER and "automatic preferred-leader rebalance" in got[0].why


def test_a_reassignment_starts_by_request_and_completes_by_the_controller():
    start = PartitionChange("orders", "tid", 0, A, A, (K.REASSIGNMENT_START,))
    done = PartitionChange("orders", "tid", 0, A, A, (K.REPLICAS, K.REASSIGNMENT_COMPLETE))
    asked = req("AlterPartitionReassignments", T0 - 3, "User:bob", Body(targets=(Target("orders", 0, (4, 2, 3)),)))
    got = attribute([ev(0, start), ev(1, done, T0 + 90_000)], [asked])
    assert [a.cause for a in got] == [REQUEST, CONTROLLER] and "reassignment completing" in got[1].why


def test_a_change_only_a_request_makes_with_none_in_the_logs_is_unattributed_never_guessed():
    deleted = ev(0, TopicChange(TopicChangeKind.DELETED, "orders", "tid"))
    too_early = req("DeleteTopics", T0 - 61_000, body=Body(topics=("orders",)))
    another_topic = req("DeleteTopics", T0 - 10, body=Body(topics=("payments",)))
    got = attribute([deleted], [too_early, another_topic])
    assert got[0].cause == UNATTRIBUTED and not got[0].requests
    assert "DeleteTopics request naming topic orders logged from 60000 ms before it to 5000 ms after" in got[0].why
    assert attribute([deleted], [too_early], skew_ms=2_000)[0].cause == REQUEST  # the clocks' skew widens it


def test_a_request_log_line_written_after_the_change_it_made_is_its_request():
    # the line is written when the response is sent, after the controller committed the change
    deleted = ev(0, TopicChange(TopicChangeKind.DELETED, "orders", "tid"))
    assert attribute([deleted], [req("DeleteTopics", T0 + 40, body=Body(topics=("orders",)))])[0].cause == REQUEST
    late = req("DeleteTopics", T0 + 5_001, body=Body(topics=("orders",)))
    assert attribute([deleted], [late])[0].cause == UNATTRIBUTED


def test_two_requests_for_one_change_are_ambiguous_unless_the_logs_tell_them_apart():
    both = [req("CreateTopics", T0 - 9, body=Body(topics=("orders",))),
            req("CreateTopics", T0 - 8, "User:bob", Body(topics=("orders",)), correlation=4)]
    got = attribute(created(0, "orders")[:1], both)
    assert got[0].cause == AMBIGUOUS and len(got[0].requests) == 2 and "the logs do not tell which" in got[0].why
    bob_refused = [both[0], req("CreateTopics", T0 - 8, "User:bob", Body(topics=("orders",)), correlation=4,
                                errors=(36,))]  # TOPIC_ALREADY_EXISTS
    got = attribute(created(0, "orders")[:1], bob_refused)
    assert got[0].cause == REQUEST and got[0].requests[0][0].principal == "User:alice"


def test_a_config_change_is_the_alter_configs_that_named_it():
    change = ev(0, ConfigChange(ConfigResourceType.TOPIC, "orders", "retention.ms", "1000"))
    topic_config = req("IncrementalAlterConfigs", T0 - 4, "User:dave",
                       Body(configs=(ConfigSet(2, "orders", "retention.ms", "SET", "1000", False),)))
    broker_config = req("IncrementalAlterConfigs", T0 - 4, "User:erin",
                        Body(configs=(ConfigSet(4, "orders", "retention.ms", "SET", "1000", False),)), correlation=9)
    got = attribute([change], [topic_config, broker_config])
    assert got[0].cause == REQUEST and got[0].requests[0][0].principal == "User:dave"


def test_the_authorizer_alone_attributes_and_says_so():
    only = [allowed("DeleteTopics", T0 - 5, Resource("Topic", "LITERAL", "orders"), "User:frank")]
    got = attribute([ev(0, TopicChange(TopicChangeKind.DELETED, "orders", "tid"))], only)
    assert got[0].cause == REQUEST and "the authorizer's line only" in got[0].why and "User:frank" in got[0].why


def test_denied_attempts_attribute_nothing_and_are_listed():
    no = allowed("DeleteTopics", T0 - 5, Resource("Topic", "LITERAL", "orders"), "User:mallory", outcome="denied")
    got = attribute([ev(0, TopicChange(TopicChangeKind.DELETED, "orders", "tid"))], [no])
    assert got[0].cause == UNATTRIBUTED and denied([no]) == [no]


def test_bootstrap_samples_and_gaps():
    from schemas.events import CaptureGap
    got = attribute([ev(0, TopicChange(TopicChangeKind.CREATED, "orders", "tid"), bootstrap=True),
                     ev(1, CaptureGap(0, 9, "not read"))], [])
    assert [a.cause for a in got] == [BOOTSTRAP]


def test_a_new_topics_partitions_are_its_create_and_later_ones_the_growths():
    events = [*created(0, "orders"), ev(2, PartitionChange("orders", "tid", 1, None, A, (K.CREATE,))),
              ev(3, PartitionChange("orders", "tid", 2, None, A, (K.CREATE,)), T0 + 1_000)]
    lines = [req("CreateTopics", T0 - 10, body=Body(topics=("orders",), counts=(("orders", 2),))),
             req("CreatePartitions", T0 + 990, "User:bob", Body(topics=("orders",), counts=(("orders", 3),)),
                 correlation=8)]
    got = attribute(events, lines)
    # by the counts asked for, whatever the times: ZooKeeper mode writes a new topic's partitions one by one
    assert [(a.cause, a.requests[0][0].api) for a in got] == [(REQUEST, "CreateTopics")] * 3 + [
        (REQUEST, "CreatePartitions")]
    # a topic created with the broker's default count (-1): which partitions it made, the logs do not say
    default = [req("CreateTopics", T0 - 10, body=Body(topics=("orders",), counts=(("orders", -1),))), lines[1]]
    assert [a.cause for a in attribute(events, default)] == [REQUEST, AMBIGUOUS, AMBIGUOUS, AMBIGUOUS]
