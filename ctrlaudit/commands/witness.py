"""`ctrlaudit witness`: co-sign a log's checkpoints, each only once it is shown to extend the last one co-signed
(schemas.archive.witness), for a team other than the archive's writer to run on a schedule."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from ctrlaudit.commands.output import FORCE, JSON_OUT, Output, is_stdout, refuse_outputs, write_text
from ctrlaudit.errors import EXIT_FOUND, UsageError, fail, user_errors
from schemas.archive.checkpoint import Checkpoint
from schemas.archive.note import NoteError, Signer, cosign_note, parse_note
from schemas.archive.proofs import ConsistencyProof, read_proof
from schemas.archive.signed import (
    TREE_DIR,
    list_checkpoints,
    load_signer,
    load_verifiers,
    read_checkpoint_text,
)
from schemas.archive.witness import ProofSource, Refused, WitnessState, store_proof, witness, write_atomic


@dataclass(frozen=True)
class Target:
    """One thing to witness, read before anything is co-signed."""

    where: str
    note: str  # the checkpoint note to co-sign
    prove: ProofSource  # the consistency proof from the last size co-signed
    cluster_id: str | None = None  # the cluster it must be of (an archive directory's)
    old_note: str | None = None  # where a proof file's proof starts
    in_place: Path | None = None  # the note file the co-signature is added to (None: --out)


def _from_proof(proof: ConsistencyProof) -> ProofSource:
    def prove(size1: int, size2: int) -> list[bytes]:
        return list(proof.consistency_path)
    return prove


def _target(given: Path) -> Target:
    where = str(given)
    if given.is_dir():
        found = list_checkpoints(given)
        if not found:
            raise UsageError(f"{where}: no checkpoint-*.note here: not a signed archive's cluster directory")
        path = found[-1][1]
        return Target(str(path), read_checkpoint_text(path), store_proof(given / TREE_DIR), given.name,
                      in_place=path)
    if not given.is_file():
        raise UsageError(f"{where}: no such file or directory")
    with open(given, "rb") as fo:
        start = fo.read(64).lstrip()
    if start.startswith(b"{"):
        proof = read_proof(where)
        if not isinstance(proof, ConsistencyProof):
            raise UsageError(f"{where}: an inclusion proof; a witness takes a consistency proof (ctrlaudit prove "
                             f"ARCHIVE --from LAST --to NEW)")
        return Target(where, proof.new_checkpoint, _from_proof(proof), old_note=proof.old_checkpoint)
    text = read_checkpoint_text(given)
    return Target(where, text, store_proof(given.parent / TREE_DIR), in_place=given)


def _add_cosignature(path: Path, checkpoint: Checkpoint, signer: Signer) -> None:
    """The witness's signature added to the note file as it is now (other co-signatures may have come meanwhile),
    once it is checked to be the same checkpoint."""
    text = read_checkpoint_text(path)
    try:
        body, _ = parse_note(text)
        same = Checkpoint.parse(body) == checkpoint
    except NoteError:
        same = False
    if not same:
        raise UsageError(f"{path}: changed while it was witnessed; run the witness again")
    cosigned = cosign_note(text, signer)
    if cosigned != text:
        write_atomic(path, cosigned, 0o644)


def register(app: typer.Typer) -> None:
    @app.command("witness")
    @user_errors
    def witness_command(
        targets: list[Path] = typer.Argument(
            ..., help="What to witness, each one of: a signed archive's cluster directory (<archive>/<cluster id>: "
                      "its newest checkpoint, proven from its merkle/ tree; the co-signature is added to that "
                      "checkpoint file); a checkpoint note file (proven from the merkle/ beside it; co-signed in "
                      "place); a consistency proof file from `ctrlaudit prove ARCHIVE --from LAST --to NEW` (its "
                      "newer checkpoint, with its proof; needs --out)."),
        key: Path = typer.Option(..., "--key", help="The witness's private key file (ctrlaudit keygen), its own: "
                                                    "never the log's."),
        log_key: list[str] = typer.Option(..., "--log-key",
                                          help="The log's public key (name+id+key, or a file of them; repeatable): "
                                               "only checkpoints it signed are co-signed."),
        state: Path = typer.Option(..., "--state", envvar="CTRLAUDIT_WITNESS_STATE",
                                   help="The witness's state directory: per log, the last checkpoint co-signed "
                                        "(created if missing; env CTRLAUDIT_WITNESS_STATE). Keep it: without it "
                                        "the witness starts again from whatever it is shown next."),
        out: Path | None = typer.Option(None, "--out", help="Write the co-signed note here instead ('-': standard "
                                                            "output; one target only)."),
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Co-sign each target's checkpoint if it extends the last checkpoint this witness co-signed of the same
        log (a consistency proof from that one is checked first), record it as the last, and add the co-signature.

        Refused, with nothing written: a checkpoint the --log-key did not sign, one of another cluster than its
        archive directory's, two different checkpoints of one size (a split view), one that does not extend the
        last co-signed (a rewritten history), one older than it (a replay). The first checkpoint seen of a log is
        taken on the log's signature alone. Run it on a schedule, by a team that does not hold the log's key;
        readers then require its co-signature (verify --witness-key, verify-proof --witness-key).

        For example, every hour: ctrlaudit witness /archive/prod-1 --key witness.key --log-key prod.key.pub
        --state /var/lib/ctrlaudit-witness

        Exit 0: every target co-signed (or co-signed already); 1: one or more refused (a line each);
        2: bad input."""
        if out is not None and len(targets) != 1:
            raise UsageError("--out takes the co-signed note of one target; give one target")
        refuse_outputs({"--out": out, "--json": json_path}, force=force, inputs=[*targets, state])
        signer = load_signer(key)
        logs = [v for k in log_key for v in load_verifiers(k)]
        if any((v.name, v.key_id) == (signer.name, signer.key_id) for v in logs):
            raise UsageError(f"--key {key} is the log's key: a witness must hold a key of its own, or its "
                             f"co-signature proves nothing the log's signature does not")
        loaded = [_target(t) for t in targets]
        for t in loaded:
            if t.in_place is None and out is None:
                raise UsageError(f"{t.where}: a proof file has no checkpoint file to co-sign in place: give --out")
        said = Output(json_path, stdout_taken=is_stdout(out))
        done, refused = [], []
        with WitnessState(state, signer) as st:
            for t in loaded:
                try:
                    w = witness(st, logs, t.note, t.where, t.prove, t.cluster_id, t.old_note)
                except Refused as exc:
                    refused.append({"target": t.where, "error": str(exc)})
                    fail(str(exc), EXIT_FOUND)  # the line now; the exit once the other targets are done
                    continue
                if out is not None:
                    if is_stdout(out):
                        write_text(out, w.note)
                    else:
                        write_atomic(out, w.note)
                    written = out
                else:
                    assert t.in_place is not None
                    _add_cosignature(t.in_place, w.checkpoint, signer)
                    written = t.in_place
                said.say(f"{t.where}: {w.said()} -> {written}")
                done.append({"target": t.where, "cluster_id": w.cluster_id, "tree_size": w.checkpoint.size,
                             "previous_tree_size": w.previous.size if w.previous else None, "written": str(written)})
        said.json({"witnessed": done, "refused": refused})
        if refused:
            raise typer.Exit(EXIT_FOUND)
