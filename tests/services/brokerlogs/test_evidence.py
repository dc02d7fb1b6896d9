"""What each Kafka log line says, on lines copied from real clusters' logs (Kafka 3.9.2 in ZooKeeper mode, 4.3.1
and 3.9.2 in KRaft mode, written by the dev clusters of devtools.cluster): golden lines, so a change of a pattern
that loses a field fails here."""
from __future__ import annotations

import pytest

from schemas.events import LeaderRecoveryState as R
from services.brokerlogs.evidence import (
    Assigned, AssignmentReplayed, BrokerRegistered, ByTopicId, ConfigStated, ControllerElected, ElrEnabled,
    KRaftController, LiveBrokers, ReassignmentsAltered, ReplicaCreated, Seen, TopicConfigs, TopicCreated, TopicDeleted,
    Unnumbered, ZooKeeperController, evidence, node_of,
)

ZK = ZooKeeperController()
KR = KRaftController()


def test_zookeeper_controller_lines():
    assert evidence("[Controller id=3] 3 successfully elected as the controller. Epoch incremented to 1 and epoch zk "
                    "version is now 1") == [ZK, ControllerElected(3, 1)]
    assert evidence("[Controller id=3 epoch=1] Changed partition zkscn-a-0 state from NonExistentPartition to "
                    "NewPartition with assigned replicas 1,2,3") == [ZK, Assigned("zkscn-a", 0, (1, 2, 3))]
    assert evidence(
        "[Controller id=3 epoch=1] Changed partition zkscn-a-0 from OfflinePartition to OnlinePartition with state "
        "LeaderAndIsr(leader=2, leaderEpoch=1, isrWithBrokerEpoch=List(BrokerState(brokerId=2, brokerEpoch=-1), "
        "BrokerState(brokerId=3, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=1)") == [
        ZK, Seen("zkscn-a", 0, 1, leader=2, leader_epoch=1, isr=(2, 3), recovery=R.RECOVERED, controller_epoch=1)]
    assert evidence(
        "[Controller id=2 epoch=2] Partition zkscn-a-0 state changed to (Leader:-1,ISR:3,LeaderRecoveryState:"
        "RECOVERED,LeaderEpoch:5,ZkVersion:7,ControllerEpoch:2) after removing replica 2 from the ISR as part of "
        "transition to OfflineReplica") == [
        ZK, Seen("zkscn-a", 0, 7, leader=-1, leader_epoch=5, isr=(3,), recovery=R.RECOVERED, controller_epoch=2)]
    assert evidence(
        "[Controller id=3] ISR for partition zkscn-a-1 updated to LeaderAndIsr(leader=2, leaderEpoch=1, "
        "isrWithBrokerEpoch=List(BrokerState(brokerId=2, brokerEpoch=-1), BrokerState(brokerId=3, brokerEpoch=-1), "
        "BrokerState(brokerId=1, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=2).") == [
        ZK, Seen("zkscn-a", 1, 2, leader=2, leader_epoch=1, isr=(2, 3, 1), recovery=R.RECOVERED)]
    assert evidence("[Controller id=3] Updated leader epoch for partition zkscn-b-0 to 2, zkVersion=3") == [
        ZK, Seen("zkscn-b", 0, 3, leader_epoch=2, from_epoch=2)]
    assert evidence("[Controller id=3] Successfully updated assignment of partition zkscn-b-0 to ReplicaAssignment("
                    "replicas=1,2,3, addingReplicas=1, removingReplicas=3)") == [
        ZK, Assigned("zkscn-b", 0, (1, 2, 3), (1,), (3,))]
    # the LeaderAndIsr sent during a reassignment carries the target assignment, not the znode's: only its state
    assert evidence(
        "[Controller id=3 epoch=1] Sent LeaderAndIsr request (Leader:2,ISR:2,3,1,LeaderRecoveryState:RECOVERED,"
        "LeaderEpoch:2,ZkVersion:3,ControllerEpoch:1) with new replica assignment ReplicaAssignment(replicas=1,2, "
        "addingReplicas=, removingReplicas=) to leader 2 for partition being reassigned zkscn-b-0") == [
        ZK, Seen("zkscn-b", 0, 3, leader=2, leader_epoch=2, isr=(2, 3, 1), recovery=R.RECOVERED, controller_epoch=1)]
    assert evidence(
        "[Controller id=2] New topics: [Set(zkscn-a)], deleted topics: [HashSet()], new partition replica assignment "
        "[Set(TopicIdReplicaAssignment(zkscn-a,Some(dx89mkkpThmaChlkrhwXiQ),Map(zkscn-a-0 -> ReplicaAssignment("
        "replicas=1,3,2, addingReplicas=, removingReplicas=), zkscn-a-1 -> ReplicaAssignment(replicas=3,2,1, "
        "addingReplicas=, removingReplicas=))))]") == [
        ZK, TopicCreated("zkscn-a", "dx89mkkpThmaChlkrhwXiQ"),
        Assigned("zkscn-a", 0, (1, 3, 2), topic_id="dx89mkkpThmaChlkrhwXiQ"),
        Assigned("zkscn-a", 1, (3, 2, 1), topic_id="dx89mkkpThmaChlkrhwXiQ")]
    assert evidence("[Topic Deletion Manager 2] Deletion of topic zkscn-a successfully completed") == [
        TopicDeleted("zkscn-a")]
    assert evidence("[Controller id=3] Updated broker epochs cache: HashMap(1 -> 101, 2 -> 66, 3 -> 61)") == [
        ZK, LiveBrokers(((1, 101), (2, 66), (3, 61)))]
    assert evidence("[Controller id=3] Sending update metadata request") == [ZK]  # says nothing of state


def test_broker_lines_of_both_modes():
    assert evidence(
        "[Broker id=1] Leader zkscn-b-0 with topic id Some(YiUW7CejRZ6G3FLpKTbC9A) starts at leader epoch 4 from "
        "offset 0 with partition epoch 5, high watermark 0, ISR [2,1], adding replicas [] and removing replicas [] . "
        "Previous leader Some(2) and previous leader epoch was 3.") == [
        Seen("zkscn-b", 0, 5, topic_id="YiUW7CejRZ6G3FLpKTbC9A", leader=1, leader_epoch=4, isr=(2, 1), adding=(),
             removing=(), prompt=True)]
    assert evidence(
        "[Broker id=1] Follower zkscn-a-1 starts at leader epoch 2 from offset 0 with partition epoch 3 and high "
        "watermark 0. Current leader is 2. Previous leader Some(2) and previous leader epoch was 2.") == [
        Seen("zkscn-a", 1, 3, leader=2, leader_epoch=2, prompt=True)]
    # Kafka 4.2+: the whole PartitionRegistration
    assert evidence(
        "[Broker id=1] Skipped the become-leader state change for ck-plain-0 with topic id Some(RNtMhD9NQi2xOjaNSWzCLA),"
        " partition registration PartitionRegistration(replicas=[2, 3, 1], directories=[lQFgC6GyaaW_SLF7dlLLLQ, "
        "mkQME6wwNbS_uE12_vuihQ, 8IIbnEG22bTinr8QYQM3bw], isr=[1, 3], removingReplicas=[1], addingReplicas=[2], "
        "elr=[], lastKnownElr=[], leader=1, leaderRecoveryState=RECOVERED, leaderEpoch=0, partitionEpoch=1) and "
        "isNew=false since it is already the leader with leader epoch 0. Current high watermark 0, ISR [1,3], adding "
        "replicas [2] and removing replicas [1].") == [
        Seen("ck-plain", 0, 1, topic_id="RNtMhD9NQi2xOjaNSWzCLA", leader=1, leader_epoch=0, isr=(1, 3),
             replicas=(2, 3, 1), adding=(2,), removing=(1,), elr=(), last_known_elr=(), recovery=R.RECOVERED,
             prompt=True)]
    # Kafka 3.x: LeaderAndIsrPartitionState (no ELR; leaderRecoveryState as a byte)
    assert evidence(
        "[Broker id=2] Skipped the become-follower state change for t-0 with topic id Some(AAAAAAAAAAAAAAAAAAAAAA) and "
        "partition state LeaderAndIsrPartitionState(topicName='t', partitionIndex=0, controllerEpoch=-1, leader=1, "
        "leaderEpoch=3, isr=[1, 2], partitionEpoch=9, replicas=[1, 2, 3], addingReplicas=[], removingReplicas=[], "
        "isNew=false, leaderRecoveryState=1) since it is already a follower with leader epoch 3.") == [
        Seen("t", 0, 9, topic_id="AAAAAAAAAAAAAAAAAAAAAA", leader=1, leader_epoch=3, isr=(1, 2), replicas=(1, 2, 3),
             adding=(), removing=(), recovery=R.RECOVERING, prompt=True)]


def test_kraft_controller_lines():
    assert evidence("[QuorumController id=3] In the new epoch 7, the leader is 2.") == [KR, ControllerElected(2, 7)]
    assert evidence("[QuorumController id=1] Replayed a FeatureLevelRecord setting feature "
                    "eligible.leader.replicas.version to 1") == [KR, ElrEnabled()]
    assert evidence("[QuorumController id=1] Replayed a FeatureLevelRecord setting feature "
                    "eligible.leader.replicas.version to 0") == [KR]
    assert evidence("[QuorumController id=1] Replayed TopicRecord for topic ck-plain with topic ID "
                    "RNtMhD9NQi2xOjaNSWzCLA.") == [KR, TopicCreated("ck-plain", "RNtMhD9NQi2xOjaNSWzCLA")]
    assert evidence("[QuorumController id=3] Replayed RemoveTopicRecord for topic capc9d1e6-a with ID "
                    "mmuWVDgRTX-u9ynwAVK4wA.") == [KR, TopicDeleted("capc9d1e6-a", "mmuWVDgRTX-u9ynwAVK4wA")]
    assert evidence(
        "[QuorumController id=1] Replayed PartitionRecord for new partition ck-plain-0 with topic ID "
        "RNtMhD9NQi2xOjaNSWzCLA and PartitionRegistration(replicas=[1, 3], directories=[8IIbnEG22bTinr8QYQM3bw, "
        "mkQME6wwNbS_uE12_vuihQ], isr=[1, 3], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], "
        "leader=1, leaderRecoveryState=RECOVERED, leaderEpoch=0, partitionEpoch=0).") == [
        KR, Seen("ck-plain", 0, 0, topic_id="RNtMhD9NQi2xOjaNSWzCLA", leader=1, leader_epoch=0, isr=(1, 3),
             replicas=(1, 3), adding=(), removing=(), elr=(), last_known_elr=(), recovery=R.RECOVERED)]
    assert evidence(
        "[QuorumController id=2] UNCLEAN partition change for ck-dirty-0 with topic ID iIjFXxKqSRCcMVaGaje8XQ: "
        "isr: [1] -> [3], leader: 1 -> 3, leaderRecoveryState: RECOVERED -> RECOVERING, leaderEpoch: 0 -> 1, "
        "partitionEpoch: 1 -> 2") == [
        KR, Seen("ck-dirty", 0, 2, topic_id="iIjFXxKqSRCcMVaGaje8XQ", leader=3, leader_epoch=1, isr=(3,),
             recovery=R.RECOVERING, from_epoch=1)]
    # replicas [2, 3, 1] with adding [2]; isr null and leader -2 in the record: unchanged (the suffix's isr holds)
    assert evidence(
        "[QuorumController id=1] Replayed partition assignment change PartitionChangeRecord(partitionId=0, "
        "topicId=RNtMhD9NQi2xOjaNSWzCLA, isr=null, leader=-2, replicas=[2, 3, 1], removingReplicas=[1], "
        "addingReplicas=[2], leaderRecoveryState=-1, directories=[lQFgC6GyaaW_SLF7dlLLLQ, mkQME6wwNbS_uE12_vuihQ, "
        "8IIbnEG22bTinr8QYQM3bw], eligibleLeaderReplicas=null, lastKnownElr=null) for topic ck-plain. (isr: [1, 3] "
        "-> [1, 3], replicaSet: [1, 3] -> [2, 3, 1], partitionEpoch: 1, leaderEpoch: 0)") == [
        KR, AssignmentReplayed("ck-plain", 0),
        Seen("ck-plain", 0, 1, topic_id="RNtMhD9NQi2xOjaNSWzCLA", leader_epoch=0, isr=(1, 3), replicas=(2, 3, 1),
             adding=(2,), removing=(1,), from_epoch=0)]


def test_lines_of_no_known_shape_say_nothing():
    assert evidence("[Broker id=1] Add 2 partitions and deleted 0 partitions from metadata cache") == []
    assert evidence("Cluster ID = w8nhoLLRTBK5VuB4mTA-Iw") == []
    assert evidence("[Broker id=1] Leader t-0 with topic id Some(x) starts at leader epoch 1") == []  # cut short
    assert node_of("[Broker id=12] anything") == 12 and node_of("[QuorumController id=3] x") == 3
    assert node_of("no prefix") == -1


def test_zookeeper_controller_lines_before_3_3():
    """Kafka 3.0.2's controller (CTRLAUDIT_KAFKA_3=3.0.2): the AlterIsr line names the ISR and the zkVersion only
    (leader and leader epoch kept: a difference from the epoch before, until 3.2); the OfflineReplica line states
    no ZkVersion until 3.1."""
    assert evidence("[Controller id=3] ISR for partition zkscn-a-1 updated to [2,3,1] and zkVersion updated to [2]") \
        == [ZK, Seen("zkscn-a", 1, 2, isr=(2, 3, 1), from_epoch=1)]
    assert evidence(
        "[Controller id=1 epoch=2] Partition zkscn-a-1 state changed to (Leader:-1,ISR:2,3,LeaderEpoch:4,"
        "ControllerEpoch:2) after removing replica 1 from the ISR as part of transition to OfflineReplica") == [
        ZK, Unnumbered("zkscn-a", 1, -1, 4, (2, 3))]
    # 3.1 added the ZkVersion (3.2 the LeaderRecoveryState): a state at its epoch again
    assert evidence(
        "[Controller id=1 epoch=2] Partition zkscn-a-1 state changed to (Leader:-1,ISR:2,3,LeaderEpoch:4,ZkVersion:6,"
        "ControllerEpoch:2) after removing replica 1 from the ISR as part of transition to OfflineReplica") == [
        ZK, Seen("zkscn-a", 1, 6, leader=-1, leader_epoch=4, isr=(2, 3), recovery=R.RECOVERED, controller_epoch=2)]



def test_a_leaders_isr_updates_in_server_log_in_every_form_since_2_8():
    """Partition.scala's line once the controller committed the leader's AlterIsr/AlterPartition (logger
    kafka.cluster.Partition, INFO, server.log): the ISR, the partition epoch, and the broker that leads (its
    prefix); leader epoch and assignment are the epoch before's. Its three forms, read from each release's
    Partition class: 2.8-3.0 bracket the version, 3.1-3.4 do not, 3.5+ put "(under-min-isr)" or "" between."""
    want = Seen("zkscn-a", 0, 4, leader=3, isr=(3, 2, 1), recovery=R.RECOVERED, from_epoch=3, leader_update=True,
                prompt=True)
    for line in ("[Partition zkscn-a-0 broker=3] ISR updated to 3,2,1 and version updated to [4]",  # 2.8.2, 3.0.2
                 "[Partition zkscn-a-0 broker=3] ISR updated to 3,2,1 and version updated to 4",  # 3.1.2 - 3.4.1
                 "[Partition zkscn-a-0 broker=3] ISR updated to 3,2,1  and version updated to 4"):  # 3.5.2 - 3.9.2
        assert evidence(line) == [want], line
    # as a real 2.8.2 broker wrote it (CTRLAUDIT_KAFKA_3=2.8.2, the scenario of test_real_zookeeper.py)
    assert evidence("[Partition zkscn-a-1 broker=2] ISR updated to 2,1,3 and version updated to [5]") == [
        Seen("zkscn-a", 1, 5, leader=2, isr=(2, 1, 3), recovery=R.RECOVERED, from_epoch=4, leader_update=True,
             prompt=True)]
    # as a real 3.3.2 broker wrote it
    assert evidence("[Partition zkscn-b-0 broker=1] ISR updated to 1,3 and version updated to 11") == [
        Seen("zkscn-b", 0, 11, leader=1, isr=(1, 3), recovery=R.RECOVERED, from_epoch=10, leader_update=True,
             prompt=True)]
    # as a real 3.9.2 broker wrote it (the scenario of tests/services/zookeeper/test_real_zookeeper.py)
    assert evidence("[Partition zkscn-a-1 broker=1] ISR updated to 3,1,2  and version updated to 5") == [
        Seen("zkscn-a", 1, 5, leader=1, isr=(3, 1, 2), recovery=R.RECOVERED, from_epoch=4, leader_update=True,
             prompt=True)]
    assert evidence("[Partition my-topic-v2-11 broker=2] ISR updated to 2 (under-min-isr) and version updated to 9") \
        == [Seen("my-topic-v2", 11, 9, leader=2, isr=(2,), recovery=R.RECOVERED, from_epoch=8, leader_update=True,
                 prompt=True)]
    assert node_of("[Partition zkscn-a-0 broker=3] ISR updated to 3 and version updated to 4") == 3
    # a proposal, not a committed state: says nothing
    assert evidence("[Partition zkscn-a-0 broker=3] Shrinking ISR from 3,2,1 to 3,2. Leader: (highWatermark: 5, "
                    "endOffset: 5). Out of sync replicas: (brokerId: 1, endOffset: 5, lastCaughtUpTimeMs: 17).") == []
    # the same words under another prefix are not a leader's
    assert evidence("[Broker id=3] ISR updated to 3,2,1 and version updated to 4") == []


def test_a_replica_logs_its_topics_overrides_when_it_creates_the_log():
    """LogManager (server.log, no prefix, the same words 2.8-3.9 and 4.x): every override of the topic, sorted;
    values with commas kept whole; sensitive ones redacted, so left out."""
    assert evidence("Created log for partition zkscn-d-0 in /tmp/n1/data/zkscn-d-0 with properties "
                    "{unclean.leader.election.enable=true}") == [
        TopicConfigs("zkscn-d", (("unclean.leader.election.enable", "true"),))]
    assert evidence("Created log for partition t-v2-3 in /d/t-v2-3 with properties {cleanup.policy=compact,delete, "
                    "min.insync.replicas=2, secret.thing=(redacted)}") == [
        TopicConfigs("t-v2", (("cleanup.policy", "compact,delete"), ("min.insync.replicas", "2")))]
    assert evidence("Created log for partition t-0 in /d/t-0 with properties {}") == [TopicConfigs("t", ())]


def test_a_zookeeper_mode_brokers_own_registration():
    """KafkaZkClient (server.log, no prefix; the same words 2.8-3.9): the broker's id and epoch (its znode's czxid)."""
    assert evidence("Registered broker 1 at path /brokers/ids/1 with addresses: PLAINTEXT://127.0.0.1:21102, "
                    "czxid (broker epoch): 232") == [BrokerRegistered(1, 232)]
    assert evidence("Registered broker 1 at path /brokers/ids/1 with addresses: PLAINTEXT://h:1,SSL://h:2, "
                    "czxid (broker epoch): 4294967462") == [BrokerRegistered(1, 4294967462)]


# Lines of real KRaft clusters, verbatim, and what each says: Kafka 4.3.1 (the scenario of
# tests/services/test_real_history.py) and 3.9.2 (the same scenario), each kind of line side by side in the versions
# that write it. test_fuzz damages these lines too.
KRAFT_LINES = [
    # PartitionChangeBuilder (no logIdent), 4.3.1: the whole state an unclean election starts from, by topic id
    ("4.3.1",
     "Setting new leader for topicId IhzTmFiQQGSU4q43C-AQag, partition 0 to 3 using an unclean election. Previous "
     "partition: PartitionRegistration(replicas=[2, 3], directories=[XqfWhv8NBUYvifeuqqufZA, "
     "OhWVS3YuDIp13mbtCjZSbg], isr=[], removingReplicas=[], addingReplicas=[], elr=[2], lastKnownElr=[2], "
     "leader=-1, leaderRecoveryState=RECOVERED, leaderEpoch=1, partitionEpoch=2), change record: "
     "PartitionChangeRecord(partitionId=0, topicId="
     "IhzTmFiQQGSU4q43C-AQag, isr=null, leader=-2, replicas=null, removingReplicas=null, addingReplicas=null, "
     "leaderRecoveryState=-1, directories=null, eligibleLeaderReplicas=null, lastKnownElr=null)",
     [ByTopicId("IhzTmFiQQGSU4q43C-AQag", Seen(
         "", 0, 2, topic_id="IhzTmFiQQGSU4q43C-AQag", leader=-1, leader_epoch=1, isr=(), replicas=(2, 3), adding=(),
         removing=(), elr=(2,), last_known_elr=(2,), recovery=R.RECOVERED))]),
    # 3.9's unclean election names no previous state: nothing
    ("3.9.2", "Setting new leader for topicId DI__ZsxuT16nskfXCY25fA, partition 0 to 2 using an unclean election", []),
    # 3.9.2: an assignment change without its partition epoch
    ("3.9.2",
     "[QuorumController id=1] Replayed partition assignment change PartitionChangeRecord(partitionId=0, topicId="
     "nVS9HM2xS-SZbQSQHyfsAA, isr=null, leader=-2, replicas=[1, 2, 3], removingReplicas=null, addingReplicas="
     "[2, 3], leaderRecoveryState=-1, directories=[L7vHWa8tTEDtvl6VtkPPog, cCTdMxp3ljqEsrxywMj5Rw, "
     "xj5E1LnHPlNeLD10P8dfXA], eligibleLeaderReplicas=null, lastKnownElr=null) for topic h-grow",
     [KR, AssignmentReplayed("h-grow", 0, numbered=False, replicas=(1, 2, 3), adding=(2, 3))]),
    ("4.3.1", "[QuorumController id=1] Successfully altered 2 out of 2 partition reassignment(s).",
     [KR, ReassignmentsAltered(2)]),
    ("3.9.2", "[QuorumController id=3] Successfully altered 2 out of 2 partition reassignment(s).",
     [KR, ReassignmentsAltered(2)]),
    ("4.3.1", "[QuorumController id=1] Replayed ConfigRecord for ConfigResource(type=BROKER, name='') which set "
              "configuration min.insync.replicas to 1",
     [KR, ConfigStated("BROKER", "", "min.insync.replicas", "1")]),
    ("4.3.1", "[QuorumController id=1] Replayed ConfigRecord for ConfigResource(type=BROKER, name='1') which set "
              "configuration follower.replication.throttled.rate to [hidden]",
     [KR, ConfigStated("BROKER", "1", "follower.replication.throttled.rate", "[hidden]")]),
    ("3.9.2", "[QuorumController id=1] Replayed ConfigRecord for ConfigResource(type=TOPIC, name='h-alpha') "
              "which set configuration min.insync.replicas to 2",
     [KR, ConfigStated("TOPIC", "h-alpha", "min.insync.replicas", "2")]),
    ("4.3.1", "[Broker id=1] Creating new partition h-alpha-1 with topic id ueYvE2fiQO6mfk456VNcOA.",
     [ReplicaCreated("h-alpha", 1)]),
    ("3.9.2", "[Broker id=1] Creating new partition h-alpha-1 with topic id CAs2jhGVQ-qiDKiALf53Vg.",
     [ReplicaCreated("h-alpha", 1)]),
    ("4.3.1", "[Broker id=1] Expected partition h-alpha-3 with topic id ueYvE2fiQO6mfk456VNcOA to exist, but it "
              "was missing. Creating...",
     [ReplicaCreated("h-alpha", 3)]),
    ("3.9.2", "[Broker id=1] Expected partition h-alpha-4 with topic id CAs2jhGVQ-qiDKiALf53Vg to exist, but it "
              "was missing. Creating...",
     [ReplicaCreated("h-alpha", 4)]),
    # a broker's line of a change it lived (the previous leader and epoch before it), and of a replica it just made
    ("4.3.1",
     "[Broker id=1] Leader h-pinned-1 with topic id Some(HYtHGfsxRlqPkOrBuQIjMQ) starts at leader epoch 1 from "
     "offset 0 with partition epoch 2, high watermark 0, ISR [1,3], adding replicas [] and removing replicas [] . "
     "Previous leader Some(2) and previous leader epoch was 0.",
     [Seen("h-pinned", 1, 2, topic_id="HYtHGfsxRlqPkOrBuQIjMQ", leader=1, leader_epoch=1, isr=(1, 3), adding=(),
           removing=(), prompt=True)]),
    ("3.9.2",
     "[Broker id=1] Leader h-pinned-1 with topic id Some(ONb9ad-ER92JU5mxNZuF0g) starts at leader epoch 1 from "
     "offset 0 with partition epoch 2, high watermark 0, ISR [3,1], adding replicas [] and removing replicas [] . "
     "Previous leader Some(2) and previous leader epoch was 0.",
     [Seen("h-pinned", 1, 2, topic_id="ONb9ad-ER92JU5mxNZuF0g", leader=1, leader_epoch=1, isr=(3, 1), adding=(),
           removing=(), prompt=True)]),
    ("4.3.1",
     "[Broker id=3] Follower h-dirty2-0 starts at leader epoch 1 from offset 0 with partition epoch 2 and high "
     "watermark 0. Current leader is -1. Previous leader Some(2) and previous leader epoch was 0.",
     [Seen("h-dirty2", 0, 2, leader=-1, leader_epoch=1, prompt=True)]),
    ("4.3.1",
     "[Broker id=1] Follower h-alpha-0 starts at leader epoch 0 from offset 0 with partition epoch 0 and high "
     "watermark 0. Current leader is 3. Previous leader None and previous leader epoch was -1.",
     [Seen("h-alpha", 0, 0, leader=3, leader_epoch=0)]),
    # 3.9.2: a follower's line that names the new leader and epoch as the previous ones
    ("3.9.2",
     "[Broker id=3] Follower h-alpha-1 starts at leader epoch 1 from offset 0 with partition epoch 1 and high "
     "watermark 0. Current leader is 2. Previous leader Some(2) and previous leader epoch was 1.",
     [Seen("h-alpha", 1, 1, leader=2, leader_epoch=1, prompt=True)]),
]


@pytest.mark.parametrize(("version", "line", "said"), KRAFT_LINES,
                         ids=[f"{version}-{i}" for i, (version, _, _) in enumerate(KRAFT_LINES)])
def test_kraft_lines(version, line, said):
    assert evidence(line) == said


def test_a_kraft_leaders_isr_is_a_set_past_four_members():
    """Partition.makeLeader (4.3.1) prints the ISR of a Scala Set: in its own order only up to four members."""
    five = ("[Broker id=1] Leader t-0 with topic id Some(HYtHGfsxRlqPkOrBuQIjMQ) starts at leader epoch 1 from "
            "offset 0 with partition epoch 2, high watermark 0, ISR [{isr}], adding replicas [] and removing "
            "replicas [] . Previous leader Some(2) and previous leader epoch was 0.")
    assert [s.isr_as_set for s in evidence(five.format(isr="1,3"))] == [False]
    assert [s.isr_as_set for s in evidence(five.format(isr="5,1,2,3,4"))] == [True]
