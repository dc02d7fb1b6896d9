"""What the incident report shows, aggregated in DuckDB over the interval tables of the store.

Every series is computed from intervals (a state valid from seq to seq), never by folding events in
Python: a flag (offline, under-replicated, ...) becomes +1 where an interval starts and -1 where it
ends, a running sum over seq gives the count after every change, and the counts are bucketed on the
time axis keeping each bucket's maximum, so a short outage is not averaged away. The browser test
compares these counts with the health queries of replay/queries.py at the window's end.

The window: the state as of point `a` (`opening`: the state just before the window's first event, dated at
its start), then every event after `a` up to and including `b`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from replay.queries import KAFKA_DEFAULTS, MIN_ISR, min_isr
from replay.store import Point, Store
from schemas.times import parse_time
from schemas.events import ConfigResourceType

BUCKETS = 300  # points on the time axis: enough for a screen, few enough for a small file
TOP_PARTITIONS = 20  # rows of the ISR heatmap
MAX_REASSIGNMENT_BARS = 40  # one readable row each
HEALTH = ("offline", "under_replicated", "under_min_isr", "at_min_isr")


@dataclass(frozen=True)
class Series:
    """Counts on the time axis: bucket start times (epoch ms) and, per name, each bucket's maximum."""

    times: tuple[int, ...]
    values: dict[str, tuple[int, ...]]
    at_end: dict[str, int]  # the count as of the window's last event


@dataclass(frozen=True)
class Incident:
    a: Point
    b: Point
    topic: str | None
    events: int
    kinds: dict[str, int]
    health: Series
    leaders: Series  # one name per broker id
    affected: tuple[dict[str, Any], ...]  # partitions that were offline/under-replicated/under min ISR, worst first
    affected_count: int
    isr_heatmap: dict[str, Any]
    brokers: tuple[dict[str, Any], ...]  # (broker, state, start, end) segments
    controllers: tuple[dict[str, Any], ...]  # the controller changes dated inside the window
    reassignments: tuple[dict[str, Any], ...]
    reassignment_count: int
    elections: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    # controller changes among the window's events dated outside its time range (another node's clock, a
    # snapshot's time): not drawn inside it
    controllers_outside: tuple[dict[str, Any], ...] = ()

    @property
    def first_seq(self) -> int:
        """The window's first event: it holds seq first_seq..b.seq."""
        return self.a.seq + 1


def opening(store: Store, b: Point, from_time: str | None) -> Point:
    """The state the window starts from, dated at its start: as of the last event before --from (the events at
    --from itself are the window's), or before the first event when there is none or no --from (a point one
    seq before it, with no state). A window's events are then every one after this point up to `b`, each
    dated at or after --from."""
    start = parse_time(from_time) if from_time is not None else None
    con = store.con
    if start is not None:
        before = _one(con.execute("SELECT max(seq) FROM events WHERE cluster_id = ? AND event_time_ms < ? "
                                  "AND source_kind <> 'REQUEST_LOG'", [b.cluster_id, start]).fetchone())
        if before is not None:
            return replace(store.point(seq=before, cluster_id=b.cluster_id), event_time_ms=start)
    first = _one(con.execute("SELECT min(seq) FROM events WHERE cluster_id = ?", [b.cluster_id]).fetchone())
    point = store.point(seq=first, cluster_id=b.cluster_id)
    return replace(point, seq=first - 1, event_id="", source_offset=-1,
                   event_time_ms=point.event_time_ms if start is None else start)


def _one(row: tuple[Any, ...] | None) -> Any:
    """The one value of an aggregate's row."""
    return None if row is None else row[0]


def _min_isr_by_topic(store: Store, a: Point, b: Point) -> dict[str, int]:
    """Effective min.insync.replicas per topic ("" = the cluster default): the newest value set in
    or before the window, also of topics deleted in it (their configs end with them). A change of it
    inside the window is rare; the per-point queries use the value as of their own point."""
    rows = store.con.execute("""
        SELECT resource_type, resource_name, arg_max(value, from_seq) FROM config_intervals
        WHERE cluster_id = $c AND name = $n AND from_seq <= $b AND (to_seq IS NULL OR to_seq > $a)
              AND (resource_type = $topic OR (resource_type = $broker AND resource_name = ''))
        GROUP BY ALL""", {"c": a.cluster_id, "n": MIN_ISR, "a": a.seq, "b": b.seq,
                          "topic": ConfigResourceType.TOPIC.value, "broker": ConfigResourceType.BROKER.value}).fetchall()
    default = next((v for t, n, v in rows if t == ConfigResourceType.BROKER.value), KAFKA_DEFAULTS[MIN_ISR])
    return {"": min_isr(default)} | {n: min_isr(v) for t, n, v in rows if t == ConfigResourceType.TOPIC.value}


def build(store: Store, a: Point, b: Point, topic: str | None = None) -> Incident:
    con = store.con
    mins = _min_isr_by_topic(store, a, b)
    con.execute("CREATE OR REPLACE TEMP TABLE report_min_isr (topic VARCHAR, m INTEGER)")
    overrides = [[t, m] for t, m in mins.items() if t]
    if overrides:  # (DuckDB refuses an empty executemany: a cluster without topic overrides)
        con.executemany("INSERT INTO report_min_isr VALUES (?, ?)", overrides)
    params = {"c": a.cluster_id, "a": a.seq, "b": b.seq, "ta": a.event_time_ms, "tb": b.event_time_ms,
              "d": mins[""], "t": topic}
    topic_cond = "" if topic is None else " AND p.topic = $t"
    # Intervals overlapping the window, clipped to it, with the health flags of kafka-topics --describe.
    con.execute(f"""CREATE OR REPLACE TEMP TABLE report_iv AS
        SELECT p.topic, p."partition", greatest(p.from_seq, $a) AS s0,
               CASE WHEN p.from_seq <= $a THEN $ta ELSE p.from_time_ms END AS t0,
               CASE WHEN p.to_seq <= $b THEN p.to_seq END AS s1,
               CASE WHEN p.to_seq <= $b THEN p.to_time_ms ELSE $tb END AS t1,
               p.leader, len(p.isr) AS isr_size,
               {', '.join(f"{_flag(f, 'p.')} AS {f}" for f in HEALTH)},
               len(coalesce(p.adding, [])) + len(coalesce(p.removing, [])) > 0 AS reassigning,
               p.replicas, p.adding, p.removing
        FROM partition_intervals p LEFT JOIN report_min_isr m ON m.topic = p.topic
        WHERE p.cluster_id = $c AND p.from_seq <= $b AND (p.to_seq IS NULL OR p.to_seq > $a)
              AND p.leader IS NOT NULL{topic_cond}""", {k: v for k, v in params.items() if k != "t" or topic})
    width = max(1, -(-(b.event_time_ms - a.event_time_ms + 1) // BUCKETS))
    axis = tuple(a.event_time_ms + i * width for i in range(BUCKETS))
    bp = {"ta": a.event_time_ms, "w": width}

    # The counts change only where an event changes a flag: the state as of `a` from the intervals,
    # then per PartitionChange in the window flag(after) - flag(before) from its own row (no window
    # function over every interval: measured 3x faster at 10M events), then topic deletions, which
    # end partition intervals without a PartitionChange of their own.
    ev_topic = "" if topic is None else " AND e.topic = $t"
    deltas = ", ".join(f"{_flag(f, 'e.a_', 'e.has_after')} - {_flag(f, 'e.b_', 'e.has_before')} AS {f}"
                       for f in HEALTH)
    changed = " OR ".join(f"{f} <> 0" for f in HEALTH)
    runs = ", ".join(f"sum(sum({f})) OVER (ORDER BY seq) AS {f}" for f in HEALTH)
    window = {k: params[k] for k in ("c", "a", "b", "ta", "d")} | ({"t": topic} if topic else {})
    rows = con.execute(f"""
        WITH ev AS (
            SELECT e.seq, e.event_time_ms AS t, {deltas}
            FROM events e LEFT JOIN report_min_isr m ON m.topic = e.topic
            WHERE e.cluster_id = $c AND e.kind = 'PartitionChange' AND e.seq > $a AND e.seq <= $b{ev_topic}
        ), d AS (
            SELECT $a AS seq, $ta AS t, {', '.join(f'coalesce(sum({f}), 0) AS {f}' for f in HEALTH)}
            FROM report_iv WHERE s0 = $a
            UNION ALL SELECT * FROM ev WHERE {changed}
            UNION ALL SELECT s1, t1, {', '.join(f'-{f}' for f in HEALTH)} FROM report_iv
                      WHERE s1 IN ({_TOPIC_DELETES})
        ), run AS (SELECT seq, max(t) AS t, {runs} FROM d GROUP BY seq)
        SELECT least(greatest((t - $ta) // $w, 0), {BUCKETS - 1}) AS bucket,
               {', '.join(f'max({f}), arg_max({f}, seq)' for f in HEALTH)}
        FROM run GROUP BY bucket ORDER BY bucket""", window | bp).fetchall()
    health = _fill(axis, rows, HEALTH)

    window.pop("d")
    lrows = con.execute(f"""
        WITH ev AS (
            SELECT seq, event_time_ms AS t, has_before, has_after, b_leader, a_leader FROM events e
            WHERE e.cluster_id = $c AND e.kind = 'PartitionChange' AND e.seq > $a AND e.seq <= $b{ev_topic}
              AND (b_leader IS DISTINCT FROM a_leader OR has_before <> has_after)
        ), d AS (
            SELECT leader, $a AS seq, $ta AS t, count(*) AS n FROM report_iv WHERE s0 = $a AND leader >= 0
                GROUP BY leader
            UNION ALL SELECT b_leader, seq, t, -1 FROM ev WHERE has_before AND b_leader >= 0
            UNION ALL SELECT a_leader, seq, t, 1 FROM ev WHERE has_after AND a_leader >= 0
            UNION ALL SELECT leader, s1, t1, -1 FROM report_iv WHERE leader >= 0 AND s1 IN ({_TOPIC_DELETES})
        ), run AS (SELECT leader, seq, max(t) AS t, sum(sum(n)) OVER (PARTITION BY leader ORDER BY seq) AS n
                   FROM d GROUP BY leader, seq)
        SELECT leader, least(greatest((t - $ta) // $w, 0), {BUCKETS - 1}) AS bucket, max(n), arg_max(n, seq)
        FROM run GROUP BY leader, bucket ORDER BY leader, bucket""", window | bp).fetchall()
    by_leader: dict[int, list[tuple[Any, ...]]] = {}
    for leader, bucket, mx, last in lrows:
        by_leader.setdefault(leader, []).append((bucket, mx, last))
    leader_series = {str(k): _fill(axis, v, ("n",)) for k, v in sorted(by_leader.items())}
    leaders = Series(axis, {k: s.values["n"] for k, s in leader_series.items()},
                     {k: s.at_end["n"] for k, s in leader_series.items()})

    affected_rows = con.execute("""
        SELECT topic, "partition",
               sum(CASE WHEN offline = 1 THEN t1 - t0 ELSE 0 END) AS offline_ms,
               sum(CASE WHEN under_replicated = 1 THEN t1 - t0 ELSE 0 END) AS urp_ms,
               sum(CASE WHEN under_min_isr = 1 THEN t1 - t0 ELSE 0 END) AS under_min_ms,
               min(isr_size) AS min_isr_size
        FROM report_iv GROUP BY topic, "partition"
        HAVING max(offline) = 1 OR max(under_replicated) = 1 OR max(under_min_isr) = 1
        ORDER BY offline_ms DESC, under_min_ms DESC, urp_ms DESC, topic, "partition" """).fetchall()
    affected = tuple({"topic": t, "partition": p, "offline_ms": o, "under_replicated_ms": u, "under_min_isr_ms": m,
                      "min_isr_size": s} for t, p, o, u, m, s in affected_rows)

    top = [(x["topic"], x["partition"]) for x in affected[:TOP_PARTITIONS]]
    heat = _isr_heatmap(store, top, bp, axis)

    brokers = tuple({"broker": r[0], "state": r[1], "start": r[2], "end": r[3]} for r in con.execute("""
        SELECT broker_id, CASE WHEN in_controlled_shutdown THEN 'controlled shutdown'
                               WHEN fenced THEN 'fenced' ELSE 'unfenced' END,
               CASE WHEN from_seq <= $a THEN $ta ELSE from_time_ms END,
               coalesce((SELECT min(event_time_ms) FROM events e WHERE e.cluster_id = $c AND e.seq = i.to_seq
                         AND i.to_seq <= $b), $tb)
        FROM broker_intervals i WHERE cluster_id = $c AND from_seq <= $b AND (to_seq IS NULL OR to_seq > $a)
        ORDER BY broker_id, from_seq""", {k: params[k] for k in ("c", "a", "b", "ta", "tb")}).fetchall())
    changes = [{"time": r[0], "leader": r[1], "epoch": r[2], "seq": r[3]} for r in con.execute("""
        SELECT from_time_ms, leader_id, epoch, from_seq FROM controller_intervals
        WHERE cluster_id = $c AND from_seq > $a AND from_seq <= $b ORDER BY from_seq""",
        {k: params[k] for k in ("c", "a", "b")}).fetchall()]
    dated_inside = [c for c in changes if a.event_time_ms <= c["time"] <= b.event_time_ms]

    reassignments, n_reassign = _reassignments(store, window | {"tb": params["tb"]})
    ev_params = {k: params[k] for k in ("c", "a", "b")} | ({"t": topic} if topic else {})
    kind_topic = "" if topic is None else " AND (topic = $t OR kind <> 'PartitionChange')"
    kinds = dict(con.execute(f"""SELECT kind, count(*) FROM events WHERE cluster_id = $c AND seq > $a
                                 AND seq <= $b{kind_topic} GROUP BY kind ORDER BY kind""", ev_params).fetchall())
    erows = con.execute(f"""
        SELECT election, least(greatest((event_time_ms - $ta) // $w, 0), {BUCKETS - 1}) AS bucket, count(*)
        FROM events e WHERE cluster_id = $c AND seq > $a AND seq <= $b AND kind = 'PartitionChange'
              AND election IS NOT NULL AND election <> 'NONE'{ev_topic}
        GROUP BY ALL ORDER BY ALL""", ev_params | bp).fetchall()
    elections: dict[str, list[int]] = {}
    for election, bucket, n in erows:
        elections.setdefault(election, [0] * BUCKETS)[bucket] = n
    return Incident(a, b, topic, sum(kinds.values()), kinds, health, leaders, affected, len(affected), heat, brokers,
                    tuple(dated_inside), reassignments, n_reassign,
                    {"times": axis, "counts": elections, "totals": {k: sum(v) for k, v in elections.items()}},
                    controllers_outside=tuple(c for c in changes if c not in dated_inside))


_TOPIC_DELETES = """SELECT seq FROM events WHERE cluster_id = $c AND kind = 'TopicChange'
                     AND topic_change = 'DELETED' AND seq > $a AND seq <= $b"""


def _flag(name: str, prefix: str, present: str | None = None) -> str:
    """The health flag `name` (0/1) of a partition state whose columns start with `prefix` (an
    interval's `p.`, an event's `e.b_`/`e.a_`), with kafka-topics --describe's rules
    (replay/queries.py); `present` names the column saying the state exists (0 when not)."""
    isr, leader = f"len({prefix}isr)", f"{prefix}leader"
    rule = {
        "offline": f"{leader} = -1",
        "under_replicated": f"{isr} < len({prefix}replicas) - len(coalesce({prefix}adding, []))",
        "under_min_isr": f"({leader} = -1 OR {isr} < coalesce(m.m, $d))",
        "at_min_isr": f"{isr} = coalesce(m.m, $d)",
    }[name]
    return f"({rule})::INT" if present is None else f"(CASE WHEN {present} THEN ({rule})::INT ELSE 0 END)"


def _fill(times: tuple[int, ...], rows: list[tuple[Any, ...]], names: tuple[str, ...]) -> Series:
    """Per-bucket (max, last) pairs to a series; a bucket's maximum includes the count the previous
    bucket ended with (it holds until the first change), a bucket without a change keeps it."""
    by_bucket = {r[0]: r[1:] for r in rows}
    values: dict[str, list[int]] = {n: [] for n in names}
    last = {n: 0 for n in names}
    for i in range(len(times)):
        r = by_bucket.get(i)
        for j, n in enumerate(names):
            if r is not None:  # the count carried in holds until the bucket's first change
                values[n].append(max(int(r[2 * j]), last[n]) if i else int(r[2 * j]))
                last[n] = int(r[2 * j + 1])
            else:
                values[n].append(last[n])
    return Series(times, {n: tuple(v) for n, v in values.items()}, last)


def _isr_heatmap(store: Store, top: list[tuple[str, int]], bp: dict[str, int], times: tuple[int, ...]) -> dict[str, Any]:
    """The smallest ISR size in each bucket of the most affected partitions (rows) over time."""
    if not top:
        return {"rows": [], "times": times, "z": []}
    store.con.execute("CREATE OR REPLACE TEMP TABLE report_top (topic VARCHAR, \"partition\" INTEGER, rank INTEGER)")
    store.con.executemany("INSERT INTO report_top VALUES (?, ?, ?)", [[t, p, i] for i, (t, p) in enumerate(top)])
    rows = store.con.execute(f"""
        WITH b AS (SELECT range AS bucket FROM range({BUCKETS}))
        , i AS MATERIALIZED (SELECT k.rank, r.t0, r.t1, r.isr_size FROM report_iv r
                             JOIN report_top k USING (topic, "partition"))
        SELECT i.rank, b.bucket, min(i.isr_size)
        FROM i JOIN b ON b.bucket BETWEEN least(greatest((i.t0 - $ta) // $w, 0), {BUCKETS - 1})
                               AND least(greatest((i.t1 - $ta) // $w, 0), {BUCKETS - 1})
        GROUP BY ALL""", bp).fetchall()
    z: list[list[int | None]] = [[None] * BUCKETS for _ in top]
    for rank, bucket, size in rows:
        z[rank][bucket] = size
    return {"rows": [f"{t}-{p}" for t, p in top], "times": times, "z": z}


def _moving(prefix: str, present: str) -> str:
    """SQL: the state has replicas being added or removed (a reassignment in flight)."""
    return (f"({present} AND len(coalesce({prefix}adding, [])) + len(coalesce({prefix}removing, [])) > 0)")


def _reassignments(store: Store, window: dict[str, Any]) -> tuple[tuple[dict[str, Any], ...], int]:
    """Stretches in which a partition had adding/removing replicas, from start (or the window's start)
    to the first state without them: completed (replicas = the target), cancelled (replicas = the
    original) or still in flight at the window's end. Starts and ends are the events that switch
    between the two, paired by an ASOF join (no window over every interval). A reassignment with no
    replica to add (one that only removes or reorders replicas) Kafka completes in one record, never in
    flight: a change of the replicas between two states with none being added or removed, completed at
    once. The longest MAX_REASSIGNMENT_BARS are drawn; all are counted."""
    ev_topic = " AND e.topic = $t" if "t" in window else ""
    was, now = _moving("e.b_", "e.has_before"), _moving("e.a_", "e.has_after")
    keep = "lambda x: NOT list_contains(coalesce({0}, []), x)"
    rows = store.con.execute(f"""
        WITH switch AS (
            SELECT topic, "partition", seq, event_time_ms AS t, {now} AS now, a_replicas AS replicas,
                   list_filter(a_replicas, {keep.format('a_removing')}) AS target,
                   list_filter(a_replicas, {keep.format('a_adding')}) AS original
            FROM events e WHERE cluster_id = $c AND kind = 'PartitionChange' AND seq > $a AND seq <= $b{ev_topic}
              AND {was} <> {now}
        ), starts AS (
            SELECT topic, "partition", seq, t, target, original FROM switch WHERE now
            UNION ALL
            SELECT topic, "partition", s0, t0, list_filter(replicas, {keep.format('removing')}),
                   list_filter(replicas, {keep.format('adding')}) FROM report_iv WHERE s0 = $a AND reassigning
        ), ends AS (SELECT topic, "partition", seq, t, replicas FROM switch WHERE NOT now),
        islands AS (
            SELECT s.topic, s."partition", s.t AS start, coalesce(x.t, $tb) AS "end", s.target, s.original,
                   x.replicas AS after, x.seq IS NULL AS open
            FROM starts s ASOF LEFT JOIN ends x
              ON x.topic = s.topic AND x."partition" = s."partition" AND x.seq >= s.seq
        ), bars AS (
            SELECT topic, "partition", start, "end",
                   CASE WHEN open THEN 'in flight'
                        WHEN list_sort(after) = list_sort(target) THEN 'completed'
                        WHEN list_sort(after) = list_sort(original) THEN 'cancelled' ELSE 'ended' END AS outcome
            FROM islands
            UNION ALL
            SELECT topic, "partition", event_time_ms, event_time_ms, 'completed' FROM events e
            WHERE cluster_id = $c AND kind = 'PartitionChange' AND seq > $a AND seq <= $b{ev_topic}
              AND has_before AND has_after AND NOT {was} AND NOT {now} AND b_replicas <> a_replicas
        )
        SELECT *, count(*) OVER () AS n
        FROM bars ORDER BY "end" - start DESC, topic, "partition" LIMIT {MAX_REASSIGNMENT_BARS}""",
        {k: window[k] for k in ("c", "a", "b", "t") if k in window} | {"tb": window["tb"]}).fetchall()
    bars = tuple({"partition": f"{t}-{p}", "start": s, "end": e, "outcome": o} for t, p, s, e, o, _ in rows)
    return bars, rows[0][5] if rows else 0
