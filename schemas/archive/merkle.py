"""RFC 9162 (and RFC 6962) Merkle trees over the archive's events, SHA-256.

leaf = SHA-256(0x00 || leaf bytes), node = SHA-256(0x01 || left || right) (RFC 9162 §2.1.1); an event's leaf bytes
are the 32 raw bytes of its chain hash. The tree of n leaves splits at the largest power of two below n, so every
perfect subtree, once complete, never changes: that is what lets a log be appended to and proved at any past size.

Here: the hashes; `CompactTree`, the O(log n) state an appender keeps (the roots of the perfect subtrees that make
up the tree, one per set bit of n — the "compact range" of transparency-dev/merkle's docs/compact_ranges.md);
`HashReader`, whatever stores the perfect subtrees' roots by (level, index) (schemas.archive.merkle_store); and the
inclusion and consistency proofs of RFC 9162 §2.1.3 and §2.1.4, made from a reader and checked from nothing but
what an auditor is given.

Bulk hashing goes by levels, a level at a time, so that the per-hash cost is hashlib's call and one bytes
allocation rather than a Python function's frame and recursion: at 10M events the root costs about what hashlib
alone takes for the same 2n - 1 hashes (bench/merkle.py). Where the native module is built (schemas._merklehash,
with OpenSSL), event leaves and node pairs are hashed in one C loop each instead: the capture worker hashes every
event it publishes, and hashlib's per-call overhead alone was ~6 % of its normalize path; the Python code stays the
reference and takes whatever the native one does not.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Protocol

from schemas.errors import ContractError

try:  # the bulk hashing of schemas/_native/merklehash.c (built with OpenSSL's headers); optional
    from schemas import _merklehash as _native  # type: ignore[attr-defined]  # C extension, no stubs
except ImportError:  # the Python path only
    _native = None
_packed = _native is not None

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()  # RFC 9162 §2.1.1: MTH({}) = HASH()

_sha256 = hashlib.sha256
_digest = type(hashlib.sha256()).digest  # the unbound method, so map() calls it without a lambda
_LEAF, _NODE = b"\x00", b"\x01"


class ProofError(ContractError):
    """A proof that does not hold, or a request for one that cannot exist (index or size out of range)."""


def leaf_hash(data: bytes) -> bytes:
    """The leaf hash of a leaf's bytes."""
    return _sha256(_LEAF + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an interior node from its children's hashes."""
    return _sha256(_NODE + left + right).digest()


def event_leaf_hash(event_hash: str) -> bytes:
    """The leaf hash of an archived event: its leaf bytes are the raw 32 bytes of its hex chain hash."""
    if len(event_hash) != 2 * HASH_SIZE:
        raise ProofError(f"event hash {event_hash[:16]!r}: {len(event_hash)} hex digits, expected {2 * HASH_SIZE}")
    try:
        raw = bytes.fromhex(event_hash)
    except ValueError:
        raise ProofError(f"event hash {event_hash[:16]!r}...: not hex") from None
    return leaf_hash(raw)


def event_leaf_hashes(event_hashes: Iterable[str]) -> list[bytes]:
    """The leaf hashes of many archived events' hex chain hashes, in order (what capture appends per batch)."""
    if _native is not None and isinstance(event_hashes, list):
        try:
            leaves: list[bytes] = _native.event_leaf_hashes(event_hashes)
            return leaves
        except ValueError:  # not exactly 64 hex digits each: the Python path's answer or error
            pass
    try:
        raw = [bytes.fromhex(h) for h in event_hashes]
    except ValueError:
        raise ProofError("an event hash is not hex") from None
    if set(map(len, raw)) - {HASH_SIZE}:
        raise ProofError(f"event hashes must be {2 * HASH_SIZE} hex digits each")
    return leaf_hashes(raw)


def leaf_hashes(leaves: Iterable[bytes]) -> list[bytes]:
    """The leaf hashes of many leaves' bytes, in order."""
    # a comprehension: with .digest() called as a method it measures ~15% faster than the map() chain
    sha, prefix = _sha256, _LEAF
    return [sha(prefix + leaf).digest() for leaf in leaves]


def pair_hashes(level: Sequence[bytes]) -> list[bytes]:
    """The parents of a level's nodes taken in pairs (0,1), (2,3)...; an odd last node has none."""
    if _native is not None and isinstance(level, list):
        try:
            parents: list[bytes] = _native.pair_hashes(level)
            return parents
        except ValueError:  # not 32-byte bytes each: the Python path
            pass
    # zip of one iterator twice gives the pairs; zip reuses its tuple once join is done with it, so a node's input
    # costs one 65-byte allocation (a quarter faster than 0x01 + (left + right))
    pairs = iter(level)
    return list(map(_digest, map(_sha256, map(b"".join, zip(repeat(_NODE), pairs, pairs)))))


def packed_event_leaves(hex_hashes: bytes | memoryview) -> bytes:
    """The leaf hashes, packed 32 bytes each, of events whose hex chain hashes are given back to back (64 hex digits
    each, as an Arrow string column holds them): what a reader checking a signed archive hashes per file."""
    if _packed:
        try:
            return bytes(_native.merkle_leaves(hex_hashes))
        except ValueError as exc:
            raise ProofError(str(exc)) from None
    data = bytes(hex_hashes)
    if len(data) % 64:
        raise ProofError("event hashes: not a whole number of 64 hex digits")
    return b"".join(event_leaf_hashes(data[i:i + 64].decode("ascii", "replace") for i in range(0, len(data), 64)))


def packed_parents(level: bytes) -> bytes:
    """The parents of a level packed 32 bytes per hash, taken in pairs (an even number of hashes)."""
    if _packed:
        return bytes(_native.merkle_parents(level))
    return b"".join(pair_hashes([level[i:i + HASH_SIZE] for i in range(0, len(level), HASH_SIZE)]))


def tree_hash(hashes: Sequence[bytes]) -> bytes:
    """MTH of the leaves whose leaf hashes are given (RFC 9162 §2.1.1), by levels: an odd last node is carried up
    unchanged, which builds the same tree as splitting at the largest power of two (the carried node is always at the
    right edge)."""
    if not hashes:
        return EMPTY_ROOT
    level = list(hashes)
    while len(level) > 1:
        parents = pair_hashes(level)
        if len(level) % 2:
            parents.append(level[-1])
        level = parents
    return level[0]


def _split(n: int) -> int:
    """The largest power of two smaller than n (n > 1): where RFC 9162 splits a tree of n leaves."""
    return 1 << ((n - 1).bit_length() - 1)


class CompactTree:
    """The right edge of a tree: for each set bit L of its size, the root of the perfect subtree of 2**L leaves that
    it ends with. Enough to append and to give the root at the current size; O(log n) hashes to persist."""

    def __init__(self, size: int = 0, nodes: Sequence[bytes] = ()) -> None:
        """A tree of `size` leaves from its right edge, `nodes`: the perfect subtrees' roots from the left (largest)
        to the right, as the `nodes` property gives them (what an appender persists to resume)."""
        if size < 0 or len(nodes) != size.bit_count() or any(len(h) != HASH_SIZE for h in nodes):
            raise ProofError(f"compact tree of size {size} needs {max(size, 0).bit_count()} hashes of "
                             f"{HASH_SIZE} bytes, got {len(nodes)}")
        self.size = size
        rest = list(nodes)
        # by level, lowest first: _levels[L] is the subtree of 2**L leaves, None where bit L of size is clear
        self._levels: list[bytes | None] = [rest.pop() if size >> lv & 1 else None for lv in range(size.bit_length())]

    @property
    def nodes(self) -> list[bytes]:
        """The perfect subtrees' roots, largest (leftmost) first."""
        return [h for h in reversed(self._levels) if h is not None]

    def root(self) -> bytes:
        """The tree hash at the current size."""
        acc: bytes | None = None
        for h in self._levels:
            if h is not None:
                acc = h if acc is None else node_hash(h, acc)
        return EMPTY_ROOT if acc is None else acc

    def append(self, leaf: bytes) -> list[bytes]:
        """Append one leaf hash; gives the perfect subtrees it completes, by level from 0 (the leaf itself)."""
        if len(leaf) != HASH_SIZE:
            raise ProofError(f"leaf hash of {len(leaf)} bytes, expected {HASH_SIZE}")
        levels, h, lv = self._levels, leaf, 0
        done = [h]
        while lv < len(levels) and levels[lv] is not None:
            left = levels[lv]
            assert left is not None
            h = node_hash(left, h)
            levels[lv] = None
            lv += 1
            done.append(h)
        if lv == len(levels):
            levels.append(h)
        else:
            levels[lv] = h
        self.size += 1
        return done

    def extend(self, leaves: Sequence[bytes]) -> list[list[bytes]]:
        """Append many leaf hashes at once, hashing by levels; gives, per level from 0, the perfect subtrees they
        complete in order (what a store appends)."""
        if set(map(len, leaves)) - {HASH_SIZE}:  # map(len): no Python frame per leaf at 10M leaves
            raise ProofError(f"leaf hashes must be {HASH_SIZE} bytes each")
        levels, done, lv = self._levels, [], 0
        new = list(leaves)
        while new:
            done.append(new)
            if lv == len(levels):
                levels.append(None)
            pending = levels[lv]
            row = [pending, *new] if pending is not None else new
            levels[lv] = row[-1] if len(row) % 2 else None
            new = pair_hashes(row)
            lv += 1
        while levels and levels[-1] is None:
            levels.pop()
        self.size += len(leaves)
        return done


    def extend_packed(self, leaves: bytes) -> list[bytes]:
        """Append leaf hashes packed 32 bytes each (packed_event_leaves), hashing a level at a time natively where
        built; gives, per level from 0, the perfect subtrees they complete, packed (what a store appends)."""
        if len(leaves) % HASH_SIZE:
            raise ProofError(f"packed leaf hashes: {len(leaves)} bytes, not a multiple of {HASH_SIZE}")
        levels, lv, new = self._levels, 0, leaves
        done = []
        while new:
            done.append(new)
            if lv == len(levels):
                levels.append(None)
            pending = levels[lv]
            row = pending + new if pending is not None else new
            if len(row) // HASH_SIZE % 2:
                levels[lv], row = row[-HASH_SIZE:], row[:-HASH_SIZE]
            else:
                levels[lv] = None
            new = packed_parents(row) if row else b""
            lv += 1
        while levels and levels[-1] is None:
            levels.pop()
        self.size += len(leaves) // HASH_SIZE
        return done


class HashReader(Protocol):
    """A store of a tree's perfect subtrees: node(level, index) is the root of leaves [index << level, (index + 1)
    << level), available once all its leaves are in (index + 1 << level <= size)."""

    @property
    def size(self) -> int: ...

    def node(self, level: int, index: int) -> bytes: ...


def subtree_hash(reader: HashReader, lo: int, hi: int) -> bytes:
    """MTH of leaves [lo, hi) from stored perfect subtrees: [lo, hi) cut from the left into the largest aligned
    blocks, folded from the right — O(log n) reads (Go's golang.org/x/mod/sumdb/tlog subTreeHash does the same)."""
    if not 0 <= lo < hi <= reader.size:
        raise ProofError(f"no subtree [{lo}, {hi}) in a tree of size {reader.size}")
    parts = []
    while lo < hi:
        lv = (hi - lo).bit_length() - 1
        if lo:
            lv = min(lv, (lo & -lo).bit_length() - 1)
        parts.append(reader.node(lv, lo >> lv))
        lo += 1 << lv
    acc = parts.pop()
    while parts:
        acc = node_hash(parts.pop(), acc)
    return acc


def root_at(reader: HashReader, size: int) -> bytes:
    """The tree hash at any size up to the reader's."""
    if size == 0:
        return EMPTY_ROOT
    return subtree_hash(reader, 0, size)


def inclusion_proof(reader: HashReader, index: int, size: int) -> list[bytes]:
    """PATH(index, D[size]) of RFC 9162 §2.1.3.1, leaf to root."""
    if not 0 <= index < size <= reader.size:
        raise ProofError(f"no inclusion proof of leaf {index} in a tree of size {size} (stored: {reader.size})")
    proof = []
    lo, hi = 0, size
    while hi - lo > 1:  # from the root down; the RFC's recursion emits these bottom-up
        k = _split(hi - lo)
        if index < lo + k:
            proof.append(subtree_hash(reader, lo + k, hi))
            hi = lo + k
        else:
            proof.append(subtree_hash(reader, lo, lo + k))
            lo += k
    proof.reverse()
    return proof


def consistency_proof(reader: HashReader, size1: int, size2: int) -> list[bytes]:
    """PROOF(size1, D[size2]) of RFC 9162 §2.1.4.1 (SUBPROOF with b = true), for 0 < size1 <= size2; empty when
    the sizes are equal."""
    if not 0 < size1 <= size2 <= reader.size:
        raise ProofError(f"no consistency proof from size {size1} to {size2} (stored: {reader.size})")
    proof = []
    lo, hi, whole = 0, size2, True  # whole: [lo, hi) starts at 0, so the verifier knows MTH(D[0:size1])
    while True:
        if size1 == hi:
            if not whole:
                proof.append(subtree_hash(reader, lo, hi))
            break
        k = _split(hi - lo)
        if size1 - lo <= k:
            proof.append(subtree_hash(reader, lo + k, hi))
            hi = lo + k
        else:
            proof.append(subtree_hash(reader, lo, lo + k))
            lo += k
            whole = False
    proof.reverse()
    return proof


def _check_hashes(what: str, hashes: Iterable[bytes]) -> None:
    for i, h in enumerate(hashes):
        if len(h) != HASH_SIZE:
            raise ProofError(f"{what} {i}: {len(h)} bytes, expected {HASH_SIZE}")


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> None:
    """Check that the leaf hash `leaf` is leaf `index` of the tree of `size` leaves with hash `root`, by RFC 9162
    §2.1.3.2; ProofError saying why when not. The proof binds the leaf to the root; `size` only shapes the path, so a
    proof also verifies for another size whose path has the same shape: take size and root from the same signed
    checkpoint, never one without the other. Likewise for verify_consistency."""
    _check_hashes("leaf hash", [leaf])
    _check_hashes("root hash", [root])
    _check_hashes("proof hash", proof)
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not in a tree of size {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError(f"inclusion proof of leaf {index} in size {size}: {len(proof)} hashes, too many")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(f"inclusion proof of leaf {index} in size {size}: {len(proof)} hashes, too few")
    if r != root:
        raise ProofError(f"inclusion proof of leaf {index} in size {size}: the root it gives, {r.hex()[:16]}..., "
                         f"is not the tree's, {root.hex()[:16]}...")


def verify_consistency(size1: int, size2: int, root1: bytes, root2: bytes, proof: Sequence[bytes]) -> None:
    """Check that the tree of `size1` leaves with hash `root1` is a prefix of the tree of `size2` with hash `root2`,
    by RFC 9162 §2.1.4.2; ProofError saying why when not. The empty tree is a prefix of every tree (empty proof, root1
    the empty tree's hash)."""
    _check_hashes("root hash", [root1, root2])
    _check_hashes("proof hash", proof)
    where = f"consistency proof from size {size1} to {size2}"
    if not 0 <= size1 <= size2:
        raise ProofError(f"{where}: the sizes must not decrease")
    if size1 == 0 or size1 == size2:
        if proof:
            raise ProofError(f"{where}: {len(proof)} hashes, expected none")
        if size1 == 0 and root1 != EMPTY_ROOT:
            raise ProofError(f"{where}: root1 is not the empty tree's hash")
        if size1 == size2 and root1 != root2:
            raise ProofError(f"{where}: equal sizes with different roots")
        return
    if not proof:
        raise ProofError(f"{where}: empty proof")
    path = list(proof)
    if size1 & (size1 - 1) == 0:  # a power of two: the old tree is a node of the new one, so the proof omits it
        path.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError(f"{where}: {len(proof)} hashes, too many")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(f"{where}: {len(proof)} hashes, too few")
    if fr != root1:
        raise ProofError(f"{where}: it does not give root1 {root1.hex()[:16]}... (gives {fr.hex()[:16]}...)")
    if sr != root2:
        raise ProofError(f"{where}: it does not give root2 {root2.hex()[:16]}... (gives {sr.hex()[:16]}...)")
