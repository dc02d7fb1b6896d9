"""Our proofs checked by other people's code: tests/ctrlaudit/goverify, a Go program on transparency-dev/merkle's
proof.VerifyInclusion/VerifyConsistency (RFC 6962 hasher), golang.org/x/mod/sumdb/note and transparency-dev/formats'
log.ParseCheckpoint, with go.sum pinning them. It must accept every proof ctrlaudit makes, at tree sizes 1, 2, 7 and
1000, and refuse the attacked ones ctrlaudit refuses (the decoded copy, which it does not read, apart)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from schemas.archive.note import cosign_note
from schemas.archive.proofs import MalformedProof, ProofFailed, parse_proof, verify_proof
from schemas.archive.prover import consistency, inclusion, read_log, stored_sizes
from schemas.archive.signatures import Trust
from tests.ctrlaudit.test_proof_cli import _corrupt_signature, _flip_b64, _mutate, _rehash, _resign
from tests.signed_archives import log_and_witness_keys, signed_archive

HERE = Path(__file__).with_name("goverify")


def _go() -> str | None:
    return shutil.which("go") or next((g for g in ("/usr/local/go/bin/go",) if os.access(g, os.X_OK)), None)


@pytest.fixture(scope="module")
def goverify(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = _go()
    if go is None:
        pytest.skip("no Go toolchain (go) on this machine: the independent verifier cannot be built")
    out = tmp_path_factory.mktemp("go") / "goverify"
    # -mod=readonly: the build takes go.mod and go.sum as committed, or fails; GOTOOLCHAIN=local: no download of
    # another Go release
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    done = subprocess.run([go, "build", "-o", str(out), "."], cwd=HERE, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("goproofs")
    keys = log_and_witness_keys(root)
    log, evil, witness = keys.log[2], keys.evil[2], keys.witness[2]
    return {"root": root, "log": log, "evil": evil, "witness": witness, "trust": Trust((log.verifier,))}


def _check(goverify: Path, world: dict, proof: str, *witnesses: str) -> subprocess.CompletedProcess:
    path = world["root"] / "proof.json"
    path.write_text(proof)
    args = [str(goverify), "-key", world["log"].verifier.text]
    for w in witnesses:
        args += ["-witness", w]
    return subprocess.run([*args, str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("events, per_file, seqs", [
    (1, 1, None), (2, 1, None), (7, 1, None), (1000, 97, [0, 1, 96, 97, 255, 256, 500, 998, 999]),
])
def test_go_accepts_every_proof_we_make(goverify, world, tmp_path, events, per_file, seqs) -> None:
    signed_archive(tmp_path, world["log"], events, per_file)
    trust = world["trust"]
    proofs = []
    for seq in seqs if seqs is not None else range(events):
        with read_log([tmp_path], trust, seq=seq) as log:
            for size in [s for s in stored_sizes(log) if s > seq]:
                made = inclusion(log, trust, at=size)
                proofs.append((made.json, f"OK inclusion cluster=sim-1 seq={seq} event={made.proven.event_id} "
                                          f"size={size}"))
    with read_log([tmp_path], trust) as log:
        sizes = stored_sizes(log)
        for a in sizes:
            for b in (s for s in sizes if s >= a):
                made = consistency(log, trust, a, b)
                proofs.append((made.json, f"OK consistency origin=ctrlaudit/sim-1 size1={a} size2={b}"))
    covering = sum(s > seq for seq in (seqs if seqs is not None else range(events)) for s in sizes)
    assert len(proofs) == covering + len(sizes) * (len(sizes) + 1) // 2
    for proof, said in proofs:
        done = _check(goverify, world, proof)
        assert (done.returncode, done.stdout.strip()) == (0, said), done.stdout + done.stderr


def test_go_requires_the_witness_as_we_do(goverify, world, tmp_path) -> None:
    cluster = signed_archive(tmp_path, world["log"], 20, 10)
    note = cluster / "checkpoint-000000000020.note"
    note.write_text(cosign_note(note.read_text(), world["witness"]))
    witnessed = Trust((world["log"].verifier,), (world["witness"].verifier,))
    with read_log([tmp_path], witnessed, seq=3) as log:
        ok = inclusion(log, witnessed).json
        old = inclusion(log, world["trust"], at=10).json  # a checkpoint the witness never co-signed
    w = world["witness"].verifier.text
    assert _check(goverify, world, ok, w).returncode == 0
    done = _check(goverify, world, old, w)
    assert done.returncode == 1 and "not co-signed by witness" in done.stdout
    with pytest.raises(ProofFailed):
        verify_proof(parse_proof(old.encode()), witnessed)


def test_go_refuses_the_attacks_we_refuse(goverify, world, tmp_path) -> None:
    signed_archive(tmp_path / "a", world["log"], 300, 100)
    fork = signed_archive(tmp_path / "fork", world["log"], 300, 100, topics=3)
    other = signed_archive(tmp_path / "other", world["log"], 300, 100, seed=2)
    with read_log([tmp_path / "a"], world["trust"], seq=150) as log:
        inc = json.loads(inclusion(log, world["trust"]).json)
    with read_log([tmp_path / "a"], world["trust"]) as log:
        con = json.loads(consistency(log, world["trust"], 100, 300).json)
    attacks = {
        "altered body": _mutate(inc, "event.body", _flip_b64),
        "altered body, hashes made again": _rehash(inc),
        "another index": _mutate(inc, "index", 151),
        "a checkpoint of another tree": _mutate(inc, "checkpoint", (fork / "checkpoint-000000000300.note").read_text()),
        "a checkpoint of another cluster": _mutate(inc, "checkpoint",
                                                   (other / "checkpoint-000000000300.note").read_text()),
        "this tree signed as another cluster's": _mutate(inc, "checkpoint",
                                                         lambda n: _resign(world, n, origin="ctrlaudit/sim-2")),
        "another key of the same name": _mutate(inc, "checkpoint", lambda n: _resign(world, n, "evil")),
        "a corrupted signature": _mutate(inc, "checkpoint", _corrupt_signature),
        "an extension from another tree": _mutate(con, "old_checkpoint",
                                                  (fork / "checkpoint-000000000100.note").read_text()),
        "a field too many": {**inc, "note": "trust me"},
    }
    for name, doc in attacks.items():
        text = json.dumps(doc)
        done = _check(goverify, world, text)
        assert done.returncode == 1 and done.stdout.startswith("FAIL "), (name, done.stdout)
        with pytest.raises((ProofFailed, MalformedProof)):
            verify_proof(parse_proof(text.encode()), world["trust"])
