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
compact JSON: the image as schemas/state/codec.py encodes it, beside the normalizer's own fields. The
sha256 detects corruption and truncation; it is not a signature (whoever can write the topic can
recompute it), which is acceptable because JSON can at worst give a wrong image, never code.
"""
from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from hashlib import sha256
from typing import Any

from schemas.state import codec as image_codec
from schemas.state.delta import ImageBuilder
from services.kraft.normalizer import KRaftNormalizer

MAGIC, NL = b"CAIMG1\n", b"\n"
# v2: the image is replay's ClusterImage (configs as the archive holds them, secrets as digests); a v1
# checkpoint is refused, and the worker rebuilds from the raw topic instead
FORMAT, VERSION = "ctrlaudit.kraft-image", 2
# The payload's keys in the order v2 has always written them: the image's (image_codec.KEYS), with the
# normalizer's own fields among them
_ORDER = ("format", "version", "cluster_id", "node_id", "last_offset", "image_cluster_id", "provenance",
          "controller", "gaps", "unknown_records", "topic_names", "features", "leaders_by_epoch", "configs",
          "secrets", "brokers", "tuples", "states", "partitions")
INT, STR = image_codec.INT, image_codec.STR


class CheckpointError(Exception):
    """A checkpoint that cannot be taken or used; the message is one line saying why."""


def quiet(n: KRaftNormalizer) -> bool:
    """True when n's image is a committed state: no metadata transaction open, no snapshot half read."""
    return not n.txn.in_transaction and not n.txn.pending and n._snapshot is None


def digest(blob: bytes) -> str:
    return sha256(blob).hexdigest()


def dump(n: KRaftNormalizer) -> bytes:
    """n's durable state (cluster, node, last offset, the image) as a checkpoint blob."""
    if not quiet(n):
        raise CheckpointError("checkpoint: normalizer is not quiet (open metadata transaction or snapshot)")
    try:
        image = image_codec.encode(n.image)
    except image_codec.ImageCodecError as exc:
        raise CheckpointError(f"checkpoint: {exc}") from None
    parts = {
        "format": FORMAT, "version": VERSION,
        "cluster_id": n.cluster_id, "node_id": n.node_id, "last_offset": n.last_offset,
        "leaders_by_epoch": list(n.leaders_by_epoch.items()),  # JSON object keys would turn the ints to str
        "secrets": [[*k, v] for k, v in n.secrets.digests.items()],
        **image,
    }
    payload = {k: parts[k] for k in _ORDER}
    raw = json.dumps(payload, separators=(",", ":"), check_circular=False).encode()
    return MAGIC + digest(raw).encode() + NL + zlib.compress(raw, 1)


def load(data: bytes, clock: Callable[[], int] | None = None) -> KRaftNormalizer:
    """A new normalizer in the state `data` was dumped from; CheckpointError if data is not intact."""
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
    except image_codec.ImageCodecError as exc:
        raise CheckpointError(f"checkpoint: {exc}") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint: malformed payload ({type(exc).__name__}: {exc})") from None


def _build(d: dict[str, Any], clock: Callable[[], int] | None) -> KRaftNormalizer:
    typed = image_codec.typed
    cluster_id, = typed([d["cluster_id"]], STR, "cluster_id")
    node_id, last_offset = typed([d["node_id"], d["last_offset"]], INT, "node_id/last_offset")
    image = image_codec.decode(d)
    n = KRaftNormalizer(cluster_id, node_id, clock=clock)
    n.last_offset = last_offset
    n.leaders_by_epoch = {e: c for e, c in d["leaders_by_epoch"]}
    typed([*n.leaders_by_epoch, *n.leaders_by_epoch.values()], INT, "leaders_by_epoch")
    for rt, res, name, v in d["secrets"]:
        typed([rt, res, name, v], STR, "secrets")
        n.secrets.digests[(rt, res, name)] = v
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
