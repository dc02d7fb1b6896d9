"""Checkpoints of a KRaftNormalizer's image, so a restarted capture worker need not replay the raw topic
from offset 0.

Why: the image (every partition, broker, config, feature, controller epoch) is rebuilt record by record,
so without a checkpoint a restart costs a replay of the whole raw topic, which grows with the cluster's
life. A checkpoint taken at a quiet point (no open metadata transaction, not inside a snapshot) lets the
worker load the image and replay only the raw messages after it.

Why it cannot disagree with the events topic: the image is a pure function of the raw-topic prefix it was
built from (decoding and normalizing are deterministic), so a checkpoint is just a cached value of that
function. Progress (chain head, emitted positions) still comes from the events topic itself
(services.capture.logic); a stale checkpoint only means a longer replay, never a lost or repeated event.

Why not pickle: the blob is read back from a Kafka topic, and a tamper-evident audit tool must not execute
code that anyone able to write to a topic put there. The format is a magic line with its version, the
sha256 of the payload, and zlib (level 1: restart and checkpoint latency matter more than bytes) of
compact JSON. The sha256 detects corruption and truncation; it is not a signature (whoever can write the
topic can recompute it), which is acceptable because JSON can at worst give a wrong image, never code.

Layout: partitions as flat columns (topic index, partition id, state index), each distinct PartitionState
once (as columns, one per field) and each distinct int tuple once. Replica sets repeat a lot and states
often do (equal epochs after a mass election), and columns let dump and load run in C (zip/map/json)
rather than a Python loop per partition: the cost of a restart is what this module exists to cut.
"""
from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import fields
from hashlib import sha256
from operator import attrgetter
from typing import Any, TypeVar

from immutables import Map

from schemas.state.delta import ImageBuilder
from schemas.state.image import CaptureGapSeen, ClusterImage, ControllerImage, Provenance, TopicImage, TopicsImage
from schemas.events import BrokerState, ConfigResourceType, LeaderRecoveryState, PartitionState
from services.kraft.normalizer import KRaftNormalizer

MAGIC, NL = b"CAIMG1\n", b"\n"
# v2: the image is replay's ClusterImage (configs as the archive holds them, secrets as digests); a v1
# checkpoint is refused, and the worker rebuilds from the raw topic instead
FORMAT, VERSION = "ctrlaudit.kraft-image", 2

# The codec spells out every field; if one is added to these dataclasses, refuse to checkpoint rather
# than silently drop it (a loaded image missing a field would disagree with a replayed one).
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
_DRIFT = [c.__name__ for c, names in _KNOWN.items() if tuple(f.name for f in fields(c)) != names]
_PS = _KNOWN[PartitionState]
_TUPLE_COLS = {"replicas", "isr", "adding_replicas", "removing_replicas", "elr", "last_known_elr"}
_ROW = attrgetter(*_PS)  # one C call per partition instead of ten getattr
_LRS = {m.value: m for m in LeaderRecoveryState}
# the types `_typed` lets through
INT: set[type] = {int}
STR: set[type] = {str}
BOOL: set[type] = {bool}
OPT_STR: set[type] = {str, type(None)}


class CheckpointError(Exception):
    """A checkpoint that cannot be taken or used; the message is one line saying why."""


def quiet(n: KRaftNormalizer) -> bool:
    """True when n's image is a committed state: no metadata transaction open, no snapshot half read."""
    return not n.txn.in_transaction and not n.txn.pending and n._snapshot is None


def digest(blob: bytes) -> str:
    return sha256(blob).hexdigest()


H = TypeVar("H", bound=Hashable)


def _index(values: Sequence[H]) -> tuple[list[H], list[int]]:
    """(distinct values in first-seen order, each value's index): dict.fromkeys and map stay in C."""
    distinct = {v: i for i, v in enumerate(dict.fromkeys(values))}
    return list(distinct), list(map(distinct.__getitem__, values))


def dump(n: KRaftNormalizer) -> bytes:
    """n's durable state (cluster, node, last offset, the image) as a checkpoint blob."""
    if not quiet(n):
        raise CheckpointError("checkpoint: normalizer is not quiet (open metadata transaction or snapshot)")
    if _DRIFT:
        raise CheckpointError(f"checkpoint: codec does not know every field of {', '.join(_DRIFT)}")
    im = n.image
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
    # leader_recovery_state is a StrEnum: json writes its value as a plain string
    payload = {
        "format": FORMAT, "version": VERSION,
        "cluster_id": n.cluster_id, "node_id": n.node_id, "last_offset": n.last_offset,
        "image_cluster_id": im.cluster_id,
        "provenance": [getattr(im.provenance, f) for f in _KNOWN[Provenance]],
        "controller": [im.controller.leader_id, im.controller.epoch, list(im.controller.voters)],
        "gaps": [[g.seq, g.from_offset, g.to_offset, g.reason] for g in im.gaps],
        "unknown_records": im.unknown_records,
        "topic_names": [[tid, t.name] for tid, t in by_id.items()],
        "features": list(im.features.items()),
        "leaders_by_epoch": list(n.leaders_by_epoch.items()),  # JSON object keys would turn the ints to str
        "configs": [[rt.value, res, name, v] for (rt, res), values in im.configs.items() for name, v in values.items()],
        "secrets": [[*k, v] for k, v in n.secrets.digests.items()],
        "brokers": [[b.broker_id, b.epoch, b.fenced, b.in_controlled_shutdown, b.incarnation_id, b.rack,
                     b.endpoints] for b in im.brokers.values()],
        "tuples": tuples, "states": columns,
        "partitions": {"topics": topics, "t": t_col, "p": list(pids), "s": s_col},
    }
    raw = json.dumps(payload, separators=(",", ":"), check_circular=False).encode()
    return MAGIC + digest(raw).encode() + NL + zlib.compress(raw, 1)


def load(data: bytes, clock: Callable[[], int] | None = None) -> KRaftNormalizer:
    """A new normalizer in the state `data` was dumped from; CheckpointError if data is not intact."""
    if _DRIFT:
        raise CheckpointError(f"checkpoint: codec does not know every field of {', '.join(_DRIFT)}")
    data = bytes(data)
    if not data.startswith(MAGIC):
        if data.startswith(MAGIC[:5]):
            raise CheckpointError(f"checkpoint: unsupported format version {data[5:data.find(NL)]!r}")
        raise CheckpointError(f"checkpoint: bad magic {data[:7]!r} (not a ctrlaudit image checkpoint)")
    head = len(MAGIC)
    want, sep = data[head:head + 64], data[head + 64:head + 65]
    if sep != NL or len(want) != 64:
        raise CheckpointError("checkpoint: header truncated (no sha256 line)")
    try:
        raw = zlib.decompress(data[head + 65:])
    except zlib.error as exc:
        raise CheckpointError(f"checkpoint: compressed body corrupt or truncated ({exc})") from None
    if digest(raw).encode() != want:
        raise CheckpointError("checkpoint: sha256 mismatch (payload altered or truncated)")
    try:
        d = json.loads(raw)
        if (d.get("format"), d.get("version")) != (FORMAT, VERSION):
            raise CheckpointError(f"checkpoint: payload is {d.get('format')!r} v{d.get('version')!r}, "
                                  f"expected {FORMAT!r} v{VERSION}")
        return _build(d, clock)
    except CheckpointError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint: malformed payload ({type(exc).__name__}: {exc})") from None


def _typed(xs: object, types: set[type], what: str, index: bool = False) -> list[Any]:
    """`xs`, a list from the JSON payload, when its items are all of `types` (the items' type is what was
    checked, which the signature cannot say); CheckpointError otherwise."""
    # json gives whatever the payload says: a float leader or a str epoch must not reach the image (bool
    # is an int subclass, so types are compared exactly); a negative index would pick from the end
    if type(xs) is not list or not set(map(type, xs)) <= types or (index and xs and min(xs) < 0):
        raise CheckpointError(f"checkpoint: malformed payload ({what})")
    return xs


def _build(d: dict[str, Any], clock: Callable[[], int] | None) -> KRaftNormalizer:
    cluster_id, = _typed([d["cluster_id"]], STR, "cluster_id")
    node_id, last_offset, unknown = _typed([d["node_id"], d["last_offset"], d["unknown_records"]], INT,
                                           "node_id/last_offset/unknown_records")
    image_cluster, = _typed([d["image_cluster_id"]], OPT_STR, "image cluster_id")
    n = KRaftNormalizer(cluster_id, node_id, clock=clock)
    n.last_offset = last_offset
    seq, event_id, offset, index, time_ms, controller_id, controller_epoch = d["provenance"]
    _typed([seq, offset, index, time_ms, controller_id, controller_epoch], INT, "provenance")
    _typed([event_id], STR, "provenance event id")
    leader, epoch, voters = d["controller"]
    _typed([leader, epoch, *_typed(voters, INT, "controller voters")], INT, "controller")
    gaps = []
    for g_seq, g_from, g_to, reason in d["gaps"]:
        _typed([g_seq, g_from, g_to], INT, "gap offsets")
        gaps.append(CaptureGapSeen(g_seq, g_from, g_to, *_typed([reason], STR, "gap reason")))
    names = {t: name for t, name in d["topic_names"]}
    features = {k: v for k, v in d["features"]}
    n.leaders_by_epoch = {e: c for e, c in d["leaders_by_epoch"]}
    configs: dict[tuple[ConfigResourceType, str], dict[str, str]] = {}
    for rt, res, name, v in d["configs"]:
        _typed([rt, res, name, v], STR, "configs")
        configs.setdefault((ConfigResourceType(rt), res), {})[name] = v
    for rt, res, name, v in d["secrets"]:
        _typed([rt, res, name, v], STR, "secrets")
        n.secrets.digests[(rt, res, name)] = v
    _typed([*names, *names.values(), *features], STR, "topic names/features")
    _typed([*features.values(), *n.leaders_by_epoch, *n.leaders_by_epoch.values()], INT,
           "feature levels/leaders_by_epoch")
    brokers = {}
    for bid, epoch_, fenced, shutdown, inc, rack, endpoints in d["brokers"]:
        _typed([bid, epoch_], INT, "broker id/epoch")
        _typed([fenced, shutdown], BOOL, "broker fenced/shutdown")
        _typed([inc, rack], OPT_STR, "broker incarnation/rack")
        brokers[bid] = BrokerState(bid, epoch_, fenced, shutdown, inc, rack,
                                   tuple(_typed(endpoints, STR, "broker endpoints")))
    tuples = [tuple(_typed(t, INT, "replica list")) for t in _typed(d["tuples"], {list}, "tuples")]
    cols, count = d["states"], None
    args: list[list[Any]] = []  # one column per field of PartitionState, each of its field's type
    for f in _PS:  # columns in PartitionState's field order, so map() can call the constructor directly
        col = cols[f]
        if f == "leader_recovery_state":
            args.append(list(map(_LRS.__getitem__, _typed(col, STR, f))))
        else:
            _typed(col, INT, f, index=f in _TUPLE_COLS)
            args.append(list(map(tuples.__getitem__, col)) if f in _TUPLE_COLS else col)
        if count not in (None, len(col)):
            raise CheckpointError("checkpoint: malformed payload (state columns differ in length)")
        count = len(col)
    states = list(map(PartitionState, *args))
    p = d["partitions"]
    topics = _typed(p["topics"], STR, "partition topic ids")
    t_col, p_col, s_col = (_typed(p[k], INT, f"partition column {k}", index=k != "p") for k in "tps")
    if not len(t_col) == len(p_col) == len(s_col):
        raise CheckpointError("checkpoint: malformed payload (partition columns differ in length)")
    # zip/map keep the 100k-partition build in C; a state shared by partitions is one object (immutable)
    by_topic: dict[str, dict[int, PartitionState]] = {tid: {} for tid in names}
    for tid, pid, state in zip(map(topics.__getitem__, t_col), p_col, map(states.__getitem__, s_col)):
        by_topic[tid][pid] = state  # KeyError: a partition of a topic the checkpoint does not name
    image = ClusterImage(
        cluster_id=image_cluster,
        provenance=Provenance(seq, event_id, offset, index, time_ms, controller_id, controller_epoch),
        controller=ControllerImage(leader, epoch, tuple(voters)),
        brokers=Map(brokers),
        topics=TopicsImage(Map({tid: TopicImage(names[tid], tid, Map(parts)) for tid, parts in by_topic.items()}),
                           Map({name: tid for tid, name in names.items()})),
        configs=Map({k: Map(v) for k, v in configs.items()}),
        features=Map(features), gaps=tuple(gaps), unknown_records=unknown,
    )
    n.delta = ImageBuilder(image)
    return n


def split(blob: bytes, size: int) -> list[bytes]:
    """blob in pieces of at most `size` bytes (Kafka's message size limit); always at least one piece."""
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    return [blob[i:i + size] for i in range(0, max(len(blob), 1), size)]


def join(chunks: list[bytes | None], sha256_hex: str) -> bytes:
    """The blob `chunks` were split from, if their concatenation has digest `sha256_hex`."""
    missing = [i for i, c in enumerate(chunks) if c is None]
    if missing:
        raise CheckpointError(f"checkpoint: chunk(s) {missing} of {len(chunks)} missing")
    blob = b"".join(chunks)  # type: ignore[arg-type]  # no None left in chunks: refused above
    if digest(blob) != sha256_hex:
        raise CheckpointError(f"checkpoint: {len(chunks)} chunk(s) do not match sha256 {sha256_hex[:12]}... "
                              "(chunk missing, reordered or altered)")
    return blob
