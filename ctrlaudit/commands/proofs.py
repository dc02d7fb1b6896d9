"""`ctrlaudit prove` and `ctrlaudit verify-proof`: proofs of one event, or of one checkpoint extending another, that
an auditor checks with a public key alone (schemas.archive.proofs, schemas.archive.prover)."""
from __future__ import annotations

import re
from pathlib import Path

import typer

from ctrlaudit.commands.keys import trust_of
from ctrlaudit.commands.options import TRUSTED_KEY, WITNESS_KEY, given_cluster_id
from ctrlaudit.commands.output import FORCE, JSON_OUT, Output, is_stdout, refuse_outputs, write_text
from ctrlaudit.errors import EXIT_FOUND, UsageError, fail, user_errors
from schemas.archive.proofs import ProofFailed, read_proof, verify_proof
from schemas.archive.prover import note_cluster, read_note_file
from schemas.archive.prover import prove as prove_from
from schemas.archive.signatures import Trust

_SIZE = re.compile(r"[0-9]{1,19}")


def _trust(trusted_key: list[str], witness_key: list[str], command: str) -> Trust:
    trust = trust_of(trusted_key, witness_key)
    if trust is None:
        raise UsageError(f"{command} needs --trusted-key: a checkpoint counts only with the signature of a log key "
                         f"you trust")
    return trust


def _checkpoint_arg(value: str, option: str) -> int | tuple[str, str]:
    """--from/--to: a stored checkpoint's tree size, or a checkpoint note file."""
    if _SIZE.fullmatch(value) and not Path(value).exists():
        return int(value)
    if not Path(value).is_file():
        raise UsageError(f"{option} {value[:80]}: neither a tree size nor a checkpoint note file")
    return value, read_note_file(value)


def register(app: typer.Typer) -> None:
    @app.command("prove")
    @user_errors
    def prove(
        archive: Path = typer.Argument(..., help="Archive root or one cluster's directory."),
        seq: int | None = typer.Option(None, "--seq", min=0, help="Prove the event at this seq."),
        event: str | None = typer.Option(None, "--event", help="Prove the event with this event id."),
        at: int | None = typer.Option(None, "--at", min=1,
                                      help="Against the stored checkpoint of this tree size (default: the newest "
                                           "that covers the event)."),
        from_: str | None = typer.Option(None, "--from",
                                         help="Consistency proof from this checkpoint: a stored checkpoint's tree "
                                              "size, or a checkpoint note file (a copy an auditor or witness holds)."),
        to: str | None = typer.Option(None, "--to", help="... to this one (as --from)."),
        cluster: str | None = typer.Option(None, "--cluster", help="Cluster id, when the archive holds several."),
        out: Path = typer.Option(..., "--out", help="The proof file to write ('-': standard output)."),
        trusted_key: list[str] = TRUSTED_KEY, witness_key: list[str] = WITNESS_KEY,
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Write a proof that one event is in the signed log (--seq or --event), or that one checkpoint extends
        another (--from and --to), checkable without the archive by `ctrlaudit verify-proof` (or any RFC 9162 and
        C2SP signed-note implementation).

        The archive is read verified first (chain, manifests, every checkpoint's root and signature by
        --trusted-key); with --witness-key, only checkpoints those witnesses co-signed are proven against.
        Exit 0: written; 1: the archive or a checkpoint does not verify; 2: bad input (no such event or
        checkpoint, the event not signed yet)."""
        one = (seq is not None) + (event is not None)
        if one + (from_ is not None or to is not None) != 1 or one > 1:
            raise UsageError("give one of --seq, --event (an inclusion proof) or --from with --to (a consistency "
                             "proof)")
        if (from_ is None) != (to is None):
            raise UsageError("a consistency proof needs both --from and --to")
        if at is not None and one == 0:
            raise UsageError("--at goes with --seq or --event")
        trust = _trust(trusted_key, witness_key, "prove")
        old = _checkpoint_arg(from_, "--from") if from_ is not None else None
        new = _checkpoint_arg(to, "--to") if to is not None else None
        notes = [c[0] for c in (old, new) if isinstance(c, tuple)]
        refuse_outputs({"--out": out, "--json": json_path}, force=force, inputs=[archive, *notes])
        cluster = given_cluster_id(cluster, "--cluster")
        if cluster is None:  # a note file names its log's cluster
            cluster = next((c for c in (note_cluster(n[1]) for n in (old, new) if isinstance(n, tuple)) if c), None)
        made = prove_from([archive], trust, cluster, seq=seq, event_id=event, at=at, old=old, new=new)
        write_text(out, made.json)
        said = Output(json_path, stdout_taken=is_stdout(out))
        said.say(f"{out}: {made.proven.kind} proof: {made.proven.line()}")
        said.json({"out": str(out), "kind": made.proven.kind, "cluster_id": made.proven.cluster_id,
                   "tree_size": made.proven.size, "old_tree_size": made.proven.old_size, "seq": made.proven.seq,
                   "event_id": made.proven.event_id, "keys": list(made.proven.keys),
                   "witnesses": list(made.proven.witnesses), "bytes": len(made.json.encode())})

    @app.command("verify-proof")
    @user_errors
    def verify_proof_command(
        proof: str = typer.Argument(..., help="A proof file made by `ctrlaudit prove` ('-': standard input)."),
        trusted_key: list[str] = TRUSTED_KEY, witness_key: list[str] = WITNESS_KEY,
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Check a proof made by `ctrlaudit prove` with nothing but public keys: the event's chain hash recomputed
        from its prev_hash and body, its leaf and audit path up to the root of the checkpoint, the checkpoint's
        signature by a --trusted-key (and co-signature by every --witness-key) and its origin, the cluster's log;
        or, for a consistency proof, both checkpoints and the path between them.

        Exit 0: the proof holds (one line says what it proves); 1: it does not (one line says what failed);
        2: not a proof (bad JSON, a wrong field or type, too large, another version)."""
        trust = _trust(trusted_key, witness_key, "verify-proof")
        refuse_outputs({"--json": json_path}, force=force, inputs=[] if proof == "-" else [proof])
        parsed = read_proof(proof)
        said = Output(json_path)
        try:
            proven = verify_proof(parsed, trust)
        except ProofFailed as exc:
            said.json({"proof": proof, "holds": False, "error": str(exc)})
            raise fail(f"{proof}: does not hold: {exc}", EXIT_FOUND) from None
        said.say(f"{proof}: OK: {proven.line()}")
        said.json({"proof": proof, "holds": True, "kind": proven.kind, "cluster_id": proven.cluster_id,
                   "tree_size": proven.size, "old_tree_size": proven.old_size, "seq": proven.seq,
                   "event_id": proven.event_id, "keys": list(proven.keys), "witnesses": list(proven.witnesses)})
