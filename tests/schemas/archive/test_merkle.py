"""RFC 9162 Merkle trees: published vectors, then every proof of random trees, then tampering."""
from __future__ import annotations

import hashlib
import random

import pytest

from schemas.archive.merkle import (
    EMPTY_ROOT,
    CompactTree,
    ProofError,
    event_leaf_hash,
    event_leaf_hashes,
    leaf_hash,
    leaf_hashes,
    node_hash,
    tree_hash,
    verify_consistency,
    verify_inclusion,
)
from schemas.archive.merkle_store import FileHashStore, MemoryHashStore
from tests.schemas.samples import chained_history

h = bytes.fromhex

# The RFC 6962 test vectors of transparency-dev/merkle (testonly/constants.go: LeafInputs, NodeHashes, RootHashes;
# testonly/reference_test.go: TestRefInclusionProof, TestRefConsistencyProof; testdata/inclusion/*/happy-path.json and
# testdata/consistency/*/happy-path.json), the same as Google's certificate-transparency reference tests.
LEAVES = [h(""), h("00"), h("10"), h("2021"), h("3031"), h("40414243"), h("5051525354555657"),
          h("606162636465666768696a6b6c6d6e6f")]
LEAF_HASHES = [h(x) for x in (
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1")]
LEVEL1 = [h(x) for x in (
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0")]
LEVEL2 = [h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
          h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4")]
ROOTS = [h(x) for x in (  # by tree size, 0 to 8
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")]
INCLUSION = [  # (leaf index, tree size, proof)
    (0, 1, []),
    (0, 2, [LEAF_HASHES[1]]),
    (1, 2, [LEAF_HASHES[0]]),
    (2, 3, [LEVEL1[0]]),
    (1, 5, [LEAF_HASHES[0], LEVEL1[1], LEAF_HASHES[4]]),
    (0, 8, [LEAF_HASHES[1], LEVEL1[1], LEVEL2[1]]),
    (5, 8, [LEAF_HASHES[4], LEVEL1[3], LEVEL2[0]]),
]
CONSISTENCY = [  # (size1, size2, proof)
    (1, 1, []),
    (1, 8, [LEAF_HASHES[1], LEVEL1[1], LEVEL2[1]]),
    (6, 8, [LEVEL1[2], LEVEL1[3], LEVEL2[0]]),
    (2, 5, [LEVEL1[1], LEAF_HASHES[4]]),
    (6, 7, [LEVEL1[2], LEAF_HASHES[6], LEVEL2[0]]),
]


def test_vectors_hashes_and_roots() -> None:
    assert hashlib.sha256(b"").digest() == EMPTY_ROOT == ROOTS[0] == tree_hash([])
    assert leaf_hashes(LEAVES) == [leaf_hash(x) for x in LEAVES] == LEAF_HASHES
    assert [node_hash(LEAF_HASHES[i], LEAF_HASHES[i + 1]) for i in range(0, 8, 2)] == LEVEL1
    for n in range(9):
        assert tree_hash(LEAF_HASHES[:n]) == ROOTS[n]
        assert MemoryHashStore(LEAF_HASHES[:n]).root() == ROOTS[n]
    store = MemoryHashStore(LEAF_HASHES)
    assert [store.root(n) for n in range(9)] == ROOTS
    assert [store.node(1, i) for i in range(4)] == LEVEL1 and [store.node(2, i) for i in range(2)] == LEVEL2


def test_vectors_compact_tree() -> None:
    # transparency-dev/merkle testonly/constants.go CompactTrees: the right edge at each size
    compact = CompactTree()
    for n, leaf in enumerate(LEAF_HASHES, 1):
        compact.append(leaf)
        assert compact.root() == ROOTS[n]
        assert CompactTree(n, compact.nodes).root() == ROOTS[n]
    assert CompactTree(7, [LEVEL2[0], LEVEL1[2], LEAF_HASHES[6]]).root() == ROOTS[7]


@pytest.mark.parametrize("index,size,proof", INCLUSION)
def test_vectors_inclusion(index: int, size: int, proof: list[bytes]) -> None:
    assert MemoryHashStore(LEAF_HASHES).inclusion_proof(index, size) == proof
    verify_inclusion(LEAF_HASHES[index], index, size, proof, ROOTS[size])


@pytest.mark.parametrize("size1,size2,proof", CONSISTENCY)
def test_vectors_consistency(size1: int, size2: int, proof: list[bytes]) -> None:
    assert MemoryHashStore(LEAF_HASHES).consistency_proof(size1, size2) == proof
    verify_consistency(size1, size2, ROOTS[size1], ROOTS[size2], proof)


# transparency-dev/merkle testdata/consistency/additional and testdata/inclusion/additional: edge cases refused
# ("don't care 1/2" stand for their arbitrary non-hash roots; we refuse those for their length as well)
DC1, DC2 = b"don't care 1", b"don't care 2"


@pytest.mark.parametrize("size1,size2,root1,root2,proof", [
    (0, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT]),  # consistency check on empty tree (size1 is zero) is useless
    (0, 0, EMPTY_ROOT, DC2, []),  # roots do not match and sizes are zero
    (1, 1, EMPTY_ROOT, DC2, []),
    (2, 1, DC1, DC2, []),  # size1 is greater than size2
    (1, 0, DC1, DC2, []),
    (0, 1, DC1, DC2, []),
    (0, 0, DC1, DC1, []),  # sizes are equal (zero) and proof is empty, but the root is not the empty tree's
    (1, 1, DC1, DC2, []),  # sizes are equal (one) but roots are not
    (1, 2, ROOTS[1], ROOTS[2], []),  # sizes do not match and proof is empty
    (1, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT]),  # sizes match but proof is not empty
    (0, 0, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT]),
])
def test_consistency_edge_cases_refused(size1: int, size2: int, root1: bytes, root2: bytes,
                                        proof: list[bytes]) -> None:
    with pytest.raises(ProofError):
        verify_consistency(size1, size2, root1, root2, proof)


def test_consistency_from_empty_tree() -> None:
    verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])
    verify_consistency(0, 5, EMPTY_ROOT, ROOTS[5], [])


@pytest.mark.parametrize("index,size,leaf,root", [
    (0, 0, h("abacaba000000000000000000000000000000000000000000060061e00123456"), EMPTY_ROOT),
    (0, 0, b"", EMPTY_ROOT),
    (0, 1, h("abacaba000000000000000000000000000000000000000000060061e00123456"), EMPTY_ROOT),
    (1, 0, LEAF_HASHES[0], EMPTY_ROOT),
    (2, 1, LEAF_HASHES[0], ROOTS[1]),
    (0, 1, LEAF_HASHES[0], b""),
])
def test_inclusion_edge_cases_refused(index: int, size: int, leaf: bytes, root: bytes) -> None:
    with pytest.raises(ProofError):
        verify_inclusion(leaf, index, size, [], root)


def test_event_leaf_hash() -> None:
    assert event_leaf_hash("00" * 32) == leaf_hash(bytes(32))
    hexes = [bytes([i]).hex() * 32 for i in range(5)]
    assert event_leaf_hashes(hexes) == [event_leaf_hash(x) for x in hexes] == leaf_hashes(bytes.fromhex(x) for x in hexes)
    for bad in (["ab" * 31], ["zz" * 32], ["ab" * 33]):
        with pytest.raises(ProofError, match="event hash"):
            event_leaf_hashes(bad)
    with pytest.raises(ProofError, match="hex digits"):
        event_leaf_hash("abc")
    with pytest.raises(ProofError, match="not hex"):
        event_leaf_hash("zz" * 32)


def _leaves(n: int, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    return leaf_hashes(rnd.randbytes(32) for _ in range(n))


def _flip(data: bytes, i: int) -> bytes:
    return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def _inclusion_shape(index: int, size: int) -> list[bool] | None:
    """From the tree's definition (not the verifier's bit arithmetic): for each proof hash, leaf to root, whether it
    is the left sibling. A proof verifies for another size exactly when the shapes are equal: the size is bound to
    the root by the checkpoint that signs both, not by the proof."""
    if not 0 <= index < size:
        return None
    shape, lo, hi = [], 0, size
    while hi - lo > 1:
        k = _split(hi - lo)
        shape.append(index >= lo + k)
        lo, hi = (lo + k, hi) if index >= lo + k else (lo, lo + k)
    return shape[::-1]


def _consistency_shape(size1: int, size2: int) -> tuple[bool, list[str]] | None:
    """Likewise for a consistency proof: whether the old root seeds it, and each hash's role (SUBPROOF of RFC 9162
    §2.1.4.1: a right subtree of the new tree only, or a left subtree of both)."""
    if not 0 < size1 < size2:
        return None
    roles, lo, hi, whole = [], 0, size2, True
    while size1 != hi:
        k = _split(hi - lo)
        if size1 - lo <= k:
            roles.append("right")
            hi = lo + k
        else:
            roles.append("left")
            lo, whole = lo + k, False
    return whole, roles[::-1]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 31, 64, 100, 255, 257])
def test_every_proof_of_small_trees(n: int) -> None:
    leaves = _leaves(n, n)
    store = MemoryHashStore(leaves)
    roots = [tree_hash(leaves[:m]) for m in range(n + 1)]
    for m in range(1, n + 1):
        assert store.root(m) == roots[m]
        for i in range(m):
            verify_inclusion(leaves[i], i, m, store.inclusion_proof(i, m), roots[m])
        for m1 in range(1, m + 1):
            verify_consistency(m1, m, roots[m1], roots[m], store.consistency_proof(m1, m))


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_proofs_and_tampering(seed: int) -> None:
    rnd = random.Random(seed)
    n = rnd.randint(2, 3000)
    leaves = _leaves(n, 1000 + seed)
    store = MemoryHashStore(leaves)
    root = store.root()
    assert root == tree_hash(leaves)
    for i in rnd.sample(range(n), min(n, 40)) + [0, n - 1]:
        proof = store.inclusion_proof(i)
        verify_inclusion(leaves[i], i, n, proof, root)
        shape = _inclusion_shape(i, n)
        for index, size in {(i - 1, n), (i + 1, n), (i ^ 2, n), (i * 2, n), (i ^ 1, n), (i, n - 1), (i, n + 1),
                            (i, n * 2), (i, n // 2), (i, n ^ 1), (i, n ^ 256)} - {(i, n)}:
            if _inclusion_shape(index, size) == shape:  # same path: a proof cannot tell (see _inclusion_shape)
                verify_inclusion(leaves[i], index, size, proof, root)
            else:
                with pytest.raises(ProofError):
                    verify_inclusion(leaves[i], index, size, proof, root)
        for k in range(len(proof)):
            for b in (0, 17, 31):
                tampered = [*proof[:k], _flip(proof[k], b), *proof[k + 1:]]
                with pytest.raises(ProofError):
                    verify_inclusion(leaves[i], i, n, tampered, root)
        for b in range(32):
            with pytest.raises(ProofError):
                verify_inclusion(_flip(leaves[i], b), i, n, proof, root)
            with pytest.raises(ProofError):
                verify_inclusion(leaves[i], i, n, proof, _flip(root, b))
        for bad in (proof[:-1], [*proof, proof[-1]] if proof else [root], [root, *proof]):
            with pytest.raises(ProofError):
                verify_inclusion(leaves[i], i, n, bad, root)
    for _ in range(40):
        m = rnd.randint(1, n - 1)
        root1 = store.root(m)
        proof = store.consistency_proof(m)
        verify_consistency(m, n, root1, root, proof)
        for b in (0, 31):
            with pytest.raises(ProofError):
                verify_consistency(m, n, _flip(root1, b), root, proof)
            with pytest.raises(ProofError):
                verify_consistency(m, n, root1, _flip(root, b), proof)
            for k in range(len(proof)):
                with pytest.raises(ProofError):
                    verify_consistency(m, n, root1, root, [*proof[:k], _flip(proof[k], b), *proof[k + 1:]])
        shape = _consistency_shape(m, n)
        for m2, n2 in {(m - 1, n), (m + 1, n), (m, n - 1), (m, n + 1), (m * 2, n), (m, n * 2), (m ^ 1, n),
                       (m, n ^ 1), (m ^ 64, n), (m, n ^ 64)} - {(m, n)}:
            if _consistency_shape(m2, n2) == shape:
                verify_consistency(m2, n2, root1, root, proof)
            else:
                with pytest.raises(ProofError):
                    verify_consistency(m2, n2, root1, root, proof)
        for bad in (proof[:-1], [*proof, proof[-1]], [root1, *proof]):
            with pytest.raises(ProofError):
                verify_consistency(m, n, root1, root, bad)


def test_append_extend_and_compact_agree() -> None:
    leaves = _leaves(1000, 7)
    one, bulk, compact = MemoryHashStore(), MemoryHashStore(), CompactTree()
    rnd = random.Random(7)
    i = 0
    for leaf in leaves:
        one.append(leaf)
    while i < len(leaves):
        k = rnd.choice([1, 2, 3, 5, 64, 100])
        bulk.extend(leaves[i:i + k])
        compact.extend(leaves[i:i + k])
        i = min(i + k, len(leaves))
        assert compact.root() == bulk.root() == tree_hash(leaves[:i]) == one.root(i)
    assert one._levels == bulk._levels
    with pytest.raises(ProofError):
        one.append(b"short")
    with pytest.raises(ProofError):
        CompactTree(3, [leaves[0]])
    with pytest.raises(ProofError, match="32 bytes each"):
        bulk.extend([leaves[0], b"x" * 31])
    assert bulk.size == len(leaves) and bulk.root() == tree_hash(leaves)  # nothing half-appended


def test_proof_requests_out_of_range() -> None:
    store = MemoryHashStore(LEAF_HASHES)
    for index, size in [(8, 8), (0, 9), (-1, 8), (0, 0)]:
        with pytest.raises(ProofError):
            store.inclusion_proof(index, size)
    for size1, size2 in [(0, 8), (5, 4), (1, 9)]:
        with pytest.raises(ProofError):
            store.consistency_proof(size1, size2)
    with pytest.raises(ProofError):
        store.node(3, 1)


def test_file_store_reopens_and_repairs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    leaves = _leaves(777, 3)
    with FileHashStore(tmp_path / "tree") as store:
        store.extend(leaves[:500])
        for leaf in leaves[500:700]:
            store.append(leaf)
        store.sync()
        proof = store.inclusion_proof(123)
    with FileHashStore(tmp_path / "tree") as store:
        assert store.size == 700 and store.root() == tree_hash(leaves[:700])
        assert store.inclusion_proof(123) == proof
        store.extend(leaves[700:])
        assert store.root() == tree_hash(leaves)
    # a crash mid-append: level 0 written with a torn last hash, the levels above not yet
    level0, level1 = tmp_path / "tree" / "level-00", tmp_path / "tree" / "level-01"
    with level0.open("ab") as fo:
        fo.write(leaves[0] + leaves[1] + leaves[2][:7])
    with FileHashStore(tmp_path / "tree") as store:
        assert store.size == 779
        assert store.root() == tree_hash([*leaves, leaves[0], leaves[1]])
        assert level0.stat().st_size == 779 * 32 and level1.stat().st_size == 389 * 32
    # level 0 cut short (a lost write): the levels above are cut to match
    with level0.open("r+b") as fo:
        fo.truncate(600 * 32)
    with FileHashStore(tmp_path / "tree") as store:
        assert store.size == 600 and store.root() == tree_hash(leaves[:600])
        verify_inclusion(leaves[599], 599, 600, store.inclusion_proof(599), store.root())


def test_proofs_verify_exactly_where_their_shape_fits() -> None:
    # every proof of every small tree, checked against every (index, size) and (size1, size2) it could be claimed for
    leaves = _leaves(24, 24)
    store = MemoryHashStore(leaves)
    roots = [store.root(m) for m in range(25)]
    for n in range(1, 25):
        for i in range(n):
            proof = store.inclusion_proof(i, n)
            for i2 in range(26):
                for n2 in range(26):
                    ok = _inclusion_shape(i2, n2) == _inclusion_shape(i, n)
                    try:
                        verify_inclusion(leaves[i], i2, n2, proof, roots[n])
                    except ProofError:
                        assert not ok, (i, n, i2, n2)
                    else:
                        assert ok, (i, n, i2, n2)
        for m in range(1, n):
            proof = store.consistency_proof(m, n)
            for m2 in range(1, 26):
                for n2 in range(m2 + 1, 26):
                    ok = _consistency_shape(m2, n2) == _consistency_shape(m, n)
                    try:
                        verify_consistency(m2, n2, roots[m], roots[n], proof)
                    except ProofError:
                        assert not ok, (m, n, m2, n2)
                    else:
                        assert ok, (m, n, m2, n2)


def test_file_store_one_writer_many_readers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    leaves = _leaves(300, 5)
    with FileHashStore(tmp_path / "t") as writer:
        writer.extend(leaves[:256])
        with pytest.raises(ProofError, match="open for appending by another process"):
            FileHashStore(tmp_path / "t")
        with FileHashStore(tmp_path / "t", readonly=True) as reader:
            assert reader.size == 256 and reader.root() == writer.root()
            with pytest.raises(ProofError, match="read-only"):
                reader.append(leaves[256])
        # an append caught half-way: level 0 has 4 more leaves, the levels above not yet
        (tmp_path / "t" / "level-00").open("ab").write(b"".join(leaves[256:260]))
        with FileHashStore(tmp_path / "t", readonly=True) as reader:
            assert reader.size == 257 and reader.root() == tree_hash(leaves[:257])  # leaf 257 needs level 1
            verify_inclusion(leaves[256], 256, 257, reader.inclusion_proof(256), reader.root())
    with pytest.raises(ProofError, match="no tree here"):
        FileHashStore(tmp_path / "none", readonly=True)


def test_a_chain_of_events_proved() -> None:
    events = chained_history()
    store = MemoryHashStore(event_leaf_hashes(e.hash for e in events))
    root = store.root()
    for e in events:
        verify_inclusion(event_leaf_hash(e.hash), e.seq, len(events), store.inclusion_proof(e.seq), root)


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_packed_hashing_gives_the_vectors_roots(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The packed path a signed archive's reader takes (C where built, else Python) against the published roots,
    fed in uneven pieces so that levels carry pending nodes between calls."""
    from schemas.archive import merkle
    if native and not merkle._packed:
        pytest.skip("the native extension is not built with OpenSSL")
    monkeypatch.setattr(merkle, "_packed", native)
    for size in range(len(LEAF_HASHES) + 1):
        for step in (1, 3, 8):
            tree = CompactTree()
            for i in range(0, size, step):
                tree.extend_packed(b"".join(LEAF_HASHES[i:min(i + step, size)]))
            assert (tree.size, tree.root()) == (size, ROOTS[size])
    rng = random.Random(3)
    hexes = [rng.randbytes(32).hex() for _ in range(1000)]
    packed = merkle.packed_event_leaves("".join(hexes).encode())
    assert packed == b"".join(event_leaf_hashes(hexes))
    assert merkle.packed_event_leaves("".join(hexes).upper().encode()) == packed  # as bytes.fromhex reads them
    with pytest.raises(ProofError, match="not hex"):
        merkle.packed_event_leaves(("0" * 63 + "g").encode())
    with pytest.raises(ProofError, match="64 hex digits"):
        merkle.packed_event_leaves(b"0" * 65)
