"""The invariant catalog: one entry per invariant, one SQL definition each (checks/invariants/<name>.sql).

Names are the contract with the simulator's ground truth; `anchors` say where each rule comes from: the
exact property or action of a TLA+ specification of Kafka (Vanlightly/kafka-tlaplus,
hachikuji/kafka-specification, ocadaruma/kafka-spec), the Kafka class and method that makes it true, or
that no spec states it and why it holds. The anchors table of checks/README.md, the documentation and the
HTML report are rendered from them (checks/anchor_table.py); every cited name is held by
tests/checks/test_anchors.py to checks/spec_names.json, the names those files define at pinned commits
(devtools/spec_names.py). `needs` lists the payload kinds without which the check has nothing to judge
(the report then says "no data", not "pass").

Severity `warning`: a bounded-liveness check (`deadline`): something the controller owes (a leader, a
reassignment's end, a broker's unfence, a replica's catch-up, a metadata record) that came later than the
deadline. Its findings are `violated` when the obligation was met late, `pending` when it is still open at the
end of the history (never a violation: the history does not say what came after), and `no data` where the
source does not record what it needs; the exit code counts them only with `--fail-on warning`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from checks.dialect import expand
from checks.spark_ctes import Query, split

SQL_DIR = Path(__file__).parent / "invariants"

# Columns every invariant query returns, in this order (the engines prepend `invariant`).
RESULT_COLUMNS = (
    "cluster_id", "seq", "related_seq", "rule", "status", "allowance", "expected", "actual", "magnitude",
)
VIOLATION_COLUMNS = ("invariant",) + RESULT_COLUMNS


# Abbreviations of the files anchors cite most (the anchors table spells them out).
R35 = "kafka_data_replication/kraft/v3.5/v3_5_properties.tla"
R35_ACTIONS = "kafka_data_replication/kraft/v3.5/kafka_replication_v3_5.tla"
R966 = "kafka_data_replication/kraft/kip-966/kip_966_properties.tla"
K996 = "kraft/kip_996/kraft_kip_996_properties.tla"
K853 = "kraft/kip_853/kraft_kip_853_properties.tla"
VANLIGHTLY, HACHIKUJI, OCADARUMA, KAFKA = (
    "Vanlightly/kafka-tlaplus", "hachikuji/kafka-specification", "ocadaruma/kafka-spec", "apache/kafka")
_KC = "metadata/src/main/java/org/apache/kafka/controller/"
PCB = _KC + "PartitionChangeBuilder.java"
RCM = _KC + "ReplicationControlManager.java"
MV = "server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java"
ZK_CONTROLLER = "core/src/main/scala/kafka/controller/"


@dataclass(frozen=True)
class Anchor:
    """Where an invariant's rules (`covers`: rule names or the part of the statement; "" = all of it) come
    from: `name`, a TLA+ definition (property or action) or a Kafka `Class.method`, defined in `path` of the
    GitHub repository `repo`; or, with no repo, that no spec states it, `note` saying why it holds. `note`
    also says where the check departs from the cited statement."""

    covers: str
    repo: str = ""
    path: str = ""
    name: str = ""
    note: str = ""

    @property
    def kind(self) -> str:
        return "none" if not self.repo else "kafka" if self.repo == KAFKA else "tla"

    def cite(self) -> str:
        """One line: `name` (repo, path), or "no spec states it"."""
        return f"{self.name} ({self.repo}, {self.path})" if self.repo else "no spec states it"


@dataclass(frozen=True)
class Deadline:
    """A bounded-liveness check's deadline: `default_ms` unless `--deadline NAME=DURATION` says otherwise;
    `why`: why a healthy cluster's recovery stays within the default (the documentation shows it)."""

    default_ms: int
    why: str


@dataclass(frozen=True)
class Invariant:
    name: str
    anchor: str  # I1..I14 (L1..L5: bounded liveness), the catalog numbers of docs/reference/invariants.md, or "" for ctrlaudit's own
    anchors: tuple[Anchor, ...]
    statement: str
    needs: tuple[str, ...]  # payload kinds that must be present
    data: str  # M = metadata, C = configs, B = offset samples
    allowances: tuple[str, ...]
    severity: str = "error"
    # also judged one event at a time by checks.live.LiveChecker (the watch agent), by checks/invariants/<name>.py
    live: bool = False
    # Judged from one event alone (False): a gap in the history cannot make a finding of it wrong.
    history: bool = True
    # Judged from one partition's events (PartitionChange, OffsetSample) and its cluster's other events alone,
    # every finding at one of those partition events, or made of `merged`'s rows: Spark checks it one shard of
    # partitions at a time (checks.spark_shards). Not so: the controller epochs, judged along every event.
    sharded: bool = True
    # A finding that counts across topics (fenced_broker_not_in_isr's, at a fence: the partitions of every
    # topic still holding the broker), sharded all the same: (CTE, ((column, SUM|MIN|MAX), ...)). The query's
    # findings at events every shard holds come from that CTE alone, an aggregate whose rows add up over
    # disjoint sets of partitions. Each shard gives the CTE's rows (partial_sql) and its other findings (the query
    # with the CTE empty, with_merged); the driver merges the shards' rows of the CTE by these functions,
    # grouped by its other columns (merge_select), and runs the query over them with no events.
    merged: tuple[str, tuple[tuple[str, str], ...]] | None = None
    # a bounded-liveness check's deadline (severity "warning"); its SQL reads it as {deadline_ms()}
    deadline: Deadline | None = None

    @property
    def sql_path(self) -> Path:
        return SQL_DIR / f"{self.name}.sql"

    @property
    def tla(self) -> str:
        """The TLA+ definitions it is anchored to, comma-separated ("" where none)."""
        return ", ".join(dict.fromkeys(a.name for a in self.anchors if a.kind == "tla"))


CATALOG: tuple[Invariant, ...] = (
    Invariant(
        "controller_epoch_monotonic", "I1", (
            Anchor("KRaft", KAFKA, "raft/src/main/java/org/apache/kafka/raft/QuorumState.java",
                   "QuorumState.transitionToUnattached",
                   "no spec states it: the replication specs model one controller without epochs, and the Raft "
                   "specs' ElectionSafety is per epoch. It holds because a voter refuses every transition to an "
                   "epoch below its own (QuorumState's transitions throw), so the quorum's leader epochs, which "
                   "KRaft writes as the controller epoch, only rise"),
            Anchor("ZooKeeper mode", KAFKA, "core/src/main/scala/kafka/zk/KafkaZkClient.scala",
                   "KafkaZkClient.registerControllerAndIncrementControllerEpoch",
                   "a controller takes /controller_epoch + 1 by a conditional write of that znode; no spec "
                   "models /controller_epoch fencing"),
        ),
        "ControllerChange epochs and every event's controller_epoch never go backwards along seq.",
        ("ControllerChange",), "M", ("a ZooKeeper -> KRaft migration's cutover (the first KRaft ControllerChange right after a ZooKeeper event, by the controller that claimed ZooKeeper) starts the KRaft quorum's epoch counter",), live=True, sharded=False,
    ),
    Invariant(
        "election_safety", "I2", (
            Anchor("", VANLIGHTLY, K996, "ElectionSafety", "at most one leader per epoch (KIP-996 Raft spec)"),
            Anchor("", VANLIGHTLY, K853, "NeverTwoLeadersInSameEpoch", "the same, in the KIP-853 Raft spec"),
        ),
        "At most one controller per controller epoch.",
        ("ControllerChange",), "M", ("a ZooKeeper -> KRaft migration's cutover (the first KRaft ControllerChange right after a ZooKeeper event, by the controller that claimed ZooKeeper) starts the KRaft quorum's epoch counter",), live=True, sharded=False,
    ),
    Invariant(
        "leader_epoch_monotonic", "I3", (
            Anchor("leader change, replica removal", KAFKA, PCB,
                   "PartitionChangeBuilder.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded",
                   "no property states it; the specs have it only as actions (kafka_replication_v3_5.tla "
                   "bumps the epoch on every reassignment completion, which Kafka does not when only adding, "
                   "KAFKA-13790). A record that sets a leader makes leaderEpoch + 1 when applied "
                   "(PartitionRegistration.merge); a replica leaving the assignment forces such a record"),
            Anchor("ISR shrink below metadata.version 12", KAFKA, PCB,
                   "PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded",
                   "MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink: before 3.6-IV0 only (KAFKA-15021)"),
            Anchor("ZooKeeper mode", HACHIKUJI, "KafkaReplication.tla", "ControllerUpdateIsr",
                   "the controller's writes of the state znode bump the leader epoch; the leader's own ISR writes "
                   "(QuorumUpdateLeaderAndIsr) do not"),
        ),
        "A partition's leader epoch never decreases and rises on every leader change and replica removal.",
        ("PartitionChange",), "M+C",
        ("no bump on ISR shrink when metadata.version >= 12 (3.6-IV0, KAFKA-15021) or unknown/ZooKeeper",
         "no bump when a reassignment only adds replicas (KAFKA-13790)"), live=True,
    ),
    Invariant(
        "partition_epoch_monotonic", "I4", (
            Anchor("KRaft", KAFKA, "metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java",
                   "PartitionRegistration.merge",
                   "no property states it; every PartitionChangeRecord applied makes partitionEpoch + 1"),
            Anchor("ZooKeeper mode", HACHIKUJI, "AsyncIsr.tla", "ControllerWriteIsr",
                   "the state znode's version (zkVersion), written as version + 1"),
        ),
        "The partition epoch strictly rises on every PartitionChange that is not a create or bootstrap.",
        ("PartitionChange",), "M", (), live=True,
    ),
    Invariant(
        "leader_in_isr", "I5", (
            Anchor("leader ∈ ISR", HACHIKUJI, "KafkaReplication.tla", "LeaderInIsr",
                   "literally false at Init (leader None), hence the leader -1 exemption; Kip320.tla states it "
                   "as a THEOREM"),
            Anchor("ISR ⊆ replicas", VANLIGHTLY, R966, "ValidControllerIsrAndElr"),
        ),
        "Leader ∈ ISR ⊆ replicas in every partition state; leader -1 is legal.",
        ("PartitionChange",), "M", ("leader -1 (no leader), with any ISR",), live=True, history=False,
    ),
    Invariant(
        "isr_elr_sanity", "I6", (
            Anchor("elr_not_subset_of_replicas, isr_elr_overlap, elr_while_isr_at_min_isr", VANLIGHTLY, R966,
                   "ValidControllerIsrAndElr",
                   "MinIsrRecoveryQuorum of the same file is not checked: as stated (ISR = ELR = ∅ ⇒ "
                   "|LastKnownELR| = MinISR) it flags correct Kafka 4.x histories, which keep the last known "
                   "leader alone in that field (PartitionChangeBuilder.maybeUpdateLastKnownLeader)"),
            Anchor("elr_member_not_from_isr, elr_while_isr_at_min_isr", KAFKA, PCB,
                   "PartitionChangeBuilder.maybePopulateTargetElr"),
            Anchor("leader_from_elr_while_isr_not_empty", KAFKA, PCB, "PartitionChangeBuilder.isValidNewLeader"),
            Anchor("elr_before_metadata_version_22, elr_in_zookeeper_mode", KAFKA, MV, "MetadataVersion.isElrSupported",
                   "judged below 22, the lowest level whose records ever carried an ELR, and in ZooKeeper mode, "
                   "whose partition state znode has no ELR"),
            Anchor("isr_empty_without_elr", VANLIGHTLY, R35, "ValidControllerState",
                   "its conjunct isr # {}, which KIP-966 dropped: judged only where no ELR can exist "
                   "(ZooKeeper mode, metadata.version below 22)"),
            Anchor("isr_empty_without_elr", KAFKA, PCB, "PartitionChangeBuilder.build",
                   "an empty ISR is written only with eligible leader replicas enabled; otherwise the last "
                   "member stays (ZooKeeper mode: ReplicaStateMachine.doRemoveReplicasFromIsr)"),
            Anchor("adding_removing_overlap, adding_or_removing_not_in_replicas", VANLIGHTLY, R35_ACTIONS,
                   "ValidReassignment",
                   "its preconditions (adding outside, removing inside the current replicas) as the states after "
                   "the grow keep them"),
        ),
        "ELR ⊆ replicas, ISR ∩ ELR = ∅, adding ∩ removing = ∅, adding ∪ removing ⊆ replicas; brokers enter "
        "the ELR only from the ISR, and only while |ISR| < min.insync.replicas; a leader from the ELR only "
        "when the ISR is empty; no ELR below metadata.version 22; the ISR is never empty where no ELR can "
        "exist (ZooKeeper mode, metadata.version below 22).",
        ("PartitionChange",), "M+C", (), live=True,
    ),
    Invariant(
        "fenced_broker_not_in_isr", "I7", (
            Anchor("fenced or unregistered broker", VANLIGHTLY, R966, "ValidControllerState",
                   "a fenced broker is never in an ISR (v3_5_properties.tla's ValidControllerState allows it in "
                   "an ISR of one: the last replica standing, which the check allows as well)"),
            Anchor("fenced or unregistered broker", KAFKA, RCM, "ReplicationControlManager.handleBrokerFenced"),
            Anchor("controlled shutdown", KAFKA, RCM,
                   "ReplicationControlManager.handleBrokerInControlledShutdown",
                   "the specs removed controlled shutdown; KIP-841: a broker shutting down leaves ISRs and "
                   "leaderships and joins none"),
            Anchor("re-registration while in ISRs (allowed below metadata.version 23)", KAFKA, RCM,
                   "ReplicationControlManager.handleBrokerUncleanShutdown", "KAFKA-15586, KIP-966"),
        ),
        "A fenced or unregistered broker is never leader or in an ISR; a broker in controlled shutdown "
        "never becomes leader or joins an ISR.",
        ("PartitionChange", "BrokerChange"), "M",
        ("known anomaly: a new incarnation registered (fenced) while still in ISRs, below metadata.version 23 "
         "(4.0-IV1) or unknown — Kafka removes it from ISRs and ELRs first only from there on (KAFKA-15586, "
         "KIP-966); reported as allowed",), live=True,
        merged=("lingering", (("n_active", "SUM"), ("first_state_seq", "MIN"), ("first_partition", "MIN"))),
    ),
    Invariant(
        "valid_high_watermark", "I8", (
            Anchor("hw_above_isr_member_leo", HACHIKUJI, "AsyncIsr.tla", "ValidHighWatermark",
                   "its exact observable form: the sampled HW against each ISR member's sampled LEO"),
            Anchor("elr_member_behind_hw_at_entry", VANLIGHTLY, R966, "LeaderCandidateCompletenessProperty",
                   "its ELR half, against the HW sampled before the member entered the ELR (the spec's true "
                   "HW is not observed; with ELR on the HW does not advance while |ISR| < min ISR)"),
        ),
        "Sampled HW ≤ the LEO of every ISR member (ISR as of the sample); an ELR member's sampled LEO ≥ the "
        "HW sampled last before it entered the ELR; LEO -1 is no evidence.",
        ("OffsetSample", "PartitionChange"), "B+M", ("replicas that did not answer (LEO -1)",), live=True,
    ),
    Invariant(
        "high_watermark_monotonic", "I9", (
            Anchor("hw_decreased, hw_decreased_across_leader_change", KAFKA,
                   "core/src/main/scala/kafka/cluster/Partition.scala", "Partition.fetchOffsetForTimestamp",
                   "no spec states it: HighWatermarkIsMonotonic, once in kafka_replication_v3_5.tla, was "
                   "removed as \"not actually an invariant\" (a new leader's HW can lag the old one's). It "
                   "holds for the sampler's reading because ListOffsets answers OFFSET_NOT_AVAILABLE until a "
                   "new leader's HW reaches its epoch's start offset (KIP-207)"),
            Anchor("new_leader_behind_committed", VANLIGHTLY, R966, "LeaderCompletenessProperty",
                   "its offset part, at elections: the new leader's sampled LEO against the sampled HW"),
            Anchor("unclean_election_data_loss", OCADARUMA, "UncleanLeaderElectionSafety.tla",
                   "CommittedMessagesNeverLost", "its offset shadow, measured where an unclean election breaks it"),
        ),
        "A partition's sampled HW never decreases, in particular across leader changes; a clean election's new "
        "leader (in the ISR or ELR as of the last sample) holds the sampled HW (Jepsen's lost writes, as far as "
        "samples see); an unclean election's loss is measured.",
        ("OffsetSample",), "B",
        ("a new partition incarnation (delete/create) restarts the HW",
         "a drop after an unclean election between the samples is reported as allowed",
         "an unclean election whose new leader was behind the sampled HW: allowed, magnitude = records lost"),
        live=True,
    ),
    Invariant(
        "unclean_election_allowed", "I12", (
            Anchor("unclean_election, unclean_election_not_allowed", KAFKA, PCB,
                   "PartitionChangeBuilder.electAnyLeader",
                   "no spec guards unclean elections by a config: Vanlightly's specs have none, "
                   "UncleanLeaderElectionSafety.tla's UncleanLeaderElectionChooseLatestOffset has no guard. "
                   "Kafka elects outside the ISR and ELR only for Election.UNCLEAN, which the controller asks "
                   "where unclean.leader.election.enable is true (ReplicationControlManager.maybeElectUncleanLeaders)"),
            Anchor("ZooKeeper mode", KAFKA, ZK_CONTROLLER + "Election.scala", "Election.leaderForOffline"),
            Anchor("unclean_election_without_recovering", KAFKA, PCB, "PartitionChangeBuilder.tryElection",
                   "KIP-704: an unclean election sets RECOVERING"),
            Anchor("last_known_leader_election", KAFKA, PCB, "PartitionChangeBuilder.canElectLastKnownLeader"),
            Anchor("unclean_election_via_elr_that_could_not_exist", KAFKA, MV, "MetadataVersion.isElrSupported",
                   "a leader from an ELR that no Kafka could have written (ZooKeeper mode, metadata.version "
                   "below 22) was in no legal ISR or ELR: the election is unclean, judged like one, and names "
                   "the event that put it in the ELR"),
        ),
        "A leader from outside the previous ISR and ELR — or from an ELR that could not exist — only where "
        "unclean.leader.election.enable is true, and then with RECOVERING.",
        ("PartitionChange",), "M+C",
        ("unclean.leader.election.enable=true as of the event: topic, else controller node, else cluster "
         "default (reported as allowed)",), live=True,
    ),
    Invariant(
        "leader_election_order", "I14", (
            Anchor("KRaft", KAFKA, PCB, "PartitionChangeBuilder.electAnyLeader",
                   "no property states it: the first replica in assignment order that is a valid new leader. "
                   "Vanlightly's specs pick any ISR member; UncleanLeaderElectionSafety.tla's ElectNewLeader "
                   "(the left-most ISR member) is the nearest"),
            Anchor("ZooKeeper mode", KAFKA, ZK_CONTROLLER + "Election.scala", "Election.leaderForOffline",
                   "assignment.find(live && isr), as leaderForReassign, leaderForPreferredReplica and "
                   "leaderForControlledShutdown"),
        ),
        "A clean election picks the first eligible replica in assignment order: no ISR member that was live "
        "(registered, unfenced, not shutting down) comes before the new leader in the replica list (ZooKeeper "
        "mode's election strategies and KRaft's PartitionChangeBuilder alike).",
        ("PartitionChange", "BrokerChange"), "M",
        ("the previous leader is not judged as passed over; brokers with no registration in the history are "
         "not judged",), live=True,
    ),
    Invariant(
        "reassignment_legal", "I13", (
            Anchor("start, cancel, re-target", VANLIGHTLY, R35_ACTIONS, "PerformPartitionReassignment",
                   "the action that starts a reassignment (replicas = OAR ∪ RAR, adding, removing)"),
            Anchor("completion", VANLIGHTLY, R35_ACTIONS, "ReceiveAlterPartitionRequest",
                   "completes once adding ⊆ ISR; the spec also asks |final ISR| ≥ MinISR, which Kafka does not "
                   "(PartitionReassignmentReplicas.maybeCompleteReassignment), nor the check"),
            Anchor("completion", KAFKA, _KC + "PartitionReassignmentReplicas.java",
                   "PartitionReassignmentReplicas.maybeCompleteReassignment"),
            Anchor("cancel", KAFKA, RCM, "ReplicationControlManager.cancelPartitionReassignment"),
            Anchor("ZooKeeper mode", KAFKA, ZK_CONTROLLER + "KafkaController.scala",
                   "KafkaController.onPartitionReassignment"),
        ),
        "Reassignments grow to OAR ∪ RAR, add to the ISR only through the leader, complete only when "
        "adding ⊆ ISR, then replicas = target; cancel restores OAR; a re-target removes only replicas and "
        "drops no original replica before adding ⊆ ISR.",
        ("PartitionChange",), "M", ("removal-only reassignments may complete in one step",), live=True,
    ),
    Invariant(
        "state_continuity", "", (
            Anchor("", note="it checks the recording, not Kafka. Every metadata record "
                   "applies to the image the records before it made (MetadataDelta.replay), so a partition's "
                   "next state starts where its last one ended unless the capture lost or reordered events"),
        ),
        "Each PartitionChange's before equals the previous event's after for that partition (by topic id), "
        "and its topic id is live.",
        ("PartitionChange",), "M", ("a CaptureGap between the two events (reported as allowed)",), live=True,
    ),
    Invariant(
        "distinct_replicas", "", (
            Anchor("duplicates", note="the specs hold replicas, ISR and ELR as sets. Kafka "
                   "refuses an assignment naming a broker twice (ReplicationControlManager."
                   "validateManualPartitionAssignment) and builds every list from such an assignment"),
            Anchor("racks at creation", KAFKA, "metadata/src/main/java/org/apache/kafka/metadata/placement/"
                   "StripedReplicaPlacer.java", "StripedReplicaPlacer.place",
                   "places a partition's replicas on distinct racks while racks remain"),
        ),
        "No broker twice in a replica, ISR, ELR, adding or removing list; at creation, replicas on distinct "
        "racks where racks allow.",
        ("PartitionChange",), "M", ("rack rule skipped when any replica's rack is unknown",), live=True,
    ),
    # --- bounded liveness (severity "warning"): checks/README.md, "Bounded liveness" ---------------------
    Invariant(
        "leader_elected", "L1", (
            Anchor("", VANLIGHTLY, "kafka_data_replication/kraft/kip-966/kip_966_functions.tla",
                   "HandleBrokerUnfenced",
                   "the action that elects a leaderless partition's returning ISR or ELR member; no property of "
                   "the specs bounds when (their fairness only makes it eventual), hence a deadline"),
            Anchor("", KAFKA, RCM, "ReplicationControlManager.handleBrokerUnfenced",
                   "elects, in the records that unfence the broker, every leaderless partition it can lead"),
            Anchor("ZooKeeper mode", KAFKA, ZK_CONTROLLER + "PartitionStateMachine.scala",
                   "PartitionStateMachine.offlinePartitionLeaderElection",
                   "run for the offline partitions when a broker registers (onBrokerStartup)"),
        ),
        "No partition stays without a leader longer than the deadline while a member of its ISR or ELR is "
        "live (registered, unfenced, not in controlled shutdown).",
        ("PartitionChange", "BrokerChange"), "M", ("brokers with no registration in the history are not judged",),
        severity="warning", live=True, sharded=False,
        deadline=Deadline(5_000, "KRaft elects such a partition in the record batch that makes the member live "
                          "again (one append time: 0 ms); ZooKeeper mode's controller elects when it handles the "
                          "broker's registration, one state znode after another, within a second on a loaded "
                          "controller. 5 s is above both and well below an outage anyone would miss; 0 judges "
                          "KRaft by the record batch alone (its records share the batch's append time)"),
    ),
    Invariant(
        "reassignment_completes", "L2", (
            Anchor("", VANLIGHTLY, R966, "EventuallyReassignmentCompletes",
                   "bounded: completed or cancelled within the deadline (the property has no cancel, nor a bound)"),
            Anchor("", KAFKA, _KC + "PartitionReassignmentReplicas.java",
                   "PartitionReassignmentReplicas.maybeCompleteReassignment"),
        ),
        "A reassignment (adding or removing replicas) completes or is cancelled within the deadline.",
        ("PartitionChange",), "M", (), severity="warning", live=True, sharded=False,
        deadline=Deadline(3_600_000, "a reassignment ends once its adding replicas have caught up: on the "
                          "clusters ctrlaudit is tested on, seconds; an hour leaves room for a large partition "
                          "copied at a modest throttle. Larger moves need a longer one (--deadline)"),
    ),
    Invariant(
        "broker_unfenced", "L3", (
            Anchor("", VANLIGHTLY, R966, "EventuallyUnfenced",
                   "bounded: unfenced or unregistered within the deadline"),
            Anchor("", KAFKA, RCM, "ReplicationControlManager.processBrokerHeartbeat",
                   "a registered broker that has caught up with the metadata log is unfenced at its next heartbeat"),
        ),
        "A broker registered or fenced (KRaft) is unfenced or unregistered within the deadline; ZooKeeper "
        "mode has no fenced state (a registered broker is live), so there is nothing to wait for.",
        ("BrokerChange",), "M", (), severity="warning", live=True, sharded=False,
        deadline=Deadline(600_000, "a restarted broker registers fenced, recovers its logs and is unfenced once "
                          "it has caught up with the metadata log: seconds after a kill -9 on the clusters "
                          "ctrlaudit is tested on. A broker that is down longer than 10 minutes is worth a "
                          "warning; one with a long log recovery needs a longer deadline"),
    ),
    Invariant(
        "replication_progress", "L4", (
            Anchor("", VANLIGHTLY, R966, "EventuallyAcknowledgedValueFullyReplicated",
                   "its observable, bounded form: every assigned replica's sampled LEO reaches an earlier "
                   "sampled HW within the deadline"),
        ),
        "An assigned replica's sampled log end offset reaches the partition's previous sampled high watermark "
        "within the deadline (replication not stuck); LEO -1 (no answer) is no evidence either way.",
        ("OffsetSample",), "B", ("replicas that did not answer (LEO -1)",), severity="warning", live=True,
        sharded=False,
        deadline=Deadline(300_000, "a follower in sync fetches within replica.lag.time.max.ms (30 s) or leaves the "
                          "ISR; one restarted after a kill -9 catches up in seconds to minutes on test clusters. "
                          "5 minutes is ten times the lag bound"),
    ),
    Invariant(
        "controller_heartbeat", "L5", (
            Anchor("", VANLIGHTLY, R35_ACTIONS, "MetadataNoOp",
                   "the active controller's no-op write; no property bounds the stretch between writes"),
            Anchor("", VANLIGHTLY, K996, "EventuallyLeaderElected",
                   "bounded: a stretch with no record at all is a stretch with no working controller"),
            Anchor("", KAFKA, _KC + "QuorumController.java", "QuorumController.maybeScheduleNextWriteNoOpRecord",
                   "a NoOpRecord every metadata.max.idle.interval.ms (500 ms) when nothing else is written"),
        ),
        "The metadata log has no stretch longer than the deadline without a record (the active controller "
        "writes a NoOpRecord every metadata.max.idle.interval.ms). Judged between two consecutive events of "
        "the log whose offsets are adjacent (nothing was written between them); where records the capture "
        "does not keep (NoOps, ACLs, ...) lie between, their times are not known and nothing is judged. "
        "No data for ZooKeeper mode.",
        (), "M", ("stretches holding records the capture does not keep (their times are unknown)",),
        severity="warning", live=True, sharded=False,
        deadline=Deadline(10_000, "a controller failover (kill -9 of the active controller) leaves the log "
                          "without records for the quorum's fetch timeout (2 s) and an election (1-2 s, with "
                          "backoff): 3-5 s. 10 s is twice that; with no failover the longest stretch is "
                          "metadata.max.idle.interval.ms (500 ms)"),
    ),
)

BY_NAME: dict[str, Invariant] = {inv.name: inv for inv in CATALOG}
NAMES: tuple[str, ...] = tuple(BY_NAME)
LIVE_NAMES: tuple[str, ...] = tuple(inv.name for inv in CATALOG if inv.live)
# the bounded-liveness checks' default deadlines (ms), by name: what `--deadline NAME=DURATION` may set
DEFAULT_DEADLINES: dict[str, int] = {inv.name: inv.deadline.default_ms for inv in CATALOG if inv.deadline}
Deadlines = tuple[tuple[str, int], ...]  # (name, ms) pairs, sorted: checks.deadlines


_INCLUDE = re.compile(r"\{include\(([a-z_0-9]+)\)\}")


def _with_fragments(sql: str) -> str:
    """`{include(NAME)}`: the text of checks/invariants/fragments/NAME.sql, one definition shared by several queries."""
    return _INCLUDE.sub(lambda m: "\n" + (SQL_DIR / "fragments" / f"{m.group(1)}.sql").read_text().strip() + "\n", sql)


# `{shared(NAME)}`: a relation several invariants read (checks/invariants/fragments/NAME.sql, a SELECT).
# An engine that runs those invariants together builds it once, as a table or cached view named
# shared_table(NAME) (shared_sql gives its query), and passes its name in `built`; otherwise the fragment
# stands there as a subquery. Either way every invariant's rows are the same: the text is one definition.
_SHARED = re.compile(r"\{shared\(([a-z_0-9]+)\)\}")


def shared_table(name: str) -> str:
    return f"shared_{name}"


def _shared_text(name: str) -> str:
    return _with_fragments((SQL_DIR / "fragments" / f"{name}.sql").read_text().strip())


@cache
def shared_sql(name: str, dialect: str) -> str:
    """The query of a shared relation, in the engine's dialect."""
    return expand(_shared_text(name), dialect)


@cache
def shared_inputs(name: str) -> tuple[str, ...]:
    """The shared relations an invariant's query reads."""
    return tuple(dict.fromkeys(_SHARED.findall(BY_NAME[name].sql_path.read_text())))


def shared_for(names: Sequence[str]) -> tuple[str, ...]:
    """The shared relations read by two or more of these invariants: worth building once."""
    counts: dict[str, int] = {}
    for n in names:
        for s in shared_inputs(n):
            counts[s] = counts.get(s, 0) + 1
    return tuple(s for s, k in counts.items() if k >= 2)


def last_readers(names: Sequence[str], built: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each of `names` (run in this order), the built shared relations that no invariant after it reads:
    an engine drops them once it has run, so that the queries after it have their memory (at 100M events the
    partition timeline's table held GBs under a 6 GB limit through the five queries that never read it)."""
    left, out = set(built), {}
    for n in reversed(names):
        out[n] = tuple(s for s in shared_inputs(n) if s in left)
        left.difference_update(out[n])
    return out


# A CTE that only copies a shared relation (`name AS (SELECT * FROM {shared(NAME)} t)`): once the relation is
# built, a table, each reader scans it again (`{recomputed()}`) rather than the engine keeping a second copy;
# inlined, the CTE stands for its window pass and is kept as any other.
_SHARED_COPY = re.compile(r"\bAS\s*\((\s*SELECT\s+\*\s+FROM\s+\{shared\(([a-z_0-9]+)\)\}\s+[A-Za-z_]+\s*)\)")


def _with_shared(sql: str, built: frozenset[str]) -> str:
    sql = _SHARED_COPY.sub(lambda m: f"AS {{recomputed()}}({m.group(1)})" if m.group(2) in built else m.group(0), sql)
    return _SHARED.sub(lambda m: shared_table(m.group(1)) if m.group(1) in built
                       else f"(\n{_shared_text(m.group(1))}\n)", sql)


_DEADLINE = re.compile(r"\{deadline_ms\(\)\}")


def deadline_ms(name: str, deadlines: Deadlines = ()) -> int:
    """The deadline in force of a bounded-liveness invariant: `deadlines`' value, else the catalog's default."""
    inv = BY_NAME[name]
    if inv.deadline is None:
        raise ValueError(f"{name}: no deadline (checks.catalog)")
    return dict(deadlines).get(name, inv.deadline.default_ms)


def _with_deadline(name: str, sql: str, deadlines: Deadlines) -> str:
    """`{deadline_ms()}`: the invariant's deadline in force, in milliseconds, as a BIGINT literal."""
    if not _DEADLINE.search(sql):
        return sql
    return _DEADLINE.sub(f"CAST({int(deadline_ms(name, deadlines))} AS BIGINT)", sql)


@cache
def sql_for(name: str, dialect: str, built: frozenset[str] = frozenset(), deadlines: Deadlines = ()) -> str:
    """The invariant's query in the engine's dialect, returning RESULT_COLUMNS; `built`: the shared
    relations the engine has built (the others are inlined); `deadlines`: the bounded-liveness deadlines
    given (the others are the catalog's defaults)."""
    text = _with_deadline(name, _with_fragments(BY_NAME[name].sql_path.read_text()), deadlines)
    return expand(_with_shared(text, built), dialect)


def _merged(name: str, dialect: str, built: frozenset[str]) -> tuple[Query, str, int]:
    merged = BY_NAME[name].merged
    if merged is None:
        raise ValueError(f"{name}: no merged CTE (checks.catalog)")
    query = split(sql_for(name, dialect, built))
    names = [n for n, _ in query.ctes]
    if merged[0] not in names:
        raise ValueError(f"{name}: its query has no CTE {merged[0]} (checks.catalog, merged)")
    return query, merged[0], names.index(merged[0])


def partial_sql(name: str, dialect: str, built: frozenset[str] = frozenset()) -> str:
    """The rows of the invariant's merged CTE over the events at hand (one shard's)."""
    query, cte, at = _merged(name, dialect, built)
    return Query(query.ctes[:at + 1], f"SELECT * FROM {cte}", query.recomputed, query.marker).text()


def with_merged(name: str, dialect: str, body: str, built: frozenset[str] = frozenset()) -> str:
    """The invariant's query with its merged CTE's rows those of `body`."""
    query, cte, at = _merged(name, dialect, built)
    ctes = query.ctes[:at] + ((cte, body),) + query.ctes[at + 1:]
    return Query(ctes, query.main, query.recomputed, query.marker).text()


def merge_select(name: str, partials: str) -> str:
    """DuckDB: the merged CTE's rows from its shards' rows in the relation `partials`."""
    merged = BY_NAME[name].merged
    assert merged is not None
    columns = [c for c, _ in merged[1]]
    aggregates = []
    for column, how in merged[1]:
        if how not in ("SUM", "MIN", "MAX"):
            raise ValueError(f"{name}: cannot merge {column} by {how} (SUM, MIN or MAX)")
        # DuckDB's SUM of BIGINT is a HUGEINT; the CTE's own column is a BIGINT
        merge = f"CAST(SUM({column}) AS BIGINT)" if how == "SUM" else f"{how}({column})"
        aggregates.append(f"{merge} AS {column}")
    return f"SELECT * EXCLUDE ({', '.join(columns)}), {', '.join(aggregates)} FROM {partials} GROUP BY ALL"


def wrapped_sql(name: str, dialect: str, built: frozenset[str] = frozenset(), deadlines: Deadlines = ()) -> str:
    """The query with the invariant name prepended and the result types pinned, so both engines
    return identical rows."""
    return wrapped(name, sql_for(name, dialect, built, deadlines))


def wrapped(name: str, sql: str) -> str:
    """`sql` (the invariant's query, or a rewriting of it returning the same rows) as wrapped_sql wraps it."""
    return (
        f"SELECT '{name}' AS invariant, CAST(cluster_id AS STRING) AS cluster_id, CAST(seq AS BIGINT) AS seq, "
        "CAST(related_seq AS BIGINT) AS related_seq, CAST(rule AS STRING) AS rule, "
        "CAST(status AS STRING) AS status, CAST(allowance AS STRING) AS allowance, "
        "CAST(expected AS STRING) AS expected, CAST(actual AS STRING) AS actual, "
        "CAST(magnitude AS BIGINT) AS magnitude "
        f"FROM (\n{sql}\n) v"
    )

# Columns of the events table fetched for the examples of a report (the evidence).
_STATE = ("replicas", "isr", "adding", "removing", "elr", "leader", "leader_epoch", "partition_epoch", "recovery")
EVIDENCE_COLUMNS = (
    "cluster_id", "seq", "event_id", "kind", "source_kind", "source_offset", "source_index", "source_node",
    "source_file", "event_time_ms", "controller_id", "controller_epoch", "metadata_version", "bootstrap",
    "topic", "partition", "has_before", *(f"b_{n}" for n in _STATE), "has_after", *(f"a_{n}" for n in _STATE),
    "changes", "election", "broker_id", "broker_change", "cc_leader", "cc_epoch", "config_type",
    "config_resource", "config_name", "config_value", "s_hw", "s_leader", "reason",
)
