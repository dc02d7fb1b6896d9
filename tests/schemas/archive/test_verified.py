"""schemas.archive.verified, the one read path: every way an archive can differ from what its manifests and
its hash chain say is named (file, kind, seq), or, with allow_gaps, recorded as a gap; the native
and the Python path agree."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from schemas.archive import fastflat, verified
from schemas.archive.verified import ArchiveProblem, NotAnArchive
from services.simulator import SimConfig, simulate_to_archive

CL = "sim-41"


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("verified")
    simulate_to_archive(root, SimConfig(seed=41, events=6000, topics=4, partitions=4, cluster_id=CL),
                        max_events_per_file=1500, fsync=False)
    return root


@pytest.fixture
def copy(archive, tmp_path) -> Path:
    shutil.copytree(archive, tmp_path / "a")
    return tmp_path / "a"


def files(root: Path) -> list[Path]:
    return sorted((root / CL).glob("*.avro"))


def manifest(p: Path) -> Path:
    return p.with_name(p.name + ".manifest.json")


def test_intact_archive_verifies_to_its_last_seq(archive):
    read = verified.verify([archive])
    chain = read.chains[CL]
    assert (chain.events, chain.verified_to, chain.gaps, chain.files) == (6000, 5999, [], 4)


def test_native_and_python_paths_agree(archive, monkeypatch):
    if not fastflat.chain_available():
        pytest.skip("native chain check not built (no OpenSSL headers)")
    native, _ = verified.read_all([archive])
    monkeypatch.setenv("CTRLAUDIT_NATIVE", "0")
    python, _ = verified.read_all([archive])
    assert native.equals(python)


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("offset", [6000, 9001, 20000, 40000, -200])
def test_a_flipped_byte_is_named_with_its_file(copy, monkeypatch, native, offset):
    monkeypatch.setenv("CTRLAUDIT_NATIVE", native)
    target = files(copy)[1]
    data = bytearray(target.read_bytes())
    data[offset] ^= 0x04
    target.write_bytes(bytes(data))
    with pytest.raises(ArchiveProblem) as info:
        verified.verify([copy])
    assert info.value.file == target.name
    assert info.value.kind in ("altered", "unchained", "unreadable", "missing", "reordered", "manifest")


def test_a_flipped_byte_with_allow_gaps_leaves_the_file_out(copy):
    target = files(copy)[1]
    data = bytearray(target.read_bytes())
    data[9001] ^= 0x04
    target.write_bytes(bytes(data))
    first = json.loads(manifest(files(copy)[0]).read_text())
    bad = json.loads(manifest(target).read_text())
    chain = verified.verify([copy], allow_gaps=True).chains[CL]
    assert chain.verified_to == first["last_seq"]
    assert [(g.from_seq, g.to_seq) for g in chain.gaps] == [(bad["first_seq"], bad["last_seq"])]
    assert chain.events == 6000 - bad["count"]


def test_a_deleted_first_file_is_a_gap_at_the_start(copy):
    gone = files(copy)[0]
    count = json.loads(manifest(gone).read_text())["count"]
    gone.unlink()
    manifest(gone).unlink()
    with pytest.raises(ArchiveProblem, match=f"seq 0..{count - 1} are missing") as info:
        verified.verify([copy])
    assert info.value.seq == 0
    chain = verified.verify([copy], allow_gaps=True).chains[CL]
    assert chain.verified_to == -1 and [(g.from_seq, g.to_seq) for g in chain.gaps] == [(0, count - 1)]


def test_a_deleted_middle_file_names_the_missing_seqs(copy):
    gone = files(copy)[2]
    m = json.loads(manifest(gone).read_text())
    gone.unlink()
    manifest(gone).unlink()
    with pytest.raises(ArchiveProblem, match=f"seq {m['first_seq']}..{m['last_seq']} are missing"):
        verified.verify([copy])


def test_a_deleted_manifest_is_refused(copy):
    manifest(files(copy)[1]).unlink()
    with pytest.raises(ArchiveProblem, match="no manifest") as info:
        verified.verify([copy])
    assert info.value.file == files(copy)[1].name


def test_a_file_gone_with_its_manifest_left_is_refused(copy):
    files(copy)[3].unlink()
    with pytest.raises(ArchiveProblem, match="the file is gone"):
        verified.verify([copy])


def test_a_garbage_manifest_is_refused(copy):
    manifest(files(copy)[0]).write_text("{not json")
    with pytest.raises(ArchiveProblem, match="not a valid archive manifest"):
        verified.verify([copy])


def test_a_manifest_with_a_renamed_key_names_the_keys(copy):
    path = manifest(files(copy)[0])
    d = json.loads(path.read_text())
    d["fild"] = d.pop("file")
    d["first_source"]["ofset"] = d["first_source"].pop("offset")
    path.write_text(json.dumps(d))
    with pytest.raises(ArchiveProblem, match=r"not a valid archive manifest \(unknown keys 'fild'; missing keys 'file'\)"):
        verified.verify([copy])
    del d["fild"], d["sha256"]
    d["file"] = files(copy)[0].name
    path.write_text(json.dumps(d))  # the top level whole: the nested mark is named with its path
    with pytest.raises(ArchiveProblem, match=r"missing keys 'sha256'"):
        verified.verify([copy])
    d["sha256"] = "0" * 64
    path.write_text(json.dumps(d))
    with pytest.raises(ArchiveProblem, match=r"unknown keys 'first_source.ofset'; missing keys 'first_source.offset'"):
        verified.verify([copy])
    path.write_text("[1, 2]")
    with pytest.raises(ArchiveProblem, match=r"the manifest is not a JSON object"):
        verified.verify([copy])


def test_the_same_archive_twice_counts_once(archive, copy):
    read = verified.verify([archive, copy, archive])
    assert read.chains[CL].events == 6000 and read.chains[CL].duplicates == 6000


def test_diverging_archives_are_a_fork(archive, tmp_path):
    other = tmp_path / "other"
    simulate_to_archive(other, SimConfig(seed=42, events=6000, topics=4, partitions=4, cluster_id=CL),
                        max_events_per_file=1500, fsync=False)
    with pytest.raises(ArchiveProblem) as info:
        verified.verify([archive, other])
    assert info.value.kind == "fork"


def test_not_an_archive(tmp_path):
    with pytest.raises(NotAnArchive):
        verified.verify([tmp_path / "nope"])
    with pytest.raises(NotAnArchive):
        verified.verify([tmp_path])
