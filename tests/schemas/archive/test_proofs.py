"""Proofs made from signed archives round trip: every seq against every checkpoint covering it, every pair of
checkpoints, at tree sizes 1, 2, 7 and 1000; one event found in a file of many deflate blocks; a proof made without
the archive's merkle/ store; and proof documents read strictly."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from schemas.archive.container import iter_records
from schemas.archive.event_at import event_at
from schemas.archive.proofs import (
    ConsistencyProof,
    InclusionProof,
    MalformedProof,
    ProofFailed,
    parse_proof,
    to_json,
    verify_proof,
)
from schemas.archive.prover import DamagedStore, consistency, inclusion, prove, read_log, stored_sizes
from schemas.archive.signatures import Trust
from schemas.archive.signed import list_checkpoints
from schemas.archive.verified import ArchiveProblem
from schemas.errors import CodecError
from tests.signed_archives import digest, keypair, signed_archive


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("keys")
    _, _, log = keypair(d, "log.example/prod", "log.key")
    _, _, other = keypair(d, "log.example/prod", "other.key")  # the same name, another key
    return {"log": log, "other": other, "trust": Trust((log.verifier,))}


def _archive(tmp: Path, log, events: int, per_file: int, **kw) -> Path:
    return signed_archive(tmp, log, events, per_file, **kw)


@pytest.mark.parametrize("events, per_file, seqs", [
    (1, 1, None), (2, 1, None), (7, 1, None), (7, 3, None), (1000, 97, [0, 1, 96, 97, 500, 511, 512, 998, 999]),
])
def test_inclusion_round_trips(tmp_path, keys, events, per_file, seqs) -> None:
    cluster = _archive(tmp_path, keys["log"], events, per_file)
    sizes = [s for s, _ in list_checkpoints(cluster)]
    assert sizes[-1] == events and len(sizes) == -(-events // per_file)
    records = [r for f in sorted(cluster.glob("*.avro")) for r in iter_records(f)]
    made = 0
    for seq in seqs if seqs is not None else range(events):
        with read_log([tmp_path], keys["trust"], seq=seq) as log:
            for size in [s for s in sizes if s > seq][:4]:
                m = inclusion(log, keys["trust"], at=size)
                proof = parse_proof(m.json.encode())
                assert isinstance(proof, InclusionProof) and proof.index == seq
                proven = verify_proof(proof, keys["trust"])
                assert (proven.seq, proven.size, proven.event_id) == (seq, size, records[seq]["event_id"])
                assert proof.event.hash == records[seq]["hash"] and proof.event.decoded["hash"] == records[seq]["hash"]
                # RFC 9162: at most ceil(log2 size) hashes, exactly log2 size in a perfect tree
                assert len(proof.audit_path) <= (size - 1).bit_length()
                assert size & (size - 1) or len(proof.audit_path) == size.bit_length() - 1
                made += 1
            # by default: the newest checkpoint covering it
            assert verify_proof(inclusion(log, keys["trust"]).proof, keys["trust"]).size == events
    assert made


@pytest.mark.parametrize("events, per_file", [(2, 1), (7, 1), (1000, 97)])
def test_consistency_round_trips(tmp_path, keys, events, per_file) -> None:
    cluster = _archive(tmp_path, keys["log"], events, per_file)
    with read_log([tmp_path], keys["trust"]) as log:
        sizes = stored_sizes(log)
        pairs = [(a, b) for a in sizes for b in sizes if a <= b]
        for a, b in pairs:
            m = consistency(log, keys["trust"], a, b)
            assert isinstance(m.proof, ConsistencyProof)
            proven = verify_proof(parse_proof(m.json.encode()), keys["trust"])
            assert (proven.old_size, proven.size) == (a, b)
        # a note file from elsewhere (an auditor's copy) counts as a stored one
        note = (cluster / f"checkpoint-{sizes[0]:012d}.note").read_text()
        m = consistency(log, keys["trust"], ("copy.note", note), sizes[-1])
        assert verify_proof(m.proof, keys["trust"]).old_size == sizes[0]


def test_one_event_among_many_deflate_blocks(tmp_path, keys) -> None:
    """The block holding the event is found by skipping the others; every seq gives the event the file holds."""
    cluster = signed_archive(tmp_path, keys["log"], 3000, 3000, codec="deflate", block_bytes=2048)
    (path,) = cluster.glob("*.avro")
    records = list(iter_records(path))
    for seq in range(0, 3000, 7):
        e = event_at(path, 0, seq)
        assert e.record["event_id"] == records[seq]["event_id"] and e.chain_hash == records[seq]["hash"]
    with pytest.raises(CodecError, match="past the file's end"):
        event_at(path, 0, 3000)
    with read_log([tmp_path], keys["trust"], seq=2999) as log:
        assert verify_proof(inclusion(log, keys["trust"]).proof, keys["trust"]).seq == 2999


def _overwrite_node(cluster: Path, level: int, index: int) -> None:
    path = cluster / "merkle" / f"level-{level:02d}"
    data = bytearray(path.read_bytes())
    data[index * 32:(index + 1) * 32] = bytes(32)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["removed", "root", "below the roots"])
def test_without_a_usable_merkle_store_the_tree_is_rebuilt(tmp_path, keys, damage) -> None:
    """The store is derived data: missing or wrong, the proof is made from the verified events instead, and the
    archive is left as it was. A node below the checkpoints' roots (leaf 251, in seq 250's path) is found wrong
    only by the path it gives."""
    cluster = _archive(tmp_path, keys["log"], 500, 100)
    if damage == "removed":
        shutil.rmtree(cluster / "merkle")
    elif damage == "root":
        _overwrite_node(cluster, 8, 0)  # leaves 0..255: in the root at every size from 256
    else:
        _overwrite_node(cluster, 0, 251)
    before = digest(tmp_path)
    with read_log([tmp_path], keys["trust"], seq=250) as log:
        assert log.rebuilt == (damage != "below the roots")
        if damage == "below the roots":
            with pytest.raises(DamagedStore, match="level|inclusion proof"):
                inclusion(log, keys["trust"], at=300)
    made = prove([tmp_path], keys["trust"], seq=250, at=300)
    assert verify_proof(made.proof, keys["trust"]).size == 300
    made = prove([tmp_path], keys["trust"], old=100, new=500)
    assert verify_proof(made.proof, keys["trust"]).old_size == 100
    assert digest(tmp_path) == before


def test_an_archive_that_does_not_verify_gives_no_proof(tmp_path, keys) -> None:
    cluster = _archive(tmp_path, keys["log"], 300, 100)
    note = cluster / "checkpoint-000000000200.note"
    note.write_text(note.read_text().replace("\n200\n", "\n201\n"))
    with pytest.raises(ArchiveProblem, match="checkpoint-000000000200.note"):
        read_log([tmp_path], keys["trust"], seq=5)


def test_a_checkpoint_of_another_key_fails(tmp_path, keys) -> None:
    _archive(tmp_path, keys["log"], 10, 5)
    with read_log([tmp_path], keys["trust"], seq=3) as log:
        proof = inclusion(log, keys["trust"]).proof
    with pytest.raises(ProofFailed, match="no signature by a trusted key"):  # same name, another key: another ID
        verify_proof(proof, Trust((keys["other"].verifier,)))


# --- strict reading ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def good(tmp_path_factory, keys) -> dict:
    root = tmp_path_factory.mktemp("good")
    _archive(root, keys["log"], 40, 10)
    with read_log([root], keys["trust"], seq=17) as log:
        inc = json.loads(inclusion(log, keys["trust"]).json)
        con = json.loads(consistency(log, keys["trust"], 10, 40).json)
    return {"inclusion": inc, "consistency": con}


def _set(doc: dict, path: str, value) -> dict:
    doc = json.loads(json.dumps(doc))
    *parents, last = path.split(".")
    node = doc
    for p in parents:
        node = node[p]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return doc


@pytest.mark.parametrize("kind, path, value, says", [
    ("inclusion", "version", 2, "version 2 of the proof format"),
    ("inclusion", "version", "1", "version: expected an integer"),
    ("inclusion", "version", True, "version: expected an integer"),
    ("inclusion", "format", "other", "not a ctrlaudit proof"),
    ("inclusion", "kind", "exclusion", "kind: expected"),
    ("inclusion", "index", -1, "index: expected an integer"),
    ("inclusion", "index", 2**63, "index: expected an integer"),
    ("inclusion", "index", 1.0, "index: expected an integer"),
    ("inclusion", "index", False, "index: expected an integer"),
    ("inclusion", "audit_path", "AAAA", "audit_path: expected a list"),
    ("inclusion", "audit_path", ["AAAA"], "audit_path[0]: a hash of 3 bytes"),
    ("inclusion", "audit_path", ["not base64!"], "audit_path[0]: not base64"),
    ("inclusion", "audit_path", ["A" * 43 + "="] * 129, "129 hashes, at most 128"),
    ("inclusion", "checkpoint", None, "checkpoint: expected a string"),
    ("inclusion", "checkpoint", "x" * 70000, "checkpoint: 70,000 characters"),
    ("inclusion", "event.hash", "AB" * 32, "event.hash: expected 64 lowercase hex"),
    ("inclusion", "event.prev_hash", "ab" * 31, "event.prev_hash: expected 64 lowercase hex"),
    ("inclusion", "event.schema", 7, "event.schema: expected a string"),
    ("inclusion", "event.body", "QQ", "event.body: not base64"),
    ("inclusion", "event.decoded", [], "event.decoded: expected an object"),
    ("inclusion", "event.extra", 1, "event: unknown field 'extra'"),
    ("inclusion", "event.body", KeyError, "event: missing body"),
    ("inclusion", "extra", {}, "proof: unknown field 'extra'"),
    ("consistency", "consistency_path", [1], "consistency_path[0]: expected a string"),
    ("consistency", "old_checkpoint", KeyError, "proof: missing old_checkpoint"),
])
def test_malformed_documents_are_named(good, kind, path, value, says) -> None:
    data = json.dumps(_set(good[kind], path, value)).encode()
    with pytest.raises(MalformedProof, match=says.replace("[", r"\[").replace("]", r"\]")):
        parse_proof(data)


@pytest.mark.parametrize("data, says", [
    (b"", "not JSON"), (b"{", "not JSON"), (b"[]", "not a ctrlaudit proof"), (b"\xff\xfe{}", "not UTF-8"),
    (b'{"format": "ctrlaudit-proof", "format": "ctrlaudit-proof"}', "appears twice"),
    (b'{"format": "ctrlaudit-proof", "version": NaN}', "NaN is not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    (b'{"format": "ctrlaudit-proof", "version": ' + b"9" * 5000 + b"}", "not JSON"),
])
def test_not_json_or_not_a_proof(data, says) -> None:
    with pytest.raises(MalformedProof, match=says):
        parse_proof(data)


def test_a_document_too_large_is_not_parsed() -> None:
    with pytest.raises(MalformedProof, match="larger than"):
        parse_proof(b" " * (32 * 2**20 + 1))


def test_the_written_document_is_what_is_read(good) -> None:
    for doc in good.values():
        proof = parse_proof(json.dumps(doc).encode())
        assert json.loads(to_json(proof)) == doc
