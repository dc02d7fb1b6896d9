"""The invariant catalog: one entry per invariant, one SQL definition each (checks/invariants/<name>.sql).

Names are the contract with the simulator's ground truth; `tla` names the TLA+ invariant where one
exists (hachikuji/kafka-specification, Vanlightly/kafka-tlaplus). `needs` lists the payload kinds
without which the check has nothing to judge (the report then says "no data", not "pass").
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


@dataclass(frozen=True)
class Invariant:
    name: str
    anchor: str  # I1..I14, the catalog numbers of docs/reference/invariants.md, or "" for ctrlaudit's own
    tla: str
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

    @property
    def sql_path(self) -> Path:
        return SQL_DIR / f"{self.name}.sql"


CATALOG: tuple[Invariant, ...] = (
    Invariant(
        "controller_epoch_monotonic", "I1", "ElectionSafety (epoch part)",
        "ControllerChange epochs and every event's controller_epoch never go backwards along seq.",
        ("ControllerChange",), "M", ("a ZooKeeper -> KRaft migration's cutover (the first KRaft ControllerChange right after a ZooKeeper event, by the controller that claimed ZooKeeper) starts the KRaft quorum's epoch counter",), live=True, sharded=False,
    ),
    Invariant(
        "election_safety", "I2", "ElectionSafety",
        "At most one controller per controller epoch.",
        ("ControllerChange",), "M", ("a ZooKeeper -> KRaft migration's cutover (the first KRaft ControllerChange right after a ZooKeeper event, by the controller that claimed ZooKeeper) starts the KRaft quorum's epoch counter",), live=True, sharded=False,
    ),
    Invariant(
        "leader_epoch_monotonic", "I3", "",
        "A partition's leader epoch never decreases and rises on every leader change and replica removal.",
        ("PartitionChange",), "M+C",
        ("no bump on ISR shrink when metadata.version >= 12 (3.6-IV0, KAFKA-15021) or unknown/ZooKeeper",
         "no bump when a reassignment only adds replicas (KAFKA-13790)"), live=True,
    ),
    Invariant(
        "partition_epoch_monotonic", "I4", "",
        "The partition epoch strictly rises on every PartitionChange that is not a create or bootstrap.",
        ("PartitionChange",), "M", (), live=True,
    ),
    Invariant(
        "leader_in_isr", "I5", "LeaderInIsr",
        "Leader ∈ ISR ⊆ replicas in every partition state; leader -1 is legal.",
        ("PartitionChange",), "M", ("leader -1 (no leader), with any ISR",), live=True, history=False,
    ),
    Invariant(
        "isr_elr_sanity", "I6", "ValidControllerIsrAndElr",
        "ELR ⊆ replicas, ISR ∩ ELR = ∅, adding ∩ removing = ∅, adding ∪ removing ⊆ replicas; brokers enter "
        "the ELR only from the ISR, and only while |ISR| < min.insync.replicas; a leader from the ELR only "
        "when the ISR is empty; no ELR below metadata.version 22.",
        ("PartitionChange",), "M+C", (), live=True,
    ),
    Invariant(
        "fenced_broker_not_in_isr", "I7", "ValidControllerState",
        "A fenced or unregistered broker is never leader or in an ISR; a broker in controlled shutdown "
        "never becomes leader or joins an ISR.",
        ("PartitionChange", "BrokerChange"), "M",
        ("known anomaly: a new incarnation registered (fenced) while still in ISRs, below metadata.version 23 "
         "(4.0-IV1) or unknown — Kafka removes it from ISRs and ELRs first only from there on (KAFKA-15586, "
         "KIP-966); reported as allowed",), live=True,
        merged=("lingering", (("n_active", "SUM"), ("first_state_seq", "MIN"), ("first_partition", "MIN"))),
    ),
    Invariant(
        "valid_high_watermark", "I8", "ValidHighWatermark",
        "Sampled HW ≤ the LEO of every ISR member (ISR as of the sample); LEO -1 is no evidence.",
        ("OffsetSample", "PartitionChange"), "B+M", ("replicas that did not answer (LEO -1)",), live=True,
    ),
    Invariant(
        "high_watermark_monotonic", "I9", "Applied HWM monotonicity",
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
        "unclean_election_allowed", "I12", "",
        "A leader from outside the previous ISR and ELR only where unclean.leader.election.enable is true, "
        "and then with RECOVERING.",
        ("PartitionChange",), "M+C",
        ("unclean.leader.election.enable=true as of the event: topic, else controller node, else cluster "
         "default (reported as allowed)",), live=True,
    ),
    Invariant(
        "leader_election_order", "I14", "",
        "A clean election picks the first eligible replica in assignment order: no ISR member that was live "
        "(registered, unfenced, not shutting down) comes before the new leader in the replica list (ZooKeeper "
        "mode's election strategies and KRaft's PartitionChangeBuilder alike).",
        ("PartitionChange", "BrokerChange"), "M",
        ("the previous leader is not judged as passed over; brokers with no registration in the history are "
         "not judged",), live=True,
    ),
    Invariant(
        "reassignment_legal", "I13", "EventuallyReassignmentCompletes (safety part)",
        "Reassignments grow to OAR ∪ RAR, add to the ISR only through the leader, complete only when "
        "adding ⊆ ISR, then replicas = target; cancel restores OAR; a re-target removes only replicas and "
        "drops no original replica before adding ⊆ ISR.",
        ("PartitionChange",), "M", ("removal-only reassignments may complete in one step",), live=True,
    ),
    Invariant(
        "state_continuity", "", "",
        "Each PartitionChange's before equals the previous event's after for that partition (by topic id), "
        "and its topic id is live.",
        ("PartitionChange",), "M", ("a CaptureGap between the two events (reported as allowed)",), live=True,
    ),
    Invariant(
        "distinct_replicas", "", "",
        "No broker twice in a replica, ISR, ELR, adding or removing list; at creation, replicas on distinct "
        "racks where racks allow.",
        ("PartitionChange",), "M", ("rack rule skipped when any replica's rack is unknown",), live=True,
    ),
)

BY_NAME: dict[str, Invariant] = {inv.name: inv for inv in CATALOG}
NAMES: tuple[str, ...] = tuple(BY_NAME)
LIVE_NAMES: tuple[str, ...] = tuple(inv.name for inv in CATALOG if inv.live)


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


@cache
def sql_for(name: str, dialect: str, built: frozenset[str] = frozenset()) -> str:
    """The invariant's query in the engine's dialect, returning RESULT_COLUMNS; `built`: the shared
    relations the engine has built (the others are inlined)."""
    return expand(_with_shared(_with_fragments(BY_NAME[name].sql_path.read_text()), built), dialect)


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


def wrapped_sql(name: str, dialect: str, built: frozenset[str] = frozenset()) -> str:
    """The query with the invariant name prepended and the result types pinned, so both engines
    return identical rows."""
    return wrapped(name, sql_for(name, dialect, built))


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
