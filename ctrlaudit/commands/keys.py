"""`ctrlaudit keygen`, and how every command turns --signing-key / --trusted-key / --witness-key into keys."""
from __future__ import annotations

import os
from pathlib import Path

import typer

from ctrlaudit.commands.output import Output
from ctrlaudit.errors import UsageError, user_errors
from schemas.archive.note import NoteError, Signer, generate_key
from schemas import times
from schemas.archive.signatures import SignedStatus, Trust
from schemas.archive.signed import load_signer, load_verifiers


def signers_of(path: Path | None) -> list[Signer]:
    """The signing key of --signing-key (none: the archive is written unsigned)."""
    return [] if path is None else [load_signer(path)]


def trust_of(trusted: list[str], witnesses: list[str], held: list[Path] | None = None) -> Trust | None:
    """The keys of --trusted-key and --witness-key and the checkpoints of --checkpoint; None when no key is given
    (integrity against accidents only)."""
    if not trusted:
        if witnesses:
            raise UsageError("--witness-key needs --trusted-key: a witness co-signs the log's checkpoints")
        if held:
            raise UsageError("--checkpoint needs --trusted-key: a checkpoint counts only when signed by a trusted key")
        return None
    logs = tuple(k for t in trusted for k in load_verifiers(t))
    cosigners = tuple(k for w in witnesses for k in load_verifiers(w))
    same = {(k.name, k.key_id) for k in logs} & {(k.name, k.key_id) for k in cosigners}
    if same:
        name, kid = sorted(same)[0]
        raise UsageError(f"--witness-key {name}+{kid:08x} is also a --trusted-key: a witness must hold a key of its "
                         f"own, or its co-signature proves nothing the log's signature does not")
    return Trust(logs, cosigners, tuple(held or ()))


def accidents_only(trust: Trust | None) -> str | None:
    """What a read without trusted keys can and cannot say, once, for every command that reads archives."""
    if trust is not None:
        return None
    return ("integrity checked against accidents only (flipped bytes, lost or reordered files, forks): without "
            "--trusted-key an archive re-chained by someone able to write it would pass")


def signed_lines(status: SignedStatus) -> list[str]:
    """What the signatures established, as a person reads it: who signed up to where, and what is not signed."""
    lines = [f"signed by {', '.join(status.keys)}: {status.checkpoints} checkpoint(s) verified, seq 0.."
             f"{status.signed_to - 1} signed"]
    if status.unsigned:
        lines.append(f"{status.unsigned:,} events since {times.show(status.first_unsigned_time_ms)} not yet signed "
                     f"(seq {status.signed_to}..{status.events - 1}): the newest checkpoint does not cover them")
    if status.witnessed_to:
        lines.append(f"witnessed to seq {status.witnessed_to - 1}")
        if status.unwitnessed:
            lines.append(f"{status.unwitnessed:,} events since {times.show(status.first_unwitnessed_time_ms)} "
                         f"not yet witnessed (seq {status.witnessed_to}..{status.events - 1})")
    return lines


def _write_private(path: Path, text: str) -> None:
    """A new file only readable by its owner; never replaces an existing one (a key lost is a history unsignable)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise UsageError(f"{path}: already exists; a key file is never overwritten (move it away first)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot create the key file ({exc.strerror})") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fo:
        fo.write(text + "\n")
        fo.flush()
        os.fsync(fo.fileno())


def register(app: typer.Typer) -> None:
    @app.command("keygen")
    @user_errors
    def keygen(
        name: str = typer.Argument(..., help="The key's name, e.g. audit.example.com/prod-capture-2026 "
                                             "(it names the key in every signature)."),
        out: Path = typer.Option(..., "--out", help="Private key file to create (mode 0600; never overwritten)."),
    ) -> None:
        """Create an Ed25519 signing key: write the private key, print the public key to give to auditors.

        The public key (name+id+key) is also written beside it as <out>.pub."""
        try:
            skey, vkey = generate_key(name)
        except NoteError as exc:
            raise UsageError(f"key name {name!r}: {exc}") from None
        pub = out.with_name(out.name + ".pub")
        if pub.exists():
            raise UsageError(f"{pub}: already exists; a key file is never overwritten (move it away first)")
        _write_private(out, skey)
        pub.write_text(vkey + "\n", encoding="utf-8")
        assert Signer.parse(skey).verifier.text == vkey
        Output(None).say(vkey)
