"""The broker-log normalizer's rules on handmade lines in Kafka's wording: a state is emitted only when the lines
state it whole at its partition epoch; parts, skipped epochs and the history before the logs are named gaps;
older epochs, replays of deleted topics and duplicates add nothing."""
from __future__ import annotations

from schemas.events import CaptureGap, ControllerChange, PartitionChange, TopicChange, TopicChangeKind
from services.brokerlogs.lines import LogLine
from services.brokerlogs.normalizer import BrokerLogNormalizer

TID = "RNtMhD9NQi2xOjaNSWzCLA"


def _feed(messages: list[str]) -> tuple[BrokerLogNormalizer, list]:
    norm = BrokerLogNormalizer("c", clock=lambda: 0)
    out = []
    for i, m in enumerate(messages, 1):
        out += norm.feed(LogLine("node1/state-change.log", i, 1000 + i, "INFO", m, "state.change.logger"))
    return norm, out + norm.finish()


def _states(events):
    return [(e.payload.partition, e.payload.after.partition_epoch, e.payload.after.leader, e.payload.after.isr,
             e.payload.after.replicas) for e in events if isinstance(e.payload, PartitionChange) and e.payload.after]


def _gaps(events):
    return [e.payload.reason for e in events if isinstance(e.payload, CaptureGap)]


def _reg(p, pe, leader, isr, replicas, le=0, elr="[]"):
    return (f"[Broker id=1] Skipped the become-leader state change for t-{p} with topic id Some({TID}), partition "
            f"registration PartitionRegistration(replicas={replicas}, directories=[], isr={isr}, removingReplicas=[], "
            f"addingReplicas=[], elr={elr}, lastKnownElr=[], leader={leader}, leaderRecoveryState=RECOVERED, "
            f"leaderEpoch={le}, partitionEpoch={pe}) and isNew=false since it is already the leader with leader epoch 0.")


def _leader_line(p, pe, le, isr, broker=1):
    return (f"[Broker id={broker}] Leader t-{p} with topic id Some({TID}) starts at leader epoch {le} from offset 0 "
            f"with partition epoch {pe}, high watermark 0, ISR [{isr}], adding replicas [] and removing replicas [] . "
            f"Previous leader None and previous leader epoch was -1.")


def _follower_line(p, pe, le, leader, broker=2):
    return (f"[Broker id={broker}] Follower t-{p} starts at leader epoch {le} from offset 0 with partition epoch {pe} "
            f"and high watermark 0. Current leader is {leader}. Previous leader None and previous leader epoch was -1.")


def test_whole_states_only_and_the_history_before_the_logs_is_a_gap():
    norm, events = _feed([_reg(0, 3, 1, "[1, 2]", "[1, 2]"), _reg(0, 3, 1, "[1, 2]", "[1, 2]"),
                          _reg(0, 2, 2, "[2]", "[1, 2]"), _reg(0, 4, 1, "[1]", "[1, 2]")])
    assert isinstance(events[0].payload, CaptureGap) and "history before" in events[0].payload.reason
    assert [e.payload.kind for e in events if isinstance(e.payload, TopicChange)] == [TopicChangeKind.CREATED]
    # epoch 3 once (stated twice), epoch 2 (older, a slow broker) adds nothing, epoch 4 follows
    assert _states(events) == [(0, 3, 1, (1, 2), (1, 2)), (0, 4, 1, (1,), (1, 2))]
    assert events[-1].source.file == "node1/state-change.log" and events[-1].source.line == 4
    assert events[-1].source.node_id == 1


def test_a_leader_change_stated_in_part_waits_for_the_rest_and_never_completes_into_a_gap():
    # KRaft: a leader change is stated by the new leader (leader, ISR) and its followers (leader), none of
    # them with the replica set: not whole, so not emitted; the next whole epoch comes with a named gap
    norm, events = _feed([_reg(0, 3, 1, "[1, 2]", "[1, 2]"), _follower_line(0, 4, 1, 2, broker=1),
                          _leader_line(0, 4, 1, "2", broker=2), _reg(0, 5, 2, "[1, 2]", "[1, 2]", le=1)])
    assert _states(events) == [(0, 3, 1, (1, 2), (1, 2)), (0, 5, 2, (1, 2), (1, 2))]
    # (the others: before epoch 3, the partition's first state; epoch 4 in part when its first line came)
    gap = next(g for g in _gaps(events) if " before epoch 5 " in g)
    assert gap.startswith("t-0: partition epochs 4..4 before epoch 5 are stated whole in no log given")
    assert "epoch 4: adding=(), isr=(2,), leader=2, leader_epoch=1, removing=()" in gap
    assert "(node1/state-change.log:2, node1/state-change.log:3)" in gap


def test_a_difference_applies_only_on_the_epoch_it_starts_from():
    unclean = (f"[QuorumController id=1] UNCLEAN partition change for t-0 with topic ID {TID}: isr: [1] -> [2], "
               f"leader: 1 -> 2, leaderRecoveryState: RECOVERED -> RECOVERING, leaderEpoch: 0 -> 1, partitionEpoch: "
               f"{{a}} -> {{b}}")
    _, events = _feed([_reg(0, 1, 1, "[1]", "[1, 2]"), unclean.format(a=1, b=2)])
    assert _states(events)[-1] == (0, 2, 2, (2,), (1, 2))
    after = [e.payload.after for e in events if isinstance(e.payload, PartitionChange)][-1]
    assert after.leader_recovery_state == "RECOVERING" and after.leader_epoch == 1
    _, events = _feed([_reg(0, 0, 1, "[1]", "[1, 2]"), unclean.format(a=1, b=2)])  # epoch 1 never seen
    assert _states(events) == [(0, 0, 1, (1,), (1, 2))]
    assert "partition epochs 2" in _gaps(events)[-1] and "after the last state the logs give" in _gaps(events)[-1]


def test_elr_must_be_stated_once_the_cluster_has_eligible_leader_replicas():
    feature = "[QuorumController id=1] Replayed a FeatureLevelRecord setting feature eligible.leader.replicas.version to 1"
    change = (f"[QuorumController id=1] Replayed partition assignment change PartitionChangeRecord(partitionId=0, "
              f"topicId={TID}, isr=null, leader=-2, replicas=[1, 2, 3], removingReplicas=null, addingReplicas=[3], "
              f"leaderRecoveryState=-1, directories=null, eligibleLeaderReplicas=null, lastKnownElr=null) for topic t."
              f" (isr: [1, 2] -> [1, 2], replicaSet: [1, 2] -> [1, 2, 3], partitionEpoch: 4, leaderEpoch: 0)")
    # the difference from epoch 3 keeps the ELR (null: unchanged): whole
    _, events = _feed([feature, _reg(0, 3, 1, "[1, 2]", "[1, 2]"), change])
    assert _states(events)[-1] == (0, 4, 1, (1, 2), (1, 2, 3))
    # a leader's line states no ELR: with ELR on it is a part, never a guess
    _, events = _feed([feature, _reg(0, 3, 1, "[1, 2]", "[1, 2]"), _leader_line(0, 4, 1, "1,2"), _reg(0, 5, 1, "[1]",
                                                                                                      "[1, 2]")])
    assert [s[1] for s in _states(events)] == [3, 5]


def test_a_leaders_isr_update_is_the_epoch_before_with_its_isr():
    """server.log's ``[Partition t-p broker=N] ISR updated to .. and version updated to V``: V whole from V-1 (leader
    N, leader epoch and assignment kept); from any other epoch nothing; with ELR on (KRaft) the ELR is unstated."""
    isr = "[Partition t-0 broker=1] ISR updated to 1,2  and version updated to {v}"
    zk = "[Controller id=2] Sending update metadata request"  # ZooKeeper mode: the ISR is written as the leader sent it
    _, events = _feed([zk, _reg(0, 3, 1, "[1]", "[1, 2]", le=2), isr.format(v=4)])
    assert _states(events)[-1] == (0, 4, 1, (1, 2), (1, 2))
    assert [e.payload.after.leader_epoch for e in events if isinstance(e.payload, PartitionChange)] == [2, 2]
    _, events = _feed([zk, _reg(0, 3, 1, "[1]", "[1, 2]"), isr.format(v=5)])  # epoch 4 never seen: a part only
    assert [s[1] for s in _states(events)] == [3] and "t-0: partition epochs 5" in _gaps(events)[-1]
    feature = "[QuorumController id=1] Replayed a FeatureLevelRecord setting feature eligible.leader.replicas.version to 1"
    _, events = _feed([feature, _reg(0, 3, 1, "[1]", "[1, 2]"), isr.format(v=4)])
    assert [s[1] for s in _states(events)] == [3]


def test_outside_zookeeper_mode_a_leaders_isr_is_a_set_whose_order_another_line_gives():
    """KRaft 4.3.1, seen: the leader logs "ISR updated to 3,2", the controller's record (and describe) says [2, 3].
    Alone it never makes an epoch whole (nor does the epoch before's ISR); with a line that orders it, that order."""
    update = "[Partition t-0 broker=1] ISR updated to 2,1  and version updated to 4"
    _, events = _feed([_reg(0, 3, 1, "[1]", "[1, 2]"), update])
    assert [s[1] for s in _states(events)] == [3]
    _, events = _feed([_reg(0, 3, 1, "[1]", "[1, 2]"), update, _reg(0, 4, 1, "[1, 2]", "[1, 2]")])
    assert _states(events)[-1] == (0, 4, 1, (1, 2), (1, 2))
    assert not [g for g in _gaps(events) if "disagree" in g]


def test_deleted_topics_stay_deleted_when_a_restarted_controller_replays_them():
    created = f"[QuorumController id=1] Replayed TopicRecord for topic t with topic ID {TID}."
    removed = f"[QuorumController id=1] Replayed RemoveTopicRecord for topic t with ID {TID}."
    _, events = _feed([created, _reg(0, 0, 1, "[1]", "[1]"), removed, created, _reg(0, 0, 1, "[1]", "[1]")])
    kinds = [(type(e.payload).__name__, getattr(e.payload, "kind", None) or getattr(e.payload, "changes", None))
             for e in events]
    assert kinds == [("CaptureGap", None), ("TopicChange", TopicChangeKind.CREATED), ("PartitionChange", ("CREATE",)),
                     ("PartitionChange", ("DELETE",)), ("TopicChange", TopicChangeKind.DELETED)]


def test_zookeeper_assignment_carries_and_its_writes_keep_the_partition_epoch():
    zk = "[Controller id=1 epoch=1] "
    events = _feed([
        zk + "Changed partition t-0 state from NonExistentPartition to NewPartition with assigned replicas 1,2",
        zk + "Changed partition t-0 from NewPartition to OnlinePartition with state LeaderAndIsr(leader=1, leaderEpoch=0,"
             " isrWithBrokerEpoch=List(BrokerState(brokerId=1, brokerEpoch=-1), BrokerState(brokerId=2, brokerEpoch=-1)),"
             " leaderRecoveryState=RECOVERED, partitionEpoch=0)",
        "[Controller id=1] Successfully updated assignment of partition t-0 to ReplicaAssignment(replicas=1,2,3, "
        "addingReplicas=3, removingReplicas=)",
        _follower_line(0, 1, 1, 2),  # a part: ZooKeeper's controller states the rest
        zk + "Partition t-0 state changed to (Leader:2,ISR:2,LeaderRecoveryState:RECOVERED,LeaderEpoch:1,ZkVersion:1,"
             "ControllerEpoch:1) after removing replica 1 from the ISR as part of transition to OfflineReplica",
        "[Controller id=1] 1 successfully elected as the controller. Epoch incremented to 2 and epoch zk version is now 2",
    ])[1]
    assert _states(events) == [(0, 0, 1, (1, 2), (1, 2)), (0, 0, 1, (1, 2), (1, 2, 3)), (0, 1, 2, (2,), (1, 2, 3))]
    assert [e.payload.epoch for e in events if isinstance(e.payload, ControllerChange)] == [2]
    assert len(_gaps(events)) == 1  # only the history before the logs


def test_an_epoch_the_lines_disagree_on_is_a_gap_never_the_first_line_s_version():
    # Seen on Kafka 3.9 (tests/services/test_real_history.py): a controller logged an unclean election
    # 13 -> 14 (leader epoch 6 -> 7) that was never committed; the brokers then stated the committed epoch 14
    # (leader epoch 4). Neither line may win: epoch 14 is a gap naming both, epoch 15 follows.
    unclean = (f"[QuorumController id=2] UNCLEAN partition change for t-0 with topic ID {TID}: isr: [1] -> [3], "
               f"leader: -1 -> 3, leaderRecoveryState: RECOVERED -> RECOVERING, leaderEpoch: 6 -> 7, "
               f"partitionEpoch: 13 -> 14")
    norm, events = _feed([_reg(0, 12, 3, "[3]", "[1, 3]", le=4), unclean, _reg(0, 13, 3, "[3, 1]", "[1, 3]", le=4),
                          _reg(0, 14, 3, "[3]", "[1, 3]", le=4), _reg(0, 15, 3, "[3, 1]", "[1, 3]", le=4)])
    assert _states(events) == [(0, 12, 3, (3,), (1, 3)), (0, 13, 3, (3, 1), (1, 3)), (0, 15, 3, (3, 1), (1, 3))]
    gap = _gaps(events)[-1]
    assert gap.startswith("t-0: partition epochs 14..14 before epoch 15 are stated whole in no log given")
    assert "lines disagree: leader_epoch 4 (node1/state-change.log:4), 7 before" in gap
    assert norm.conflicts


def test_before_kafka_3_1_a_write_without_its_epoch_is_a_gap_until_an_epoch_is_stated_whole():
    """Kafka 3.0's controller: an ISR change from a leader (the epoch before, leader kept) is applied; its
    "state changed to (...)" without a ZkVersion is nothing when the leader epoch did not move (the replica was
    not in the ISR), else a gap at once: the assignment it meets waits, nothing is emitted on a guessed epoch."""
    zk = "[Controller id=1 epoch=1] "
    online = zk + ("Changed partition t-0 from NewPartition to OnlinePartition with state LeaderAndIsr(leader=1, "
                   "leaderEpoch=0, isr=List(1, 2), zkVersion=0)")
    events = _feed([
        zk + "Changed partition t-0 state from NonExistentPartition to NewPartition with assigned replicas 1,2",
        online,
        zk + "Partition t-0 state changed to (Leader:1,ISR:1,2,LeaderEpoch:0,ControllerEpoch:1) after removing "
             "replica 3 from the ISR as part of transition to OfflineReplica",  # not in the ISR: no write
        "[Controller id=1] ISR for partition t-0 updated to [1] and zkVersion updated to [1]",
        zk + "Partition t-0 state changed to (Leader:-1,ISR:1,LeaderEpoch:1,ControllerEpoch:1) after removing "
             "replica 1 from the ISR as part of transition to OfflineReplica",  # a write: epoch 2, unnamed
        zk + "Partition t-0 state changed to (Leader:-1,ISR:1,LeaderEpoch:1,ControllerEpoch:1) after removing "
             "replica 1 from the ISR as part of transition to OfflineReplica",  # said again: no second gap
        "[Controller id=1] Successfully updated assignment of partition t-0 to ReplicaAssignment(replicas=2,1, "
        "addingReplicas=, removingReplicas=)",
        zk + ("Changed partition t-0 from OfflinePartition to OnlinePartition with state LeaderAndIsr(leader=2, "
              "leaderEpoch=2, isr=List(2), zkVersion=3)"),
    ])[1]
    assert _states(events) == [(0, 0, 1, (1, 2), (1, 2)), (0, 1, 1, (1,), (1, 2)), (0, 3, 2, (2,), (2, 1))]
    # the state after the gap is a restatement, not a step from epoch 1 that a check could judge
    assert [e.bootstrap for e in events if isinstance(e.payload, PartitionChange)] == [False, False, True]
    gaps = _gaps(events)
    assert len(gaps) == 3, gaps
    assert gaps[1].startswith("t-0: partition epochs after 1 are stated whole in no log given; "
                              "node1/state-change.log:5 states leader -1, leader epoch 1, ISR [1] without")
    assert gaps[2].startswith("t-0: partition epochs 2..2 before epoch 3 are stated whole in no log given")



def test_topic_overrides_from_the_replicas_log_creation():
    from schemas.events import ConfigChange

    created = "Created log for partition t-0 in /d/t-0 with properties {{{}}}"
    _, events = _feed([_reg(0, 0, 1, "[1]", "[1, 2]"), created.format("unclean.leader.election.enable=true"),
                       created.format("unclean.leader.election.enable=true"), created.format(""),
                       "Created log for partition other-0 in /d/other-0 with properties {x=1}"])
    changes = [(e.payload.resource_name, e.payload.name, e.payload.value, e.payload.previous_value) for e in events
               if isinstance(e.payload, ConfigChange)]
    # once set (the second replica states the same), then gone; a topic no line created: nothing
    assert changes == [("t", "unclean.leader.election.enable", "true", None),
                       ("t", "unclean.leader.election.enable", None, "true")]


def test_a_brokers_own_registration_comes_before_the_controller_elects_it():
    """ZooKeeper mode: the controller logs its registered-brokers cache only after it acted on a new broker (elected
    it); the broker's own line comes first, so the history has the broker registered when it is elected."""
    from schemas.events import BrokerChange

    ctl = "[Controller id=2] {} broker epochs cache: HashMap({})"
    _, events = _feed([ctl.format("Initialized", "1 -> 10, 2 -> 11"), ctl.format("Updated", "2 -> 11"),
                       "Registered broker 1 at path /brokers/ids/1 with addresses: PLAINTEXT://h:1, czxid (broker "
                       "epoch): 40", ctl.format("Updated", "1 -> 40, 2 -> 11")])
    said = [(e.source.line, e.payload.broker_id, e.payload.kind.value, (e.payload.after or e.payload.before).epoch)
            for e in events if isinstance(e.payload, BrokerChange)]
    assert said == [(1, 1, "REGISTERED", 10), (1, 2, "REGISTERED", 11), (2, 1, "UNREGISTERED", 10),
                    (3, 1, "REGISTERED", 40)]  # the cache's later line states the same: nothing more


def test_brokers_a_controller_added_are_registered_before_it_elects_them():
    """ZooKeeper mode: ``Newly added brokers: 1``, then the controller elects broker 1 (state-change.log), then its
    cache line states broker 1's epoch: the registration is placed at the line that added it, before the election."""
    from schemas.events import BrokerChange

    zk = "[Controller id=2 epoch=1] "
    created = ("[Controller id=2] New topics: [Set(t)], deleted topics: [HashSet()], new partition replica assignment "
               f"[Set(TopicIdReplicaAssignment(t,Some({TID}),Map(t-0 -> ReplicaAssignment(replicas=1, addingReplicas=, "
               "removingReplicas=))))]")
    state = (zk + "Changed partition t-0 from {} to OnlinePartition with state LeaderAndIsr(leader={}, leaderEpoch={}, "
             "isrWithBrokerEpoch=List(BrokerState(brokerId=1, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, "
             "partitionEpoch={})")
    _, events = _feed([
        "[Controller id=2] Initialized broker epochs cache: HashMap(2 -> 11)", created,
        state.format("NewPartition", -1, 0, 0),
        "[Controller id=2] Newly added brokers: 1, deleted brokers: , bounced brokers: , all live brokers: 1,2",
        state.format("OfflinePartition", 1, 1, 1),
        "[Controller id=2] Updated broker epochs cache: HashMap(1 -> 40, 2 -> 11)"])
    order = [(e.source.line, type(e.payload).__name__) for e in events if isinstance(e.payload, (BrokerChange,
                                                                                                    PartitionChange))]
    assert order == [(1, "BrokerChange"), (3, "PartitionChange"), (4, "BrokerChange"), (5, "PartitionChange")]
    assert [e.event_time_ms for e in events] == sorted(e.event_time_ms for e in events)
    # a cache line that never comes (the controller killed) releases the lines as read
    norm, events = _feed(["[Controller id=2] Initialized broker epochs cache: HashMap(2 -> 11)", created,
                          "[Controller id=2] Newly added brokers: 1, deleted brokers: , bounced brokers: , all live "
                          "brokers: 1,2", state.format("NewPartition", 1, 0, 0)])
    assert [e.source.line for e in events if isinstance(e.payload, PartitionChange)] == [4] and not norm.held


def test_a_broker_registered_after_the_controllers_read_is_not_gone_from_its_cache():
    """Kafka 2.8.2, seen: broker 1 logs its registration, then a controller just elected logs a cache it read
    before that (without broker 1), then the cache with it. Broker 1 is registered once, never unregistered."""
    from schemas.events import BrokerChange

    reg = "Registered broker {} at path /brokers/ids/{} with addresses: PLAINTEXT://h:1, czxid (broker epoch): {}"
    _, events = _feed([reg.format(2, 2, 57), reg.format(1, 1, 62),
                       "[Controller id=2] Initialized broker epochs cache: HashMap(2 -> 57)",
                       "[Controller id=2] Updated broker epochs cache: HashMap(1 -> 62, 2 -> 57)",
                       "[Controller id=2] Updated broker epochs cache: HashMap(2 -> 57)"])
    said = [(e.payload.broker_id, e.payload.kind.value) for e in events if isinstance(e.payload, BrokerChange)]
    assert said == [(2, "REGISTERED"), (1, "REGISTERED"), (1, "UNREGISTERED")]  # gone once a cache listed it
