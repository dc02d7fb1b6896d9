"""Handmade histories of the bounded-liveness checks (severity warning): per check an obligation met later than
its default deadline, in KRaft, ZooKeeper mode and a migration where the check applies, and look-alikes met in
time, owed by nobody, or judged by no record (NoOps between). `History.wait` lets time pass; the histories'
other events are a millisecond apart, far inside every deadline."""
from __future__ import annotations

from schemas.events import BrokerChangeKind, ElectionType, PartitionChangeKind, SourceKind
from tests.checks.cases import _migrated, _start_move, clean, violates, zk_baseline
from tests.checks.histories import History, baseline

K = PartitionChangeKind
SECOND, MINUTE, HOUR = 1000, 60_000, 3_600_000


# --- leader_elected: no leader while an ISR or ELR member is live ------------------------------------------

def _leaderless(h: History, topic: str, p: int, wait_ms: int, leader: int, late: bool = True) -> History:
    """`topic`-`p` loses its leader and has `leader` elected `wait_ms` later (`late`: marked as too late)."""
    h.change(topic, p, (K.LEADER,), leader=-1)
    h.wait(wait_ms)
    h.change(topic, p, (K.LEADER,), ElectionType.CLEAN, leader=leader)
    if late:
        h.mark("no_leader_while_member_live")
    return h


@violates("leader_elected")
def leader_not_elected_in_time(c: str) -> History:
    """KRaft: t-1 loses its leader while its ISR member 3 is live, and gets it back 6 s later."""
    return _leaderless(baseline(c), "t", 1, 6 * SECOND, leader=3)


@violates("leader_elected")
def zk_leader_not_elected_in_time(c: str) -> History:
    """ZooKeeper mode: z-0 without a leader for 6 s while its ISR members are registered."""
    return _leaderless(zk_baseline(c), "z", 0, 6 * SECOND, leader=1)


@violates("leader_elected")
def migrated_leader_not_elected_in_time(c: str) -> History:
    """After a ZooKeeper -> KRaft migration: the brokers' ZooKeeper registrations still say who is live."""
    return _leaderless(_migrated(c), "z", 0, 6 * SECOND, leader=2)


@violates("leader_elected")
def leader_not_elected_after_member_unfenced(c: str) -> History:
    """KRaft: t-1's last ISR member 3 is fenced (leaderless, nobody to elect: nothing owed for 20 s), then
    unfenced: the obligation opens at the unfence, and the election comes 6 s after it."""
    h = baseline(c)
    h.change("t", 1, (K.LEADER,), leader=-1)
    h.broker(3, BrokerChangeKind.FENCED, fenced=True)
    h.wait(20 * SECOND)
    h.broker(3, BrokerChangeKind.UNFENCED, fenced=False)
    h.wait(6 * SECOND)
    h.change("t", 1, (K.LEADER,), ElectionType.CLEAN, leader=3)
    h.mark("no_leader_while_member_live")
    return h


@clean
def clean_leaderless_while_members_down(c: str) -> History:
    """Leaderless for a minute while its only ISR member is fenced, elected in the unfence's batch: owed by
    nobody until then, met at once."""
    h = baseline(c)
    h.change("t", 1, (K.LEADER,), leader=-1)
    h.broker(3, BrokerChangeKind.FENCED, fenced=True)
    h.wait(MINUTE)
    h.broker(3, BrokerChangeKind.UNFENCED, fenced=False)
    h.change("t", 1, (K.LEADER,), ElectionType.CLEAN, leader=3)
    return h


@clean
def clean_leader_elected_within_deadline(c: str) -> History:
    return _leaderless(baseline(c), "t", 1, 4 * SECOND, leader=3, late=False)


# --- reassignment_completes ---------------------------------------------------------------------------

def _complete_move(h: History) -> None:
    """_start_move's reassignment of t-0 finishing: 1 joins the ISR through the leader, then the completion."""
    h.change("t", 0, (K.ISR,), isr=(2, 4, 1))
    h.change("t", 0, (K.ISR, K.REPLICAS, K.REASSIGNMENT_COMPLETE), replicas=(2, 4, 1), adding_replicas=(),
             removing_replicas=(), leader_epoch=h.parts[("t", 0)].leader_epoch + 1)


@violates("reassignment_completes")
def reassignment_outlasts_deadline(c: str) -> History:
    h = baseline(c)
    _start_move(h)
    h.wait(2 * HOUR)
    _complete_move(h)
    h.mark("reassignment_not_ended")
    return h


def _zk_move(c: str, wait_ms: int) -> History:
    """zk_baseline, then z-0 moved from (1, 2, 3) to (4, 2, 3) in the ZooKeeper-mode controller's steps, the
    new replica taking `wait_ms` to join the ISR."""
    h = zk_baseline(c)
    z0 = lambda: h.parts[("z", 0)]  # noqa: E731
    h.change("z", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(4, 1, 2, 3), adding_replicas=(4,),
             removing_replicas=(1,), partition_epoch=z0().partition_epoch)
    h.change("z", 0, (K.LEADER_EPOCH,), leader_epoch=z0().leader_epoch + 1)
    h.wait(wait_ms)
    h.change("z", 0, (K.ISR,), isr=(2, 3, 1, 4))
    h.change("z", 0, (K.LEADER_EPOCH, K.ISR), leader_epoch=z0().leader_epoch + 1, isr=(2, 3, 4))
    h.change("z", 0, (K.REPLICAS, K.REASSIGNMENT_COMPLETE), replicas=(4, 2, 3), adding_replicas=(),
             removing_replicas=(), partition_epoch=z0().partition_epoch)
    return h


@violates("reassignment_completes")
def zk_reassignment_outlasts_deadline(c: str) -> History:
    h = _zk_move(c, 2 * HOUR)
    h.mark("reassignment_not_ended")
    return h


@clean
def clean_zk_reassignment_within_deadline(c: str) -> History:
    return _zk_move(c, 30 * MINUTE)


@clean
def clean_reassignment_cancelled_in_time(c: str) -> History:
    h = baseline(c)
    _start_move(h)
    h.wait(50 * MINUTE)
    h.change("t", 0, (K.REPLICAS, K.REASSIGNMENT_CANCEL), replicas=(2, 3, 4), adding_replicas=(),
             removing_replicas=(), leader_epoch=h.parts[("t", 0)].leader_epoch + 1)
    return h


@clean
def clean_reassignment_open_at_the_end(c: str) -> History:
    """Reassigning for two hours when the history ends: pending, not a violation (what came after is unknown)."""
    h = baseline(c)
    _start_move(h)
    h.wait(2 * HOUR)
    h.change("t", 1, (K.ISR,), isr=(3, 2))
    return h


# --- broker_unfenced ------------------------------------------------------------------------------------

B = BrokerChangeKind


def _broker_away(h: History, broker: int, gone: B, wait_ms: int, back: B, fenced_back: bool = False) -> History:
    """`broker` changes to `gone` (fenced) and, `wait_ms` later, to `back` (fenced or not: `fenced_back`)."""
    h.broker(broker, gone, fenced=True)
    h.wait(wait_ms)
    h.broker(broker, back, fenced=fenced_back)
    return h


@violates("broker_unfenced")
def broker_fenced_too_long(c: str) -> History:
    """Broker 1 (no replica of anything by then) fenced for 11 minutes, then unfenced."""
    h = _broker_away(baseline(c), 1, B.FENCED, 11 * MINUTE, B.UNFENCED)
    h.mark("broker_still_fenced")
    return h


@violates("broker_unfenced")
def broker_registered_fenced_too_long(c: str) -> History:
    """A new broker registers (fenced) and is unfenced 11 minutes later."""
    h = _broker_away(baseline(c), 5, B.REGISTERED, 11 * MINUTE, B.UNFENCED)
    h.mark("broker_still_fenced")
    return h


@clean
def clean_broker_unregistered_in_time(c: str) -> History:
    return _broker_away(baseline(c), 1, B.FENCED, 9 * MINUTE, B.UNREGISTERED, fenced_back=True)


@clean
def clean_zk_broker_gone_for_an_hour(c: str) -> History:
    """ZooKeeper mode has no fenced state: a broker gone for an hour owes nothing (its znode is gone)."""
    return _broker_away(zk_baseline(c), 4, B.UNREGISTERED, HOUR, B.REGISTERED)


# --- replication_progress -------------------------------------------------------------------------------

def _lagging_replica(h: History, topic: str, p: int, hws: tuple[int, int, int], leos: list[dict[int, int]],
                     wait_ms: int) -> None:
    """Three samples: the second finds a replica below the first's HW, the third (after `wait_ms`) above the
    second's."""
    h.sample(topic, p, hws[0], leos[0])
    h.sample(topic, p, hws[1], leos[1])
    h.wait(wait_ms)
    h.sample(topic, p, hws[2], leos[2])


def _replica_3_lagging(c: str, leo: int, wait_ms: int, late: bool = False) -> History:
    """KRaft: t-0's replica 3 (out of the ISR) at LEO `leo` in two samples while the HW is at 160, then caught up
    `wait_ms` later (`late`: marked as too late)."""
    h = baseline(c)
    _lagging_replica(h, "t", 0, (160, 170, 180),
                     [{2: 170, 4: 165, 3: leo}, {2: 175, 4: 172, 3: leo}, {2: 185, 4: 181, 3: 175}], wait_ms)
    if late:
        h.mark("replica_behind_hw")
    return h


@violates("replication_progress")
def replica_stuck_behind_hw(c: str) -> History:
    """KRaft: t-0's replica 3 (out of the ISR) stays at LEO 150 for 6 minutes while the HW is at 160."""
    return _replica_3_lagging(c, 150, 6 * MINUTE, late=True)


@violates("replication_progress")
def zk_replica_stuck_behind_hw(c: str) -> History:
    """ZooKeeper mode: z-1's replica 1 leaves the ISR and stays behind for 6 minutes."""
    h = zk_baseline(c)
    h.change("z", 1, (K.ISR,), isr=(3,))
    _lagging_replica(h, "z", 1, (100, 120, 130), [{3: 110, 1: 95}, {3: 125, 1: 95}, {3: 131, 1: 121}],
                     6 * MINUTE)
    h.mark("replica_behind_hw")
    return h


@clean
def clean_replica_catches_up_in_time(c: str) -> History:
    return _replica_3_lagging(c, 150, MINUTE)


@clean
def clean_replica_silent_is_no_evidence(c: str) -> History:
    """Replica 3 does not answer (LEO -1) for ten minutes: no evidence that it is behind."""
    return _replica_3_lagging(c, -1, 10 * MINUTE)


# --- controller_heartbeat -------------------------------------------------------------------------------

@violates("controller_heartbeat")
def metadata_log_silent(c: str) -> History:
    """KRaft: nothing at all written for 15 s (the next record's offset follows the last one's)."""
    h = baseline(c)
    h.change("t", 1, (K.ISR,), isr=(3, 2))  # a record (the baseline ends on an offset sample, which is none)
    h.wait(15 * SECOND, noops=False)
    h.change("t", 0, (K.ISR,), isr=(2, 4, 3))
    h.mark("metadata_log_silent")
    return h


@violates("controller_heartbeat")
def migrated_metadata_log_silent(c: str) -> History:
    """After a migration the KRaft controller's log is judged as any KRaft log."""
    h = _migrated(c)
    h.wait(15 * SECOND, noops=False)
    h.change("z", 0, (K.ISR,), isr=(2, 3, 1))
    h.mark("metadata_log_silent")
    return h


@clean
def clean_quiet_log_with_noops(c: str) -> History:
    """A quiet minute: the controller's NoOps took the offsets between (their times unknown: not judged)."""
    h = baseline(c)
    h.wait(MINUTE)
    h.change("t", 0, (K.ISR,), isr=(2, 4, 3))
    return h


@clean
def clean_kraft_log_source(c: str) -> History:
    """The baseline read from a KRaft log (the simulator's source elsewhere), a failover of 4 s included."""
    h = History(c)
    h.source = SourceKind.KRAFT_LOG
    h.elect_controller(100, 1)
    h.register(1, 2, 3)
    h.topic("k")
    h.create("k", 0, (1, 2, 3))
    h.wait(4 * SECOND, noops=False)
    h.elect_controller(101, 2)
    h.change("k", 0, (K.ISR,), isr=(1, 2))
    return h
