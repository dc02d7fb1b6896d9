"""The archiver and capture's checkpoints, without Kafka: a checkpoint is stored once the archive's finished files reach
it and its root is the archive's; one that does not hold is refused with one line naming its record and size, and
the archive goes on; the commit of the checkpoints topic stays behind the ones still waiting; what is stored verifies
with the capture's key, and an edited, re-chained archive does not."""
from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from schemas.archive import ArchiveWriter, clusters, iter_events
from schemas.archive.chain import Chain
from schemas.archive.checkpoint import Checkpoint
from schemas.archive.merkle import event_leaf_hashes, tree_hash
from schemas.archive.note import Signer, generate_key, parse_note, sign_note
from schemas.archive.signatures import Trust
from schemas.archive.signed import list_checkpoints, origin_of
from schemas.archive.verified import ArchiveProblem, verify
from schemas.codec import encode
from services.capture.archiver import Archive, held_offsets
from services.capture.checkpoint_shelf import CheckpointShelf
from services.simulator import SimConfig, simulate

CL = "c1"
CAPTURE = Signer.parse(generate_key("capture.example/c1")[0])
ARCHIVER = Signer.parse(generate_key("archiver.example/c1")[0])
STRANGER = Signer.parse(generate_key("capture.example/c1")[0])
WHERE = "topic ctrlaudit.checkpoints partition 0 offset {}"


@pytest.fixture(scope="module")
def events():
    chain = Chain(CL)  # chained as capture chains them
    return [chain.append(e) for e in simulate(SimConfig(seed=3, events=300, cluster_id=CL, mean_gap_ms=5.0))]


def note(events, size: int, signer: Signer = CAPTURE, root: bytes | None = None, cluster: str = CL) -> bytes:
    """The note capture publishes for the first `size` events."""
    root = root if root is not None else tree_hash(event_leaf_hashes([e.hash for e in events[:size]]))
    return sign_note(Checkpoint(origin_of(cluster), size, root).text, signer).encode()


def stored(root: Path) -> dict[int, str]:
    return {size: p.read_text() for size, p in list_checkpoints(root / CL)}


def test_a_checkpoint_waits_for_the_archive_then_is_stored_when_its_root_is_the_archives(events, tmp_path, caplog):
    a = Archive(tmp_path, fsync=False)
    for e in events[:120]:
        a.add(encode(e))
    a.add_checkpoint(CL.encode(), note(events, 100), 0, 4, WHERE.format(4))
    a.add_checkpoint(CL.encode(), note(events, 250), 0, 5, WHERE.format(5))
    assert a.hold() == {0: 4}  # nothing stored before the files are finished
    a.checkpoint()
    assert list(stored(tmp_path)) == [100] and stored(tmp_path)[100] == note(events, 100).decode()
    assert a.hold() == {0: 5}  # 250 waits: the archive holds 120
    for e in events[120:]:
        a.add(encode(e))
    a.checkpoint()
    assert list(stored(tmp_path)) == [100, 250] and a.hold() == {} and a.shelf.stored == 2
    status = verify([tmp_path / CL], trust=Trust((CAPTURE.verifier,))).signed[CL]
    assert (status.signed_to, status.events, status.checkpoints) == (250, 300, 2)
    # read again after a restart (the offsets were held): stored once, the files unchanged
    before = stored(tmp_path)
    again = Archive(tmp_path, fsync=False)
    again.add_checkpoint(CL.encode(), note(events, 100), 0, 4, WHERE.format(4))
    again.checkpoint()
    assert stored(tmp_path) == before and "ERROR" not in caplog.text


def test_a_checkpoint_whose_root_is_not_the_archives_is_refused_in_one_line_and_the_archive_goes_on(
        events, tmp_path, caplog):
    a = Archive(tmp_path, fsync=False)
    for e in events[:50]:
        a.add(encode(e))
    wrong = note(events, 40, root=tree_hash(event_leaf_hashes([e.hash for e in events[1:41]])))
    with caplog.at_level(logging.ERROR):
        a.add_checkpoint(CL.encode(), wrong, 0, 9, WHERE.format(9))
        a.checkpoint()
    assert stored(tmp_path) == {} and a.hold() == {}  # refused: not held either
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert line.startswith("checkpoint at topic ctrlaudit.checkpoints partition 0 offset 9 (size 40) not stored: its "
                           "root ")
    for e in events[50:]:  # the archive goes on
        a.add(encode(e))
    a.add_checkpoint(CL.encode(), note(events, 300), 0, 10, WHERE.format(10))
    a.checkpoint()
    assert list(stored(tmp_path)) == [300] and a.shelf.refused == 1


@pytest.mark.parametrize("key, value, why", [
    (None, b"x", "no key"),
    (b"../etc", b"x", "the key is not a cluster id"),
    (CL.encode(), None, "no value"),
    (CL.encode(), b"\xff\xfe not a note", "not a signed checkpoint"),
    (CL.encode(), b"A" * 70_000, "a value of 70000 bytes is no checkpoint"),
    (CL.encode(), sign_note("ctrlaudit/c1\n5\nbm90IGEgaGFzaA==\n", CAPTURE).encode(), "not a signed checkpoint"),
])
def test_messages_that_are_not_checkpoints_are_refused(key, value, why, caplog):
    shelf = CheckpointShelf()
    with caplog.at_level(logging.ERROR):
        shelf.add(key, value, 0, 3, WHERE.format(3))
    assert shelf.waiting == {} and shelf.refused == 1
    assert f"checkpoint at {WHERE.format(3)} not stored: {why}" in caplog.text


def test_another_clusters_checkpoint_an_empty_one_and_an_untrusted_signer_are_refused(events, caplog):
    shelf = CheckpointShelf(trusted=[CAPTURE.verifier])
    shelf.add(CL.encode(), note(events, 10, cluster="c2"), 0, 1, WHERE.format(1))
    shelf.add(CL.encode(), note(events, 0), 0, 2, WHERE.format(2))
    shelf.add(CL.encode(), note(events, 10, signer=STRANGER), 0, 3, WHERE.format(3))
    shelf.add(CL.encode(), note(events, 10), 0, 4, WHERE.format(4))
    assert shelf.refused == 3 and [w.offset for w in shelf.waiting[CL]] == [4]
    assert "a checkpoint of 'ctrlaudit/c2' filed under cluster c1" in caplog.text
    assert "it signs no events" in caplog.text and "not signed by a trusted key" in caplog.text


def test_the_archivers_own_signature_and_captures_share_a_checkpoint_of_the_same_size(events, tmp_path):
    a = Archive(tmp_path, fsync=False, signers=[ARCHIVER])
    for e in events[:80]:
        a.add(encode(e))
    a.add_checkpoint(CL.encode(), note(events, 80), 0, 0, WHERE.format(0))
    a.add_checkpoint(CL.encode(), note(events, 30), 0, 1, WHERE.format(1))
    a.checkpoint()  # the archiver signs 80 at its file's end; capture's 80 joins it
    notes = stored(tmp_path)
    assert sorted(notes) == [30, 80]
    assert {s.name for s in parse_note(notes[80])[1]} == {CAPTURE.name, ARCHIVER.name}
    both = Trust((CAPTURE.verifier, ARCHIVER.verifier))
    assert verify([tmp_path / CL], trust=both).signed[CL].signed_to == 80
    # only capture's key trusted: the archiver's checkpoints of its own (at file ends) are not the capture's
    for e in events[80:]:
        a.add(encode(e))
    a.checkpoint()
    with pytest.raises(ArchiveProblem, match="no signature by a trusted key"):
        verify([tmp_path / CL], trust=Trust((CAPTURE.verifier,)))
    assert verify([tmp_path / CL], trust=both).signed[CL].signed_to == 300


def test_an_edited_and_rechained_archive_passes_the_chain_but_not_captures_checkpoints(events, tmp_path):
    a = Archive(tmp_path / "a", fsync=False)
    for e in events:
        a.add(encode(e))
    a.add_checkpoint(CL.encode(), note(events, 300), 0, 0, WHERE.format(0))
    a.checkpoint()
    trust = Trust((CAPTURE.verifier,))
    assert verify([tmp_path / "a" / CL], trust=trust).signed[CL].signed_to == 300
    # someone able to write the archive edits event 150's time and re-chains everything after it
    edited = [replace(e, event_time_ms=e.event_time_ms + 1, seq=0, prev_hash="", hash="") if e.seq == 150 else
              replace(e, seq=0, prev_hash="", hash="") for e in iter_events(tmp_path / "a" / CL)]
    with ArchiveWriter(tmp_path / "b", CL, fsync=False) as w:
        w.extend(edited)
    for _, p in list_checkpoints(tmp_path / "a" / CL):
        shutil.copy(p, tmp_path / "b" / CL / p.name)
    verify([tmp_path / "b" / CL])  # the chain and manifests alone cannot tell
    with pytest.raises(ArchiveProblem, match="do not hash to the root this checkpoint signs") as problem:
        verify([tmp_path / "b" / CL], trust=trust)
    assert problem.value.kind == "signature"
    assert clusters(tmp_path / "b") == [CL]


class _Consumer:
    def __init__(self, positions: list[TopicPartition]) -> None:
        self.positions = positions

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition) for tp in self.positions]

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return self.positions


def test_the_commit_stays_behind_the_oldest_waiting_checkpoint():
    c = _Consumer([TopicPartition("ev", 0, 500), TopicPartition("cp", 0, 12), TopicPartition("cp", 1, -1001)])
    assert held_offsets(c, "cp", {}) is None  # nothing waits: every position, as before
    got = held_offsets(c, "cp", {0: 7, 1: 3})
    assert [(tp.topic, tp.partition, tp.offset) for tp in got] == [("ev", 0, 500), ("cp", 0, 7), ("cp", 1, 3)]
