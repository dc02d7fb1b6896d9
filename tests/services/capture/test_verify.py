"""Tamper tests: delete, alter, reorder or insert one event in an archive file -> verify names it (exit 1)."""
from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pytest
from typer.testing import CliRunner

from ctrlaudit.cli import app
from schemas.archive.chain import record_hash
from schemas.events import ControllerEvent, SourceKind, SourcePosition, TopicChange, TopicChangeKind
from schemas.archive import ArchiveWriter, list_files
from schemas.archive.verified import ArchiveProblem, verify as verified_read
from services.capture.archiver import Archive, TopicDoesNotContinue
from schemas import codec as event_codec
from schemas.archive.chain import Chain

CL = "tamper"


def _events(n: int) -> list[ControllerEvent]:
    return [ControllerEvent(f"id{i}", CL, 0, SourcePosition(SourceKind.KRAFT_LOG, i), 1_700_000_000_000 + i, 0, 1, 1,
                            TopicChange(TopicChangeKind.CREATED, f"t{i}", f"tid{i}")) for i in range(n)]


@pytest.fixture
def archive(tmp_path) -> Path:
    with ArchiveWriter(tmp_path, CL, fsync=False, max_events_per_file=4) as w:
        w.extend(_events(10))
    return tmp_path


def _rewrite(path: Path, edit) -> None:
    """Edit the records of one container file and write it back (manifest left alone: a forger could
    fix the sha256 too, so the chain must catch it by itself) -- and then fix the manifest sha/count."""
    with open(path, "rb") as f:
        reader = fastavro.reader(f, return_record_name=True, return_record_name_override=True)
        schema = reader.writer_schema
        recs = list(reader)
    recs = edit(recs)
    with open(path, "wb") as f:
        fastavro.writer(f, schema, recs)
    import hashlib
    m = path.with_name(path.name + ".manifest.json")
    d = json.loads(m.read_text())
    d["sha256"], d["count"] = hashlib.sha256(path.read_bytes()).hexdigest(), len(recs)
    m.write_text(json.dumps(d))


def _second_file(root: Path) -> Path:
    return list_files(root / CL)[1][0]


def problem(root: Path) -> ArchiveProblem:
    """The one verify's verdict on a broken archive."""
    with pytest.raises(ArchiveProblem) as caught:
        verified_read([root])
    return caught.value


def run_verify(root: Path):
    return CliRunner().invoke(app, ["verify", str(root)])


def test_intact_archive_passes(archive):
    r = run_verify(archive)
    assert r.exit_code == 0 and "OK: 10 events" in r.output


def test_deleted_event_is_named(archive):
    _rewrite(_second_file(archive), lambda recs: recs[:1] + recs[2:])  # drop seq 5
    p = problem(archive)
    assert p.kind == "missing" and p.seq == 5 and "seq 5 is missing" in str(p)
    r = run_verify(archive)
    assert r.exit_code == 1 and "seq 5 is missing" in r.output


def test_altered_event_is_named(archive):
    def edit(recs):
        recs[2]["payload"] = (recs[2]["payload"][0], {**recs[2]["payload"][1], "topic": "evil"})
        return recs
    _rewrite(_second_file(archive), edit)
    f = problem(archive)
    assert f.kind == "altered" and f.seq == 6 and f.event_id == "id6"
    assert run_verify(archive).exit_code == 1


def test_reordered_events_are_named(archive):
    _rewrite(_second_file(archive), lambda recs: [recs[0], recs[2], recs[1], recs[3]])
    f = problem(archive)
    assert f.kind in ("missing", "reordered") and f.seq in (5, 6)
    assert "seq 5" in str(f)
    assert run_verify(archive).exit_code == 1


def test_inserted_event_is_named(archive):
    def edit(recs):
        forged = {**recs[1], "event_id": "forged", "payload": (recs[1]["payload"][0], {**recs[1]["payload"][1], "topic": "x"})}
        forged["hash"] = record_hash(forged)  # a forger can compute a valid hash for the inserted event
        return recs[:1] + [forged] + recs[1:]
    _rewrite(_second_file(archive), edit)
    f = problem(archive)
    assert f.kind == "inserted" and f.event_id == "forged"
    assert run_verify(archive).exit_code == 1


def test_file_changed_without_fixing_the_manifest(archive):
    p = _second_file(archive)
    data = bytearray(p.read_bytes())
    data[-20] ^= 1
    p.write_bytes(bytes(data))
    assert problem(archive).kind in ("altered", "unreadable")


def test_bad_input_exits_2(tmp_path):
    assert run_verify(tmp_path / "nope").exit_code == 2
    assert run_verify(tmp_path).exit_code == 2  # empty directory: not an archive


def test_archiver_skips_what_it_holds_and_refuses_a_gap(tmp_path):
    chain = Chain(CL)
    chained = [chain.append(e) for e in _events(5)]
    a = Archive(tmp_path, fsync=False)
    assert all(a.add(event_codec.encode(e)) for e in chained[:3])
    a.checkpoint()
    b = Archive(tmp_path, fsync=False)  # a restarted archiver re-reads from an older committed offset
    assert [b.add(event_codec.encode(e)) for e in chained] == [False, False, False, True, True]
    b.checkpoint()
    assert verified_read([tmp_path]).chains[CL].events == 5
    more = [chain.append(e) for e in _events(8)[5:]]
    with pytest.raises(TopicDoesNotContinue, match="expects seq 5"):
        Archive(tmp_path, fsync=False).add(event_codec.encode(more[1]))
