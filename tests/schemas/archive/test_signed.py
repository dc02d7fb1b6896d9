"""The archive writer signs its Merkle tree; the verified read checks the signatures (schemas/archive/signed.py,
signatures.py). Roots are compared with the RFC 9162 tree hash computed here from the events' hashes read back, not
with the writer's own tree."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from schemas.archive.checkpoint import Checkpoint, open_checkpoint
from schemas.archive.merkle import event_leaf_hashes, tree_hash
from schemas.archive.note import Signer, Verifier, generate_key, parse_note
from schemas.archive.signatures import Trust
from schemas.archive.signed import TREE_DIR, list_checkpoints, origin_of
from schemas.archive.verified import ArchiveProblem, VerifiedRead, read_all, verify
from schemas.archive.writer import ArchiveWriter
from services.simulator import SimConfig, Simulation, simulate_to_archive

CL = "sim-5"


def keypair(name: str = "log.test/ctrlaudit") -> tuple[Signer, Verifier]:
    skey, vkey = generate_key(name)
    return Signer.parse(skey), Verifier.parse(vkey)


LOG, LOG_PUB = keypair()


def events(n: int, seed: int = 5) -> list:
    return list(Simulation(SimConfig(seed=seed, events=n, topics=2, partitions=3, cluster_id=CL)).events())


def hashes(root: Path) -> list[str]:
    table, _ = read_all([root])
    return table.column("hash").to_pylist()


def test_every_finished_file_ends_in_a_checkpoint_of_the_tree_so_far(tmp_path: Path) -> None:
    simulate_to_archive(tmp_path, SimConfig(seed=5, events=2500, cluster_id=CL), max_events_per_file=1000,
                        fsync=False, signers=[LOG])
    found = list_checkpoints(tmp_path / CL)
    assert [size for size, _ in found] == [1000, 2000, 2500]
    leaves = event_leaf_hashes(hashes(tmp_path))
    for size, path in found:
        checkpoint, note = open_checkpoint(path.read_text(), LOG_PUB, origin=origin_of(CL))
        assert checkpoint.size == size
        assert checkpoint.root_hash == tree_hash(leaves[:size])  # the RFC's tree over the archive's events
        assert [s.name for s in note.signatures] == [LOG.name]


def test_a_signed_archive_verifies_and_says_how_far_it_is_signed(tmp_path: Path) -> None:
    simulate_to_archive(tmp_path, SimConfig(seed=5, events=2500, cluster_id=CL), max_events_per_file=1000,
                        fsync=False, signers=[LOG])
    read = verify([tmp_path], trust=Trust((LOG_PUB,)))
    status = read.signed[CL]
    assert (status.events, status.checkpoints, status.signed_to, status.unsigned) == (2500, 3, 2500, 0)
    assert status.keys == [f"{LOG.name}+{LOG.key_id:08x}"]


def test_an_unsigned_archive_still_verifies_without_keys_and_fails_with_them(tmp_path: Path) -> None:
    simulate_to_archive(tmp_path, SimConfig(seed=5, events=500, cluster_id=CL), fsync=False)
    assert verify([tmp_path]).chains[CL].events == 500
    with pytest.raises(ArchiveProblem, match="no checkpoint signed by a trusted key"):
        verify([tmp_path], trust=Trust((LOG_PUB,)))


def test_events_after_the_newest_checkpoint_are_an_unsigned_tail(tmp_path: Path) -> None:
    evs = events(1500)
    with ArchiveWriter(tmp_path, CL, max_events_per_file=1000, fsync=False, signers=[LOG]) as w:
        w.extend(evs[:1000])
    with ArchiveWriter.resume(tmp_path, CL, max_events_per_file=1000, fsync=False) as w:  # no key: not signed
        w.extend(evs[1000:])
    status = verify([tmp_path], trust=Trust((LOG_PUB,))).signed[CL]
    assert (status.signed_to, status.unsigned) == (1000, 500)
    assert status.first_unsigned_time_ms == evs[1000].event_time_ms


def test_a_resumed_writer_continues_the_tree_and_signs_an_old_archive_whole(tmp_path: Path) -> None:
    evs = events(1800)
    with ArchiveWriter(tmp_path, CL, max_events_per_file=700, fsync=False) as w:  # written before signing began
        w.extend(evs[:900])
    with ArchiveWriter.resume(tmp_path, CL, max_events_per_file=700, fsync=False, signers=[LOG]) as w:
        w.extend(evs[900:1200])
    shutil.rmtree(tmp_path / CL / TREE_DIR)  # the tree is derived data: lost, it is rebuilt from the events
    with ArchiveWriter.resume(tmp_path, CL, max_events_per_file=700, fsync=False, signers=[LOG]) as w:
        w.extend(evs[1200:])
    sizes = [size for size, _ in list_checkpoints(tmp_path / CL)]
    assert sizes[-1] == 1800 and 1200 in sizes
    leaves = event_leaf_hashes(hashes(tmp_path))
    for size, path in list_checkpoints(tmp_path / CL):
        assert Checkpoint.parse(parse_note(path.read_text())[0]).root_hash == tree_hash(leaves[:size])
    assert verify([tmp_path], trust=Trust((LOG_PUB,))).signed[CL].signed_to == 1800


def test_a_tree_that_is_not_the_archives_is_rebuilt_not_signed(tmp_path: Path) -> None:
    evs = events(600)
    with ArchiveWriter(tmp_path, CL, max_events_per_file=400, fsync=False, signers=[LOG]) as w:
        w.extend(evs[:500])
    level0 = tmp_path / CL / TREE_DIR / "level-00"
    data = bytearray(level0.read_bytes())
    data[-1] ^= 1  # the last leaf no longer the chain head's
    level0.write_bytes(bytes(data))
    with ArchiveWriter.resume(tmp_path, CL, max_events_per_file=400, fsync=False, signers=[LOG]) as w:
        w.extend(evs[500:])
    assert verify([tmp_path], trust=Trust((LOG_PUB,))).signed[CL].signed_to == 600


def test_resuming_with_nothing_new_signs_what_is_there(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path, CL, fsync=False) as w:
        w.extend(events(300))
    with ArchiveWriter.resume(tmp_path, CL, fsync=False, signers=[LOG]) as w:
        pass
    assert [s for s, _ in list_checkpoints(tmp_path / CL)] == [300]


def test_a_writer_that_fails_mid_file_signs_nothing_of_it(tmp_path: Path) -> None:
    evs = events(900)
    with pytest.raises(RuntimeError):
        with ArchiveWriter(tmp_path, CL, max_events_per_file=500, fsync=False, signers=[LOG]) as w:
            w.extend(evs[:700])
            raise RuntimeError("killed")
    assert [s for s, _ in list_checkpoints(tmp_path / CL)] == [500]  # the unfinished file's events: unsigned
    with ArchiveWriter.resume(tmp_path, CL, max_events_per_file=500, fsync=False, signers=[LOG]) as w:
        w.extend(evs[500:])
    assert verify([tmp_path], trust=Trust((LOG_PUB,))).signed[CL].signed_to == 900


def test_a_second_key_adds_its_signature_to_the_same_checkpoint(tmp_path: Path) -> None:
    new, new_pub = keypair("log.test/ctrlaudit-2027")
    with ArchiveWriter(tmp_path, CL, fsync=False, signers=[LOG]) as w:
        w.extend(events(200))
    with ArchiveWriter.resume(tmp_path, CL, fsync=False, signers=[new]) as w:  # rotation: the new key signs too
        pass
    (size, path), = list_checkpoints(tmp_path / CL)
    _, sigs = parse_note(path.read_text())
    assert [s.name for s in sigs] == [LOG.name, new.name]
    for key in (LOG_PUB, new_pub):  # old keys keep verifying old checkpoints
        assert verify([tmp_path], trust=Trust((key,))).signed[CL].signed_to == 200


def test_a_store_load_checks_signatures_in_its_one_read(tmp_path: Path) -> None:
    simulate_to_archive(tmp_path / "a", SimConfig(seed=5, events=1200, cluster_id=CL), max_events_per_file=500,
                        fsync=False, signers=[LOG])
    read = VerifiedRead([tmp_path / "a"], trust=Trust((LOG_PUB,)))
    tables = [t for _, t in read]
    assert sum(t.num_rows for t in tables) == 1200
    assert read.signed[CL].checkpoints == 3
