"""The native bulk hashing (schemas._merklehash) gives exactly the Python path's answers, and leaves every input it
does not take exactly as documented to the Python path, so odd input gets the same answer or error either way."""
from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings, strategies as st

from schemas.archive import merkle
from schemas.archive.merkle import CompactTree, ProofError, event_leaf_hashes, leaf_hash, pair_hashes, tree_hash

pytestmark = pytest.mark.skipif(merkle._native is None, reason="schemas._merklehash not built (no OpenSSL headers)")


@pytest.fixture
def python_only(monkeypatch):
    monkeypatch.setattr(merkle, "_native", None)


def _hashes(n: int) -> list[str]:
    return [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=32, max_size=32), max_size=70), st.booleans())
def test_native_leaves_and_nodes_are_the_python_ones(raw, upper):
    hexes = [(r.hex().upper() if upper else r.hex()) for r in raw]
    assert merkle._native.event_leaf_hashes(hexes) == [leaf_hash(r) for r in raw]
    leaves = [leaf_hash(r) for r in raw]
    python = [merkle.node_hash(a, b) for a, b in zip(leaves[::2], leaves[1::2])]
    assert merkle._native.pair_hashes(leaves) == python == pair_hashes(leaves)


def test_trees_built_either_way_have_one_root(monkeypatch):
    hexes = _hashes(1000)
    native = CompactTree()
    for i in range(0, 1000, 37):
        native.extend(event_leaf_hashes(hexes[i:i + 37]))
    monkeypatch.setattr(merkle, "_native", None)
    python = CompactTree()
    python.extend(event_leaf_hashes(hexes))
    assert native.root() == python.root() == tree_hash(event_leaf_hashes(hexes)) and native.nodes == python.nodes


@pytest.mark.parametrize("odd", [
    "ab" * 31,  # too short
    "ab" * 33,  # too long
    "zz" * 32,  # not hex
    "é" * 64,  # not ASCII
    " ".join(["ab"] * 32) + " " * 0,  # spaces between bytes: bytes.fromhex reads 32 bytes
])
def test_what_the_native_path_does_not_take_gets_the_python_answer(odd, monkeypatch):
    def both(values):
        try:
            return ("ok", event_leaf_hashes(values))
        except ProofError as exc:
            return ("error", str(exc))
    values = _hashes(3) + [odd]
    with pytest.raises(ValueError):
        merkle._native.event_leaf_hashes(values)
    native = both(values)
    monkeypatch.setattr(merkle, "_native", None)
    assert native == both(values)


def test_pairs_of_anything_but_32_byte_bytes_go_the_python_way():
    for level in ([b"x" * 31, b"y" * 32], [bytearray(32), b"y" * 32], ["a", "b"]):
        with pytest.raises(ValueError):
            merkle._native.pair_hashes(level)
    assert pair_hashes([b"x" * 31, b"y" * 32]) == [merkle.node_hash(b"x" * 31, b"y" * 32)]
