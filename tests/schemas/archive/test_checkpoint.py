"""C2SP tlog checkpoints: Go's tlog golden tree, the spec's example, a log's checkpoints proved against each other,
witnesses, and bad bodies."""
from __future__ import annotations

import base64

import pytest

from schemas.archive.checkpoint import Checkpoint, CheckpointError, open_checkpoint, sign_checkpoint
from schemas.archive.merkle import leaf_hash, leaf_hashes, verify_consistency, verify_inclusion
from schemas.archive.merkle_store import MemoryHashStore
from schemas.archive.note import NoteError, Signer, Verifier, cosign_note, generate_key
from tests.schemas.archive.test_note import SUMDB_TREE, SUMDB_VKEY

# golang.org/x/mod sumdb/tlog/note_test.go TestFormatTree: the tree of size 123456789012 whose hash is
# RecordHash("hello world"), i.e. the RFC 6962 leaf hash of those bytes
GO_TREE = "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n"
# C2SP tlog-checkpoint.md's example body
C2SP_BODY = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"


def test_go_tree_format_and_parse() -> None:
    cp = Checkpoint("go.sum database tree", 123456789012, leaf_hash(b"hello world"))
    assert cp.text == GO_TREE and Checkpoint.parse(GO_TREE) == cp


def test_c2sp_example() -> None:
    cp = Checkpoint.parse(C2SP_BODY)
    assert (cp.origin, cp.size, cp.extensions) == ("example.com/behind-the-sofa", 20852163, ())
    assert cp.root_hash == base64.b64decode("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=") and cp.text == C2SP_BODY


def test_sumdb_signed_tree() -> None:
    cp, note = open_checkpoint(SUMDB_TREE, Verifier.parse(SUMDB_VKEY), origin="go.sum database tree")
    assert cp.size == 6 and note.signatures[0].name == "localhost.localdev/sumdb"


def test_extension_lines_kept() -> None:
    text = C2SP_BODY + "ext one\next two\n"
    cp = Checkpoint.parse(text)
    assert cp.extensions == ("ext one", "ext two") and cp.text == text


def test_log_checkpoints_prove_the_record() -> None:
    """What the auditor does: trust the log's and the witnesses' keys, open two checkpoints, check an event is in
    the later one and that the later one extends the earlier."""
    origin = "ctrlaudit.example/cluster-a"
    log_skey, log_vkey = generate_key(origin)
    witness_keys = [generate_key(f"witness.example/w{i}") for i in range(3)]
    log, signer = Verifier.parse(log_vkey), Signer.parse(log_skey)
    witnesses = [Verifier.parse(v) for _, v in witness_keys]
    events = leaf_hashes(bytes([i]) * 32 for i in range(100))
    store = MemoryHashStore(events[:60])
    first = sign_checkpoint(Checkpoint(origin, store.size, store.root()), signer)
    store.extend(events[60:])
    second = sign_checkpoint(Checkpoint(origin, store.size, store.root()), signer)
    for skey, _ in witness_keys[:2]:
        second = cosign_note(second, Signer.parse(skey))

    old, _ = open_checkpoint(first, log)
    new, note = open_checkpoint(second, log, witnesses, min_witnesses=2)
    assert [s.name for s in note.signatures] == [origin, "witness.example/w0", "witness.example/w1"]
    verify_consistency(old.size, new.size, old.root_hash, new.root_hash, store.consistency_proof(old.size, new.size))
    verify_inclusion(events[77], 77, new.size, store.inclusion_proof(77, new.size), new.root_hash)

    with pytest.raises(CheckpointError, match="co-signed by 2 trusted witnesses, 3 required"):
        open_checkpoint(second, log, witnesses, min_witnesses=3)
    with pytest.raises(CheckpointError, match="origin is 'ctrlaudit.example/cluster-a', expected 'elsewhere'"):
        open_checkpoint(second, log, origin="elsewhere")
    # signed by a witness alone: not the log's checkpoint
    only_witness = sign_checkpoint(Checkpoint(origin, store.size, store.root()), Signer.parse(witness_keys[0][0]))
    with pytest.raises(CheckpointError, match="not signed by the log's key"):
        open_checkpoint(only_witness, log, witnesses)
    # a checkpoint edited after signing
    with pytest.raises(NoteError, match="does not verify"):
        open_checkpoint(second.replace("\n100\n", "\n101\n"), log)


@pytest.mark.parametrize("body,reason", [
    ("example.com/log\n5\n", "2 lines, expected origin, tree size and root hash"),
    ("example.com/log\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", "does not end with a newline"),
    ("\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "line 1 is empty"),
    ("example.com/log\n05\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "tree size '05' is not a decimal"),
    ("example.com/log\n-5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "tree size '-5'"),
    ("example.com/log\n0xabcdef\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "tree size '0xabcdef'"),
    ("example.com/log\n 5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "tree size ' 5'"),
    ("example.com/log\n\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "line 2 is empty"),
    ("example.com/log\n99999999999999999999\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "out of range"),
    ("example.com/log\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n", "root hash: not base64"),
    ("example.com/log\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2J=\n", "root hash: not canonical"),
    ("example.com/log\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jx\n", "root hash of 30 bytes"),
    # Go's TestParseTree bad trees that are bad for us too (its first one only has another origin)
    ("go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n", "root hash"),
    (C2SP_BODY + "\n", "line 4 is empty"),
    (C2SP_BODY + "ext\n\nmore\n", "line 5 is empty"),
])
def test_malformed_checkpoints(body: str, reason: str) -> None:
    with pytest.raises(CheckpointError, match=reason) as err:
        Checkpoint.parse(body)
    assert "\n" not in str(err.value)


def test_checkpoint_fields_checked() -> None:
    root = leaf_hash(b"")
    for kwargs in ({"origin": ""}, {"origin": "a\nb"}, {"size": -1}, {"root_hash": b"x"}, {"extensions": ("",)}):
        with pytest.raises(CheckpointError):
            Checkpoint(**{"origin": "o", "size": 1, "root_hash": root, **kwargs})  # type: ignore[arg-type]
