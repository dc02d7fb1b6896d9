"""Which topics a `--topic` names, as kafka-topics reads it: a name or a regular expression matched
against the whole name (Kafka's TopicFilter.IncludeList: commas mean "or", spaces and surrounding quotes
dropped), over the topics that exist at the point. A name that matches nothing is an error naming the
closest existing names, or when the topic existed at another time, when that was.
"""
from __future__ import annotations

import difflib
import re

from schemas import times
from replay.errors import StoreError
from replay.queries import _AT  # "as of the point": the interval condition every query uses
from replay.store import Point, Store

# Kafka's Topic.isInternal (clients' internals.Topic.INTERNAL_TOPICS, 4.x adds the share-group state).
INTERNAL = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def kafka_regex(raw: str) -> re.Pattern[str]:
    """TopicFilter's cleaning of a --topic value, compiled (Java's and Python's syntax agree on what
    topic patterns use: classes, alternation, quantifiers, escapes)."""
    text = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", raw.strip().replace(",", "|").replace(" ", "")))
    try:
        return re.compile(text)
    except (re.error, OverflowError, RecursionError) as exc:  # a{99999999999}, ((((...: Python's own limits
        raise StoreError(f"--topic {raw[:100]!r}: not a valid regular expression "
                         f"({type(exc).__name__ if isinstance(exc, RecursionError) else exc})") from None


def names_as_of(store: Store, point: Point) -> list[str]:
    return [r[0] for r in store.con.execute(
        f"SELECT DISTINCT topic FROM topic_intervals WHERE {_AT} ORDER BY 1",
        {"c": point.cluster_id, "s": point.seq}).fetchall()]


def resolve(store: Store, point: Point, raw: str, exclude_internal: bool = False) -> list[str]:
    """The names `raw` selects as of `point`, sorted; StoreError when it selects none."""
    existing = names_as_of(store, point)
    pattern = kafka_regex(raw)
    chosen = [n for n in existing if pattern.fullmatch(n) and not (exclude_internal and n in INTERNAL)]
    if chosen:
        return chosen
    raise StoreError(_not_found(store, point, raw, existing))


def _not_found(store: Store, point: Point, raw: str, existing: list[str]) -> str:
    text = f"topic {raw!r} does not exist {point.describe()}"
    lived = store.con.execute("""
        SELECT t.from_seq, t.to_seq, a.event_time_ms, b.event_time_ms FROM topic_intervals t
        LEFT JOIN events a ON a.cluster_id = t.cluster_id AND a.seq = t.from_seq
        LEFT JOIN events b ON b.cluster_id = t.cluster_id AND b.seq = t.to_seq
        WHERE t.cluster_id = $c AND t.topic = $t ORDER BY t.from_seq""",
        {"c": point.cluster_id, "t": raw.strip()}).fetchall()
    if lived:
        spans = [f"seq {a} ({times.show(ta)}) to " + (f"seq {b} ({times.show(tb)})" if b is not None else "now")
                 for a, b, ta, tb in lived]
        return f"{text}; it existed from {', from '.join(spans)}"
    close = difflib.get_close_matches(raw.strip(), existing, n=5, cutoff=0.6)
    if close:
        return f"{text}; closest names: {', '.join(close)}"
    return f"{text}; {len(existing):,} topic(s) exist then" + (f", e.g. {', '.join(existing[:5])}" if existing else "")


def unknown_topic(store: Store, point: Point, topic: str) -> str | None:
    """None when `topic` has a history at or before `point`; else the error, with the closest names."""
    ever = [r[0] for r in store.con.execute(
        "SELECT DISTINCT topic FROM topic_intervals WHERE cluster_id = $c AND from_seq <= $s ORDER BY 1",
        {"c": point.cluster_id, "s": point.seq}).fetchall()]
    if topic in ever:
        return None
    close = difflib.get_close_matches(topic, ever, n=5, cutoff=0.6)
    hint = f"; closest names: {', '.join(close)}" if close else ""
    return f"topic {topic!r} has no history {point.describe()}{hint}"


def missing_partition(store: Store, point: Point, topic: str, partition: int) -> str:
    """Why `topic`-`partition` has no history up to `point`: the topic was never there (closest names of
    any time), or it has no such partition (its partition numbers)."""
    unknown = unknown_topic(store, point, topic)
    if unknown:
        return unknown
    parts = [r[0] for r in store.con.execute(
        """SELECT DISTINCT "partition" FROM partition_intervals WHERE cluster_id = $c AND topic = $t
           AND from_seq <= $s ORDER BY 1""", {"c": point.cluster_id, "t": topic, "s": point.seq}).fetchall()]
    have = f"partitions {parts[0]}..{parts[-1]}" if parts and parts == list(range(parts[0], parts[-1] + 1)) else (
        f"partitions {', '.join(map(str, parts))}" if parts else "no partitions")
    return f"topic {topic!r} has no partition {partition} {point.describe()} (it has {have})"
