"""The broker-log normalizer on KRaft clusters' lines (Kafka 4.3.1 and 3.9.2 wording): a leader change completed by
the controller's rules (replicas kept unless a reassignment went unlogged, ELR empty at min.insync.replicas), and a
partition stated in part uncertain from the line that says so, or from its leader's last line applying metadata."""
from __future__ import annotations

from pathlib import Path

from schemas.events import CaptureGap, PartitionChange
from services.brokerlogs.lines import LogLine
from services.brokerlogs.normalizer import BrokerLogNormalizer
from tests.archive_files import stored

TID = "HYtHGfsxRlqPkOrBuQIjMQ"
QC = "[QuorumController id=1] "
ELECTED = QC + "In the new epoch 1, the leader is 1."
ELR_ON = QC + "Replayed a FeatureLevelRecord setting feature eligible.leader.replicas.version to 1"
MIN_ISR = QC + "Replayed ConfigRecord for ConfigResource(type={kind}, name='{name}') which set configuration " \
               "min.insync.replicas to {value}"
TOPIC = QC + f"Replayed TopicRecord for topic t with topic ID {TID}."


def _record(pe, leader, isr, replicas, le=0, elr="[]", lke="[]"):
    return (QC + f"Replayed PartitionRecord for new partition t-0 with topic ID {TID} and PartitionRegistration("
            f"replicas={replicas}, directories=[], isr={isr}, removingReplicas=[], addingReplicas=[], elr={elr}, "
            f"lastKnownElr={lke}, leader={leader}, leaderRecoveryState=RECOVERED, leaderEpoch={le}, "
            f"partitionEpoch={pe}).")


def _leader(pe, le, isr, broker, prev="Some(1) and previous leader epoch was 0"):
    return (f"[Broker id={broker}] Leader t-0 with topic id Some({TID}) starts at leader epoch {le} from offset 0 with "
            f"partition epoch {pe}, high watermark 0, ISR [{isr}], adding replicas [] and removing replicas [] . "
            f"Previous leader {prev}.")


def _skipped(pe, le, leader, isr, replicas, broker):
    return (f"[Broker id={broker}] Skipped the become-leader state change for t-0 with topic id Some({TID}), partition "
            f"registration PartitionRegistration(replicas={replicas}, directories=[], isr={isr}, removingReplicas=[], "
            f"addingReplicas=[], elr=[], lastKnownElr=[], leader={leader}, leaderRecoveryState=RECOVERED, "
            f"leaderEpoch={le}, partitionEpoch={pe}) and isNew=false since it is already the leader with leader "
            f"epoch {le}.")


def _follower(pe, le, leader, broker, prev):
    return (f"[Broker id={broker}] Follower t-0 starts at leader epoch {le} from offset 0 with partition epoch {pe} "
            f"and high watermark 0. Current leader is {leader}. Previous leader {prev}.")


def _feed(lines: list[str | tuple[int, str]]) -> list:
    """Lines at 1 s apart unless given as (ms, message); each its own file line in node1's controller.log or a
    broker's state-change.log."""
    norm = BrokerLogNormalizer("c", clock=lambda: 0)
    out = []
    for i, line in enumerate(lines, 1):
        at, message = line if isinstance(line, tuple) else (i * 1000, line)
        file = "node1/controller.log" if message.startswith(QC) else "node2/state-change.log"
        out += norm.feed(LogLine(file, i, at, "INFO", message, "x"))
    return out + norm.finish()


def _states(events):
    return [(e.payload.after.partition_epoch, e.payload.after.leader, e.payload.after.isr, e.payload.after.replicas,
             e.payload.after.elr, e.bootstrap) for e in events if isinstance(e.payload, PartitionChange)
            and e.payload.after]


def _gaps(events):
    return [(e.payload.from_offset, e.payload.to_offset, e.payload.reason, e.source.offset) for e in events
            if isinstance(e.payload, CaptureGap)][1:]  # [0]: the history before the logs


def test_a_leader_change_keeps_the_replicas_no_controller_line_changed():
    events = _feed([ELECTED, TOPIC, _record(0, 1, "[1, 2, 3]", "[1, 2, 3]"), _leader(1, 1, "2,3", 2)])
    assert _states(events)[-1] == (1, 2, (2, 3), (1, 2, 3), (), False)
    # without a KRaft controller's line among the logs nothing says a replica set changes only where one is logged
    events = _feed([_skipped(0, 0, 1, "[1, 2, 3]", "[1, 2, 3]", 1), _leader(1, 1, "2,3", 2)])
    assert [s[0] for s in _states(events)] == [0]


def test_a_reassignment_whose_record_no_line_states_stops_the_carry_until_a_line_states_the_replicas():
    altered = QC + "Successfully altered 1 out of 1 partition reassignment(s)."
    replayed = (QC + f"Replayed partition assignment change PartitionChangeRecord(partitionId=0, topicId={TID}, "
                f"isr=null, leader=-2, replicas=[1, 2, 3, 4], removingReplicas=null, addingReplicas=[4], "
                f"leaderRecoveryState=-1, directories=null, eligibleLeaderReplicas=null, lastKnownElr=null) for topic "
                f"t. (isr: [1, 2, 3] -> [1, 2, 3], replicaSet: [1, 2, 3] -> [1, 2, 3, 4], partitionEpoch: 1, "
                f"leaderEpoch: 0)")
    base = [ELECTED, TOPIC, _record(0, 1, "[1, 2, 3]", "[1, 2, 3]")]
    # accounted for: the record is stated, its epoch whole; the leader change after keeps its replicas
    events = _feed(base + [altered, replayed, _leader(2, 1, "2,3", 2)])
    assert [s[:4] for s in _states(events)] == [(0, 1, (1, 2, 3), (1, 2, 3)), (1, 1, (1, 2, 3), (1, 2, 3, 4)),
                                              (2, 2, (2, 3), (1, 2, 3, 4))]
    # a shrink completed at once (or a reorder) leaves the count short: a leader change is not whole until a line
    # states its replicas again
    events = _feed(base + [altered, QC + "Replayed BrokerRegistrationChangeRecord modifying the registration",
                           _leader(1, 1, "2,3", 2), _skipped(2, 1, 2, "[2, 3]", "[2, 3]", 2)])
    assert [s[:4] + s[5:] for s in _states(events)] == [(0, 1, (1, 2, 3), (1, 2, 3), False),
                                                      (2, 2, (2, 3), (2, 3), True)]


def test_a_broker_line_between_an_accepted_reassignment_and_the_controllers_next_line_is_not_carried():
    """Real 4.3.1 order: the active controller logs `Successfully altered 1 out of 1` for a shrink that completes in
    one record no INFO line states; the new leader's line for that epoch comes 38 ms later, before the controller's
    next line: the count is not yet known short, and the replicas of the state before are not carried."""
    altered = QC + "Successfully altered 1 out of 1 partition reassignment(s)."
    base = [ELECTED, TOPIC, _record(0, 1, "[1, 2, 3]", "[1, 2, 3]")]
    events = _feed(base + [(10_000, altered), (10_038, _leader(1, 1, "1,2", 1, "Some(1) and previous leader epoch was 0")),
                           (10_900, QC + "Replayed BrokerRegistrationChangeRecord modifying the registration"),
                           (11_000, _skipped(1, 1, 1, "[1, 2]", "[2, 1]", 1))])
    assert [s[:4] for s in _states(events)][-1] == (1, 1, (1, 2), (2, 1))
    assert (1, 1, (1, 2), (1, 2, 3)) not in [s[:4] for s in _states(events)]


def test_with_elr_on_an_isr_at_min_insync_replicas_has_no_elr():
    base = [ELECTED, ELR_ON, MIN_ISR.format(kind="BROKER", name="", value=1), TOPIC,
            _record(0, 1, "[1, 2, 3]", "[1, 2, 3]")]
    assert _states(_feed(base + [_leader(1, 1, "2", 2)]))[-1] == (1, 2, (2,), (1, 2, 3), (), False)
    # the topic's override, or one it once had, above the ISR: the ELR is not known
    override = MIN_ISR.format(kind="TOPIC", name="t", value=2)
    assert [s[0] for s in _states(_feed(base + [override, _leader(1, 1, "2", 2)]))] == [0]
    assert _states(_feed(base + [override, _leader(1, 1, "2,3", 2)]))[-1] == (1, 2, (2, 3), (1, 2, 3), (), False)
    # the cluster's default not in the logs: nothing to compare with
    assert [s[0] for s in _states(_feed([ELECTED, ELR_ON, TOPIC, _record(0, 1, "[1, 2, 3]", "[1, 2, 3]"),
                                         _leader(1, 1, "2,3", 2)]))] == [0]


def test_an_offline_epoch_is_whole_from_the_state_an_unclean_election_starts_from():
    previous = ("Setting new leader for topicId {tid}, partition 0 to 3 using an unclean election. Previous partition: "
                "PartitionRegistration(replicas=[2, 3], directories=[], isr=[], removingReplicas=[], "
                "addingReplicas=[], elr=[2], lastKnownElr=[2], leader=-1, leaderRecoveryState=RECOVERED, "
                "leaderEpoch=1, partitionEpoch=2), change record: PartitionChangeRecord(partitionId=0, topicId={tid}, "
                "isr=null, leader=-2)")
    base = [ELECTED, ELR_ON, TOPIC, _record(1, 2, "[2]", "[2, 3]")]
    events = _feed(base + [_follower(2, 1, -1, 3, "Some(2) and previous leader epoch was 0"),
                           previous.format(tid=TID)])
    assert _states(events)[-1] == (2, -1, (), (2, 3), (2,), False)
    assert [s[0] for s in _states(_feed(base + [previous.format(tid="AAAAAAAAAAAAAAAAAAAAAA")]))] == [1]


def test_a_later_epoch_stated_in_part_is_uncertain_from_the_line_that_lived_it():
    base = [ELECTED, TOPIC, _record(0, 1, "[1, 2]", "[1, 2]"), _skipped(0, 0, 1, "[1, 2]", "[1, 2]", 1)]
    offline = _follower(1, 1, -1, 2, "Some(1) and previous leader epoch was 0")
    events = _feed(base + [offline])
    gap = _gaps(events)[0]
    assert gap[2] == "t-0: partition epochs 1 not known yet: stated in part (node2/state-change.log:5)"
    assert gap[:2] == (5, -1) and gap[3] == 5  # found where it begins: the stretch starts at the gap itself
    # a replica the broker just made states the partition as it finds it: uncertain since the leader's last line
    # applying metadata (line 4), not since the line itself
    fresh = [(5000, "[Broker id=2] Creating new partition t-0 with topic id " + TID + "."),
             (5001, _follower(1, 1, -1, 2, "None and previous leader epoch was -1"))]
    gap = _gaps(_feed(base + fresh))[0]
    assert gap[:2] == (5, -1) and gap[3] == 6


def test_the_stretch_of_a_gap_found_where_it_begins_starts_there(tmp_path: Path):
    """Answers by time: before the line that stated part of epoch 1 the state is known; from it on, until the epoch
    is whole (the unclean election's previous state), not."""

    previous = ("Setting new leader for topicId " + TID + ", partition 0 to 2 using an unclean election. Previous "
                "partition: PartitionRegistration(replicas=[1, 2], directories=[], isr=[], removingReplicas=[], "
                "addingReplicas=[], elr=[], lastKnownElr=[1], leader=-1, leaderRecoveryState=RECOVERED, leaderEpoch=1, "
                "partitionEpoch=1), change record: PartitionChangeRecord(partitionId=0)")
    events = _feed([(1000, ELECTED), (2000, TOPIC), (3000, _record(0, 1, "[1, 2]", "[1, 2]")),
                    (60_000, _follower(1, 1, -1, 2, "Some(1) and previous leader epoch was 0")),
                    (90_000, previous)])
    assert [s[0] for s in _states(events)] == [0, 1]
    with stored(events, tmp_path, "c") as store:
        assert not store.point(time=30_000).uncertain_about("t", 0)
        assert store.point(time=70_000).uncertain_about("t", 0)
        assert not store.point(time=95_000).uncertain_about("t", 0)


def test_an_assignment_change_without_its_epoch_3_9():
    """Kafka 3.9 logs an assignment change without its partition epoch. The active controller's line (it replays
    each record as it writes it) makes the partition uncertain from there, and its replicas are carried into no
    epoch until a line states them again; a standby's line of the same record, later, adds nothing."""
    change = ("[QuorumController id={n}] Replayed partition assignment change PartitionChangeRecord(partitionId=0, "
              f"topicId={TID}, isr=null, leader=-2, replicas=[2, 1], removingReplicas=[1], addingReplicas=[2], "
              "leaderRecoveryState=-1, directories=null, eligibleLeaderReplicas=null, lastKnownElr=null) for topic t")
    altered = QC + "Successfully altered 1 out of 1 partition reassignment(s)."
    base = [ELECTED, TOPIC, _record(0, 1, "[1]", "[1]")]
    events = _feed(base + [altered, change.format(n=1), _leader(1, 1, "1", 1)])
    assert [s[0] for s in _states(events)] == [0]
    gap = _gaps(events)[0]
    assert gap[2].startswith("t-0: partition epochs 1 and after not known yet: its assignment changed")
    assert gap[:2] == (5, -1) and gap[3] == 5
    events = _feed(base + [altered, change.format(n=1), _skipped(1, 0, 1, "[1]", "[2, 1]", 1).replace(
        "removingReplicas=[]", "removingReplicas=[1]").replace("addingReplicas=[]", "addingReplicas=[2]")])
    assert _states(events)[-1][:4] == (1, 1, (1,), (2, 1))
    # the standby's line (node 2 is not the leader of the quorum) when epoch 1 is known already: nothing
    events = _feed(base + [altered, change.format(n=1), _skipped(1, 0, 1, "[1]", "[2, 1]", 1),
                           change.format(n=2), _leader(2, 1, "1", 1)])
    assert [s[0] for s in _states(events)] == [0, 1, 2]


def test_a_leader_line_after_the_one_unnumbered_assignment_change_has_its_replicas_3_9():
    """A cancelled reassignment on 3.9 (the scenario's h-slow): the controller's line states the record's replicas,
    adding and removing but not its epoch; the leader's next line states adding and removing as that record left
    them, not as the state before had them: its epoch is at or after the record, so its replicas are the record's."""
    start = ("[QuorumController id=1] Replayed partition assignment change PartitionChangeRecord(partitionId=0, "
             f"topicId={TID}, isr=null, leader=-2, replicas=[2, 1], removingReplicas=[1], addingReplicas=[2], "
             "leaderRecoveryState=-1, directories=null, eligibleLeaderReplicas=null, lastKnownElr=null) for topic t")
    cancel = ("[QuorumController id=1] Replayed partition assignment change PartitionChangeRecord(partitionId=0, "
              f"topicId={TID}, isr=null, leader=1, replicas=[1], removingReplicas=[], addingReplicas=[], "
              "leaderRecoveryState=-1, directories=null, eligibleLeaderReplicas=null, lastKnownElr=null) for topic t")
    altered = QC + "Successfully altered 1 out of 1 partition reassignment(s)."
    reassigning = _skipped(1, 0, 1, "[1]", "[2, 1]", 1).replace("removingReplicas=[]", "removingReplicas=[1]") \
        .replace("addingReplicas=[]", "addingReplicas=[2]")
    base = [ELECTED, TOPIC, _record(0, 1, "[1]", "[1]"), altered, start, reassigning]
    events = _feed(base + [altered, cancel, _leader(2, 1, "1", 1)])
    assert _states(events)[-1][:4] == (2, 1, (1,), (1,))
    # two such changes since the state before: which one the line is after is not known
    events = _feed(base + [altered, cancel, altered, cancel, _leader(2, 1, "1", 1)])
    assert [s[0] for s in _states(events)] == [0, 1]
