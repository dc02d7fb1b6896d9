"""An adversary who can write the archive, against an auditor who holds only the log's public key: every attack the
hash chain alone lets through (the history re-chained with fresh manifests) is refused by `verify --trusted-key`,
`load --trusted-key` and `check --trusted-key` with exit 1, one line naming the checkpoint, no traceback, and the
archive left as it was."""
from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctrlaudit.cli import app
from schemas.archive.signed import list_checkpoints, load_signer
from services.simulator import SimConfig, simulate_to_archive
from tests.schemas.archive import forgery

CL = "sim-41"
N, PER_FILE = 2500, 1000  # checkpoints at 1000, 2000, 2500


def run(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("keys")
    for name in ("log", "other", "witness"):
        done = run("keygen", f"{name}.test/ctrlaudit", "--out", d / f"{name}.key")
        assert done.exit_code == 0, done.output
        assert (d / f"{name}.key").stat().st_mode & 0o777 == 0o600
        assert (d / f"{name}.key.pub").read_text().strip() == done.output.strip()
    return {name: d / f"{name}.key" for name in ("log", "other", "witness")} | \
        {f"{name}.pub": d / f"{name}.key.pub" for name in ("log", "other", "witness")}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, keys: dict[str, Path]) -> Path:
    root = tmp_path_factory.mktemp("signed")
    simulate_to_archive(root / "a", SimConfig(seed=41, events=N, topics=3, partitions=3, cluster_id=CL),
                        max_events_per_file=PER_FILE, fsync=False, signers=[load_signer(keys["log"])])
    simulate_to_archive(root / "other", SimConfig(seed=42, events=N, cluster_id="sim-42"),
                        max_events_per_file=PER_FILE, fsync=False, signers=[load_signer(keys["log"])])
    return root


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def rechained(pristine: Path, tmp: Path, change: Callable[[list], list]) -> Path:
    return forgery.rechained(pristine / "a" / CL, tmp / "forged", change, PER_FILE)


edited = forgery.edited(1500)


def refused(args: list, archive: Path, says: str, code: int = 1) -> None:
    before = digest(archive)
    done = run(*args)
    assert done.exit_code == code, done.output
    assert "Traceback" not in done.output
    assert says in done.output, done.output
    assert digest(archive) == before


def test_the_signed_archive_verifies_with_its_key_and_says_so(pristine: Path, keys: dict[str, Path]) -> None:
    done = run("verify", pristine / "a", "--trusted-key", keys["log.pub"])
    assert done.exit_code == 0, done.output
    assert "signed by log.test/ctrlaudit+" in done.output
    assert "3 checkpoint(s) verified, seq 0..2499 signed" in done.output
    assert "accidents only" not in done.output


def test_without_a_key_verify_says_it_checked_against_accidents_only(pristine: Path) -> None:
    done = run("verify", pristine / "a")
    assert done.exit_code == 0
    assert done.output.count("integrity checked against accidents only") == 1


def test_an_edited_event_rechained_passes_the_chain_but_not_the_signature(pristine: Path, tmp_path: Path,
                                                                         keys: dict[str, Path]) -> None:
    forged = rechained(pristine, tmp_path, edited)
    assert run("verify", forged).exit_code == 0  # the threat: the chain and manifests alone cannot tell
    refused(["verify", forged, "--trusted-key", keys["log.pub"]], forged,
            "checkpoint-000000002000.note: signature: the archive's events do not hash to the root this checkpoint "
            "signs for 2,000 events: events between seq 1000 and 1999 were changed")


def test_a_truncated_tail_with_rewritten_manifests_is_refused(pristine: Path, tmp_path: Path,
                                                             keys: dict[str, Path]) -> None:
    forged = rechained(pristine, tmp_path, lambda evs: evs[:2200])
    refused(["verify", forged, "--trusted-key", keys["log.pub"]], forged,
            "signs 2,500 events but the archive holds 2,200: events seq 2200..2499 were removed after they were signed")


def test_a_middle_file_dropped_and_the_rest_rechained_is_refused(pristine: Path, tmp_path: Path,
                                                                keys: dict[str, Path]) -> None:
    forged = rechained(pristine, tmp_path, lambda evs: evs[:1000] + evs[2000:])
    refused(["verify", forged, "--trusted-key", keys["log.pub"]], forged, "checkpoint-000000002000.note")


def test_a_fork_is_refused(pristine: Path, tmp_path: Path, keys: dict[str, Path]) -> None:
    forged = rechained(pristine, tmp_path, edited)
    both = tmp_path / "both"
    shutil.copytree(pristine / "a", both)
    last = sorted((forged / CL).glob("*.avro"))[1]  # the forged history's second file beside the real one
    shutil.copy(last, both / CL / ("x" + last.name))
    shutil.copy(last.with_name(last.name + ".manifest.json"), both / CL / ("x" + last.name + ".manifest.json"))
    refused(["verify", both, "--trusted-key", keys["log.pub"]], both, "fork")


def test_an_archive_cut_back_to_an_old_checkpoint_fails_against_a_newer_one_held(
        pristine: Path, tmp_path: Path, keys: dict[str, Path]) -> None:
    forged = rechained(pristine, tmp_path, lambda evs: evs[:PER_FILE])
    for size, path in list_checkpoints(forged / CL):
        if size > PER_FILE:
            path.unlink()
    # on its own it is a whole, signed, shorter history: the reason to hold a newer checkpoint (or a witness)
    assert run("verify", forged, "--trusted-key", keys["log.pub"]).exit_code == 0
    held = tmp_path / "held.note"
    shutil.copy(pristine / "a" / CL / "checkpoint-000000002500.note", held)
    refused(["verify", forged, "--trusted-key", keys["log.pub"], "--checkpoint", held], forged,
            "signs 2,500 events but the archive holds 1,000")


def test_an_old_checkpoint_put_in_a_newer_ones_place_is_refused(pristine: Path, tmp_path: Path,
                                                               keys: dict[str, Path]) -> None:
    a = tmp_path / "a"
    shutil.copytree(pristine / "a", a)
    shutil.copy(a / CL / "checkpoint-000000001000.note", a / CL / "checkpoint-000000002500.note")
    refused(["verify", a, "--trusted-key", keys["log.pub"]], a, "its name says 2,500 events but it signs 1,000")


def test_a_signature_from_another_key_is_refused(pristine: Path, keys: dict[str, Path]) -> None:
    refused(["verify", pristine / "a", "--trusted-key", keys["other.pub"]], pristine / "a",
            "no signature by a trusted key (signed by log.test/ctrlaudit+")


def test_a_checkpoint_of_another_cluster_is_refused(pristine: Path, tmp_path: Path, keys: dict[str, Path]) -> None:
    a = tmp_path / "a"
    shutil.copytree(pristine / "a", a)
    shutil.copy(pristine / "other" / "sim-42" / "checkpoint-000000002500.note", a / CL / "checkpoint-000000002500.note")
    refused(["verify", a, "--trusted-key", keys["log.pub"]], a, "a checkpoint of 'ctrlaudit/sim-42'")


@pytest.mark.parametrize("damage, says", [
    (lambda t: t[:-10] + ("A" if t[-10] != "A" else "B") + t[-9:], "does not verify"),
    (lambda t: t.replace("\n\n", "\n"), "malformed"),
    (lambda t: "garbage\n", "malformed"),
    (lambda t: "x" * 70_000, "larger than"),
])
def test_a_damaged_checkpoint_is_one_line(pristine: Path, tmp_path: Path, keys: dict[str, Path],
                                          damage: Callable[[str], str], says: str) -> None:
    a = tmp_path / "a"
    shutil.copytree(pristine / "a", a)
    p = a / CL / "checkpoint-000000002000.note"
    p.write_text(damage(p.read_text()))
    refused(["verify", a, "--trusted-key", keys["log.pub"]], a, says)


def test_a_witness_key_is_required_when_given(pristine: Path, keys: dict[str, Path]) -> None:
    refused(["verify", pristine / "a", "--trusted-key", keys["log.pub"], "--witness-key", keys["witness.pub"]],
            pristine / "a", "no checkpoint co-signed by the witness key(s) witness.test/ctrlaudit+")


def test_load_and_check_refuse_what_verify_refuses(pristine: Path, tmp_path: Path, keys: dict[str, Path]) -> None:
    forged = rechained(pristine, tmp_path, edited)
    store = tmp_path / "s.duckdb"
    refused(["load", forged, "--store", store, "--trusted-key", keys["log.pub"]], forged, "checkpoint-000000002000.note")
    assert not store.exists()  # a refused first load leaves no store behind
    refused(["check", forged, "--trusted-key", keys["log.pub"]], forged, "checkpoint-000000002000.note")
    done = run("load", pristine / "a", "--store", store, "--trusted-key", keys["log.pub"])
    assert done.exit_code == 0, done.output
    assert f"cluster {CL}: signed by log.test/ctrlaudit+" in done.output
    done = run("check", pristine / "a", "--trusted-key", keys["log.pub"])
    assert done.exit_code in (0, 1) and "signature" not in done.output, done.output
    refused(["check", store, "--trusted-key", keys["log.pub"]], store, "a store holds none", code=2)


def test_bad_keys_are_one_line(pristine: Path, tmp_path: Path, keys: dict[str, Path]) -> None:
    refused(["verify", pristine / "a", "--trusted-key", keys["log"]], pristine / "a", "a private signing key", code=2)
    refused(["verify", pristine / "a", "--trusted-key", "nonsense"], pristine / "a", "neither a public key", code=2)
    refused(["verify", pristine / "a", "--trusted-key", keys["log.pub"], "--witness-key", keys["log.pub"]],
            pristine / "a", "is also a --trusted-key", code=2)
    loose = tmp_path / "loose.key"
    shutil.copy(keys["log"], loose)
    loose.chmod(0o644)
    out = tmp_path / "out"
    done = run("simulate", "--out", out, "--events", "100", "--signing-key", loose)
    assert done.exit_code == 2 and "readable by others" in done.output and not out.exists()
    done = run("keygen", "again", "--out", keys["log"])
    assert done.exit_code == 2 and "never overwritten" in done.output


def test_an_import_signs_and_a_repeated_import_signs_nothing_new(tmp_path: Path, keys: dict[str, Path]) -> None:
    sim = tmp_path / "sim"
    done = run("simulate", "--out", sim, "--events", "800", "--seed", "4", "--signing-key", keys["log"])
    assert done.exit_code == 0 and "signed by log.test/ctrlaudit: checkpoint of 800 events" in done.output
    done = run("verify", sim, "--trusted-key", keys["log.pub"])
    assert done.exit_code == 0 and "seq 0..799 signed" in done.output
