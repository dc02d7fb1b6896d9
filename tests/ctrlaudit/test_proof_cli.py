"""`ctrlaudit prove` and `ctrlaudit verify-proof` on the real CLI, in a subprocess: proofs that hold, and attacks on
them, each asserting the exit code, one line on stderr naming what failed, no traceback, and the files unchanged.

The world: a signed archive of cluster sim-1 (300 events, a checkpoint every 100), a fork of it (the same cluster
id and key, another history from seq 24 on), another cluster's archive (sim-2) signed by the same key, and a key
of the same name that nobody trusts.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from schemas.archive.checkpoint import Checkpoint
from schemas.archive.note import parse_note, sign_note
from tests.ctrlaudit.test_bad_inputs import ctrlaudit, digest
from tests.ctrlaudit.test_exit_codes import one_line
from tests.signed_archives import log_and_witness_keys, signed_archive


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("proofs")
    keys = log_and_witness_keys(root)
    (key, pub, log), (_, evil_pub, evil), (_, witness_pub, _) = keys.log, keys.evil, keys.witness
    a = signed_archive(root / "a", log, 300, 100)
    fork = signed_archive(root / "fork", log, 300, 100, topics=3)
    other = signed_archive(root / "other", log, 300, 100, seed=2)
    w = {"root": root, "key": key, "pub": pub, "log": log, "evil": evil, "evil_pub": evil_pub,
         "witness_pub": witness_pub, "a": a, "fork": fork, "other": other}
    done = ctrlaudit("prove", str(root / "a"), "--seq", "150", "--out", str(root / "inc.json"), "--trusted-key", str(pub))
    assert done.returncode == 0, done.stderr
    done = ctrlaudit("prove", str(root / "a"), "--from", "100", "--to", "300", "--out", str(root / "con.json"),
                     "--trusted-key", str(pub))
    assert done.returncode == 0, done.stderr
    w["inc"] = json.loads((root / "inc.json").read_text())
    w["con"] = json.loads((root / "con.json").read_text())
    return w


def test_prove_and_verify_an_event(world, tmp_path) -> None:
    out = tmp_path / "p.json"
    done = ctrlaudit("prove", str(world["a"]), "--seq", "42", "--out", str(out), "--trusted-key", str(world["pub"]))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    doc = json.loads(out.read_text())
    event_id = doc["event"]["decoded"]["event_id"]
    assert doc["index"] == 42 and len(doc["audit_path"]) == 9 and out.stat().st_size < 4096
    done = ctrlaudit("verify-proof", str(out), "--trusted-key", str(world["pub"]))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (line,) = done.stdout.splitlines()
    for said in (f"event {event_id} (seq 42)", "cluster sim-1", "tree of 300 events",
                 f"signed by {world['log'].name}+{world['log'].key_id:08x}"):
        assert said in line, line
    # by its event id, against an older checkpoint: the same event
    by_id = tmp_path / "q.json"
    done = ctrlaudit("prove", str(world["root"] / "a"), "--event", event_id, "--at", "100", "--out", str(by_id),
                     "--trusted-key", str(world["pub"]), "--json", "-")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tree_size"] == 100
    assert json.loads(by_id.read_text())["event"]["body"] == doc["event"]["body"]


def test_prove_and_verify_an_extension(world) -> None:
    done = ctrlaudit("verify-proof", str(world["root"] / "con.json"), "--trusted-key", str(world["pub"]),
                     "--json", "-")
    assert done.returncode == 0, done.stderr
    assert {k: json.loads(done.stdout)[k] for k in ("kind", "old_tree_size", "tree_size", "holds")} == \
        {"kind": "consistency", "old_tree_size": 100, "tree_size": 300, "holds": True}


def _mutate(doc: dict, path: str, value) -> dict:
    doc = json.loads(json.dumps(doc))
    *parents, last = path.split(".")
    node = doc
    for p in parents:
        node = node[p]
    node[last] = value(node[last]) if callable(value) else value
    return doc


def _flip_b64(text: str, at: int = 5) -> str:
    raw = bytearray(base64.b64decode(text))
    raw[at] ^= 1
    return base64.b64encode(bytes(raw)).decode()


def _resign(world, note: str, signer_name: str = "log", **change) -> str:
    text, _ = parse_note(note)
    cp = Checkpoint.parse(text)
    cp = Checkpoint(change.get("origin", cp.origin), cp.size, change.get("root", cp.root_hash))
    return sign_note(cp.text, world[signer_name])


def _checkpoint_of(cluster: Path, size: int) -> str:
    return (cluster / f"checkpoint-{size:012d}.note").read_text()


def _corrupt_signature(note: str) -> str:
    text, sigs = parse_note(note)
    line = sigs[0].line.rstrip("\n")
    name, sig = line.rsplit(" ", 1)
    return text + "\n" + name + " " + _flip_b64(sig, 10) + "\n"


# (name, what the proof file becomes, exit code, what the line says)
ATTACKS: list[tuple[str, Callable[[dict], bytes], int, str]] = [
    ("truncated JSON", lambda w: json.dumps(w["inc"]).encode()[:700], 2, "not JSON"),
    ("an index of the wrong type", lambda w: json.dumps(_mutate(w["inc"], "index", "150")).encode(), 2,
     "index: expected an integer"),
    ("a hash of the wrong length", lambda w: json.dumps(_mutate(w["inc"], "audit_path", lambda p: [p[0][:-4], *p[1:]]))
     .encode(), 2, "audit_path[0]: a hash of 30 bytes"),
    ("another version", lambda w: json.dumps(_mutate(w["inc"], "version", 2)).encode(), 2,
     "version 2 of the proof format"),
    ("a field too many", lambda w: json.dumps({**w["inc"], "note": "trust me"}).encode(), 2, "unknown field 'note'"),
    ("a checkpoint of another tree", lambda w: json.dumps(_mutate(w["inc"], "checkpoint", _checkpoint_of(
        w["fork"], 300))).encode(), 1, "is not the tree's"),
    ("an altered event body", lambda w: json.dumps(_mutate(w["inc"], "event.body", _flip_b64)).encode(), 1,
     "the event was altered"),
    ("an altered body with its hash made again", lambda w: json.dumps(_rehash(w["inc"])).encode(), 1,
     "not in the tree the checkpoint signs"),
    ("an altered decoded copy", lambda w: json.dumps(_mutate(w["inc"], "event.decoded.controller_id", 7)).encode(), 1,
     "event.decoded: not the event's body (controller_id differs)"),
    ("the event at another index", lambda w: json.dumps(_mutate(w["inc"], "index", 151)).encode(), 1,
     "inclusion proof of leaf 151"),
    ("a signature by another key of the same name", lambda w: json.dumps(_mutate(
        w["inc"], "checkpoint", lambda n: _resign(w, n, "evil"))).encode(), 1, "no signature by a trusted key"),
    ("a corrupted signature", lambda w: json.dumps(_mutate(w["inc"], "checkpoint", _corrupt_signature)).encode(), 1,
     "does not verify"),
    ("a checkpoint of another cluster", lambda w: json.dumps(_mutate(w["inc"], "checkpoint", _checkpoint_of(
        w["other"], 300))).encode(), 1, "is not the tree's"),
    ("this tree signed as another cluster's", lambda w: json.dumps(_mutate(
        w["inc"], "checkpoint", lambda n: _resign(w, n, origin="ctrlaudit/sim-2"))).encode(), 1,
     "a checkpoint of another cluster"),
    ("an extension from another tree", lambda w: json.dumps(_mutate(w["con"], "old_checkpoint", _checkpoint_of(
        w["fork"], 100))).encode(), 1, "the newer checkpoint does not extend the older one"),
    ("an extension backwards", lambda w: json.dumps({**w["con"], "old_checkpoint": w["con"]["new_checkpoint"],
                                                     "new_checkpoint": w["con"]["old_checkpoint"]}).encode(), 1,
     "the sizes must not decrease"),
]


def _rehash(doc: dict) -> dict:
    """The body altered and every hash of the event made again to match: the chain hash holds, the tree does not."""
    body = bytearray(base64.b64decode(doc["event"]["body"]))
    body[-3] ^= 1
    digest_ = hashlib.sha256(doc["event"]["prev_hash"].encode() + bytes(body)).hexdigest()
    doc = _mutate(doc, "event.body", base64.b64encode(bytes(body)).decode())
    return _mutate(_mutate(doc, "event.hash", digest_), "event.decoded.hash", digest_)


@pytest.mark.parametrize("name, make, code, says", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attacks_on_a_proof(world, tmp_path, name, make, code, says) -> None:
    proof = tmp_path / "proof.json"
    proof.write_bytes(make(world))
    before = digest(tmp_path, world["a"])
    done = ctrlaudit("verify-proof", str(proof), "--trusted-key", str(world["pub"]))
    one_line(done, code, says, str(proof))
    assert done.stdout == ""
    assert digest(tmp_path, world["a"]) == before


def test_a_huge_proof_file_is_not_read(world, tmp_path) -> None:
    proof = tmp_path / "huge.json"
    with open(proof, "wb") as fo:
        fo.truncate(33 * 2**20)
    one_line(ctrlaudit("verify-proof", str(proof), "--trusted-key", str(world["pub"])), 2, "larger than")


def test_a_witness_required_but_absent(world) -> None:
    done = ctrlaudit("verify-proof", str(world["root"] / "inc.json"), "--trusted-key", str(world["pub"]),
                     "--witness-key", str(world["witness_pub"]))
    one_line(done, 1, "not co-signed by the witness key witness.example/w+")


@pytest.mark.parametrize("args, code, says", [
    (["verify-proof", "{root}/inc.json"], 2, "needs --trusted-key"),
    (["verify-proof", "{root}/missing.json", "--trusted-key", "{pub}"], 2, "missing.json: cannot be read"),
    (["verify-proof", "{root}", "--trusted-key", "{pub}"], 2, "cannot be read"),
    (["prove", "{root}/a", "--seq", "5", "--out", "{tmp}/p.json"], 2, "needs --trusted-key"),
    (["prove", "{root}/a", "--seq", "300", "--out", "{tmp}/p.json", "--trusted-key", "{pub}"], 2,
     "seq 300: not in the archive of cluster sim-1"),
    (["prove", "{root}/a", "--event", "nope", "--out", "{tmp}/p.json", "--trusted-key", "{pub}"], 2, "event nope"),
    (["prove", "{root}/a", "--seq", "5", "--at", "150", "--out", "{tmp}/p.json", "--trusted-key", "{pub}"], 2,
     "no checkpoint of 150 events is stored"),
    (["prove", "{root}/a", "--seq", "5", "--from", "100", "--to", "200", "--out", "{tmp}/p.json", "--trusted-key",
      "{pub}"], 2, "give one of --seq"),
    (["prove", "{root}/a", "--seq", "5", "--out", "{root}/inc.json", "--trusted-key", "{pub}"], 2,
     "exists; give --force"),
    (["prove", "{root}/a", "--seq", "5", "--out", "{root}/a/sim-1/p.json", "--trusted-key", "{pub}"], 2,
     "an input of this command"),
    (["prove", "{root}/a", "--seq", "5", "--out", "{tmp}/p.json", "--trusted-key", "{evil_pub}"], 1,
     "no signature by a trusted key"),
    (["prove", "{root}/a", "--from", "{root}/fork/sim-1/checkpoint-000000000200.note", "--to", "300", "--out",
      "{tmp}/p.json", "--trusted-key", "{pub}"], 1, "a split view"),
    (["prove", "{root}/a", "--from", "{root}/other/sim-2/checkpoint-000000000100.note", "--to", "300", "--out",
      "{tmp}/p.json", "--trusted-key", "{pub}"], 2, "cluster 'sim-2': not in the archive"),
    (["prove", "{root}/a", "--seq", "5", "--out", "{tmp}/p.json", "--trusted-key", "{pub}", "--witness-key",
      "{witness_pub}"], 1, "no checkpoint co-signed by the witness key"),
])
def test_prove_refuses(world, tmp_path, args, code, says) -> None:
    subs = {"root": world["root"], "pub": world["pub"], "evil_pub": world["evil_pub"],
            "witness_pub": world["witness_pub"], "tmp": tmp_path}
    before = digest(world["root"])
    one_line(ctrlaudit(*[a.format(**subs) for a in args]), code, says)
    assert digest(world["root"]) == before
    assert not (tmp_path / "p.json").exists()


def test_no_proof_from_an_archive_rewritten_after_signing(world, tmp_path) -> None:
    """Someone able to write the archive re-chains an edited history and its merkle store: the signed checkpoint
    no longer matches the events, and prove names it instead of writing a proof."""
    forged = tmp_path / "forged"
    shutil.copytree(world["fork"].parent, forged)
    for note in (world["a"]).glob("checkpoint-*.note"):  # the genuine checkpoints over the fork's events
        shutil.copy(note, forged / "sim-1" / note.name)
    done = ctrlaudit("prove", str(forged), "--seq", "10", "--out", str(tmp_path / "p.json"), "--trusted-key",
                     str(world["pub"]))
    one_line(done, 1, "checkpoint-000000000100.note", "do not hash to the root this checkpoint signs")
    assert not (tmp_path / "p.json").exists()


def test_a_fifo_given_as_the_proof_is_refused_at_once(world, tmp_path) -> None:
    """A FIFO no one writes to: refused by its shape in one line, not waited on (the read used to block for ever)."""
    os.mkfifo(tmp_path / "proof.json")
    one_line(ctrlaudit("verify-proof", str(tmp_path / "proof.json"), "--trusted-key", str(world["pub"]), timeout=60),
             2, "proof.json", "not a regular file")
