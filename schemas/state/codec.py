"""A ClusterImage as plain JSON values and back: the image part of the capture's checkpoints
(services/capture/checkpoint.py keeps their framing, storage and the normalizer's own fields).

Why not pickle: what is decoded here was read back from a Kafka topic, and a tamper-evident audit tool must
not execute code that anyone able to write to a topic put there. JSON can at worst give a wrong image,
and `decode` checks every value's type before it reaches the image (a float leader, a str epoch, a
negative index are refused).

Layout: partitions as flat columns (topic index, partition id, state index), each distinct PartitionState
once (as columns, one per field) and each distinct int tuple once. Replica sets repeat a lot and states
often do (equal epochs after a mass election), and columns let encode and decode run in C (zip/map)
rather than a Python loop per partition: the cost of a worker's restart is what a checkpoint exists to cut.

The keys `encode` writes are `KEYS`; a checkpoint written by an earlier release of the same format version
must decode (tests/services/capture/test_checkpoint.py holds one).
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import fields
from operator import attrgetter
from typing import Any, TypeVar

from immutables import Map

from schemas.errors import ContractError
from schemas.events import BrokerState, ConfigResourceType, LeaderRecoveryState, PartitionState
from schemas.state.image import CaptureGapSeen, ClusterImage, ControllerImage, Provenance, TopicImage, TopicsImage

# The codec spells out every field; if one is added to these dataclasses, refuse to encode rather than
# silently drop it (a decoded image missing a field would disagree with a replayed one).
_KNOWN = {
    ClusterImage: ("cluster_id", "provenance", "controller", "brokers", "topics", "configs", "features", "gaps",
                   "unknown_records"),
    Provenance: ("seq", "event_id", "source_offset", "source_index", "event_time_ms", "controller_id",
                 "controller_epoch"),
    ControllerImage: ("leader_id", "epoch", "voters"),
    CaptureGapSeen: ("seq", "from_offset", "to_offset", "reason"),
    PartitionState: ("replicas", "isr", "leader", "leader_epoch", "partition_epoch", "adding_replicas",
                     "removing_replicas", "elr", "last_known_elr", "leader_recovery_state"),
    BrokerState: ("broker_id", "epoch", "fenced", "in_controlled_shutdown", "incarnation_id", "rack", "endpoints"),
}
DRIFT = [c.__name__ for c, names in _KNOWN.items() if tuple(f.name for f in fields(c)) != names]
_PS = _KNOWN[PartitionState]
_TUPLE_COLS = {"replicas", "isr", "adding_replicas", "removing_replicas", "elr", "last_known_elr"}
_ROW = attrgetter(*_PS)  # one C call per partition instead of ten getattr
_LRS = {m.value: m for m in LeaderRecoveryState}
# the types `typed` lets through
INT: set[type] = {int}
STR: set[type] = {str}
BOOL: set[type] = {bool}
OPT_STR: set[type] = {str, type(None)}

KEYS = ("image_cluster_id", "provenance", "controller", "gaps", "unknown_records", "topic_names", "features",
        "configs", "brokers", "tuples", "states", "partitions")


class ImageCodecError(ContractError):
    """An image that cannot be encoded, or values that do not decode to one; one line saying why."""


H = TypeVar("H", bound=Hashable)


def _index(values: Sequence[H]) -> tuple[list[H], list[int]]:
    """(distinct values in first-seen order, each value's index): dict.fromkeys and map stay in C."""
    distinct = {v: i for i, v in enumerate(dict.fromkeys(values))}
    return list(distinct), list(map(distinct.__getitem__, values))


def encode(im: ClusterImage) -> dict[str, Any]:
    """`im` as JSON values, under KEYS (json.dumps writes them; leader_recovery_state, a StrEnum, as its
    value)."""
    if DRIFT:
        raise ImageCodecError(f"codec does not know every field of {', '.join(DRIFT)}")
    by_id = im.topics.by_id
    keys = [(tid, p) for tid in by_id for p in by_id[tid].partitions]
    tids, pids = zip(*keys) if keys else ((), ())
    topics, t_col = _index(tids)
    rows, s_col = _index([_ROW(by_id[tid].partitions[p]) for tid, p in keys])
    columns = dict(zip(_PS, map(list, zip(*rows)))) if rows else {f: [] for f in _PS}
    # the six tuple fields share one table of distinct tuples (a handful of replica sets in practice)
    tuples, flat = _index([t for f in _PS if f in _TUPLE_COLS for t in columns[f]])
    for i, f in enumerate(f for f in _PS if f in _TUPLE_COLS):
        columns[f] = flat[i * len(rows):(i + 1) * len(rows)]
    return {
        "image_cluster_id": im.cluster_id,
        "provenance": [getattr(im.provenance, f) for f in _KNOWN[Provenance]],
        "controller": [im.controller.leader_id, im.controller.epoch, list(im.controller.voters)],
        "gaps": [[g.seq, g.from_offset, g.to_offset, g.reason] for g in im.gaps],
        "unknown_records": im.unknown_records,
        "topic_names": [[tid, t.name] for tid, t in by_id.items()],
        "features": list(im.features.items()),
        "configs": [[rt.value, res, name, v] for (rt, res), values in im.configs.items() for name, v in values.items()],
        "brokers": [[b.broker_id, b.epoch, b.fenced, b.in_controlled_shutdown, b.incarnation_id, b.rack,
                     b.endpoints] for b in im.brokers.values()],
        "tuples": tuples, "states": columns,
        "partitions": {"topics": topics, "t": t_col, "p": list(pids), "s": s_col},
    }


def typed(xs: object, types: set[type], what: str, index: bool = False) -> list[Any]:
    """`xs`, a list of JSON values, when its items are all of `types` (the items' type is what was checked,
    which the signature cannot say); ImageCodecError otherwise."""
    # json gives whatever the payload says: a float leader or a str epoch must not reach the image (bool
    # is an int subclass, so types are compared exactly); a negative index would pick from the end
    if type(xs) is not list or not set(map(type, xs)) <= types or (index and xs and min(xs) < 0):
        raise ImageCodecError(f"malformed payload ({what})")
    return xs


def decode(d: dict[str, Any]) -> ClusterImage:
    """The image `encode` gave `d` for (`d` may hold other keys too); ImageCodecError for values that are
    not one."""
    if DRIFT:
        raise ImageCodecError(f"codec does not know every field of {', '.join(DRIFT)}")
    try:
        return _decode(d)
    except ImageCodecError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise ImageCodecError(f"malformed payload ({type(exc).__name__}: {exc})") from None


def _decode(d: dict[str, Any]) -> ClusterImage:
    unknown, = typed([d["unknown_records"]], INT, "unknown_records")
    image_cluster, = typed([d["image_cluster_id"]], OPT_STR, "image cluster_id")
    seq, event_id, offset, index, time_ms, controller_id, controller_epoch = d["provenance"]
    typed([seq, offset, index, time_ms, controller_id, controller_epoch], INT, "provenance")
    typed([event_id], STR, "provenance event id")
    leader, epoch, voters = d["controller"]
    typed([leader, epoch, *typed(voters, INT, "controller voters")], INT, "controller")
    gaps = []
    for g_seq, g_from, g_to, reason in d["gaps"]:
        typed([g_seq, g_from, g_to], INT, "gap offsets")
        gaps.append(CaptureGapSeen(g_seq, g_from, g_to, *typed([reason], STR, "gap reason")))
    names = {t: name for t, name in d["topic_names"]}
    features = {k: v for k, v in d["features"]}
    configs: dict[tuple[ConfigResourceType, str], dict[str, str]] = {}
    for rt, res, name, v in d["configs"]:
        typed([rt, res, name, v], STR, "configs")
        configs.setdefault((ConfigResourceType(rt), res), {})[name] = v
    typed([*names, *names.values(), *features], STR, "topic names/features")
    typed([*features.values()], INT, "feature levels")
    brokers = {}
    for bid, epoch_, fenced, shutdown, inc, rack, endpoints in d["brokers"]:
        typed([bid, epoch_], INT, "broker id/epoch")
        typed([fenced, shutdown], BOOL, "broker fenced/shutdown")
        typed([inc, rack], OPT_STR, "broker incarnation/rack")
        brokers[bid] = BrokerState(bid, epoch_, fenced, shutdown, inc, rack,
                                   tuple(typed(endpoints, STR, "broker endpoints")))
    tuples = [tuple(typed(t, INT, "replica list")) for t in typed(d["tuples"], {list}, "tuples")]
    cols, count = d["states"], None
    args: list[list[Any]] = []  # one column per field of PartitionState, each of its field's type
    for f in _PS:  # columns in PartitionState's field order, so map() can call the constructor directly
        col = cols[f]
        if f == "leader_recovery_state":
            args.append(list(map(_LRS.__getitem__, typed(col, STR, f))))
        else:
            typed(col, INT, f, index=f in _TUPLE_COLS)
            args.append(list(map(tuples.__getitem__, col)) if f in _TUPLE_COLS else col)
        if count not in (None, len(col)):
            raise ImageCodecError("malformed payload (state columns differ in length)")
        count = len(col)
    states = list(map(PartitionState, *args))
    p = d["partitions"]
    topics = typed(p["topics"], STR, "partition topic ids")
    t_col, p_col, s_col = (typed(p[k], INT, f"partition column {k}", index=k != "p") for k in "tps")
    if not len(t_col) == len(p_col) == len(s_col):
        raise ImageCodecError("malformed payload (partition columns differ in length)")
    # zip/map keep the 100k-partition build in C; a state shared by partitions is one object (immutable)
    by_topic: dict[str, dict[int, PartitionState]] = {tid: {} for tid in names}
    for tid, pid, state in zip(map(topics.__getitem__, t_col), p_col, map(states.__getitem__, s_col)):
        by_topic[tid][pid] = state  # KeyError: a partition of a topic the payload does not name
    return ClusterImage(
        cluster_id=image_cluster,
        provenance=Provenance(seq, event_id, offset, index, time_ms, controller_id, controller_epoch),
        controller=ControllerImage(leader, epoch, tuple(voters)),
        brokers=Map(brokers),
        topics=TopicsImage(Map({tid: TopicImage(names[tid], tid, Map(parts)) for tid, parts in by_topic.items()}),
                           Map({name: tid for tid, name in names.items()})),
        configs=Map({k: Map(v) for k, v in configs.items()}),
        features=Map(features), gaps=tuple(gaps), unknown_records=unknown,
    )
