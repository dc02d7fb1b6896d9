"""Bad archives, table-driven: each row damages a copy of a small simulated archive one way and
runs the commands that read it. Each asserts the exit code, one line naming the place (file, seq),
no traceback, and that archive and store bytes are unchanged where nothing should change.
(Environment and usage errors are in test_bad_inputs.py.)"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctrlaudit.cli import app
from services.simulator import SimConfig, simulate_to_archive

CL = "sim-77"
N = 6000


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bad-archives")
    simulate_to_archive(root / "a", SimConfig(seed=77, events=N, topics=4, partitions=4, cluster_id=CL),
                        max_events_per_file=1500, fsync=False)
    simulate_to_archive(root / "b", SimConfig(seed=78, events=N, topics=4, partitions=4, cluster_id=CL),
                        max_events_per_file=1500, fsync=False)
    simulate_to_archive(root / "other", SimConfig(seed=79, events=2000, topics=2, partitions=2, cluster_id="sim-79"),
                        max_events_per_file=1500, fsync=False)
    return root


def files(root: Path) -> list[Path]:
    return sorted((root / CL).glob("*.avro"))


def manifest(p: Path) -> Path:
    return p.with_name(p.name + ".manifest.json")


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# --- damage ---------------------------------------------------------------------------------------

def flip(i: int, at: int) -> Callable[[Path], str]:
    def damage(a: Path) -> str:
        f = files(a)[i]
        data = bytearray(f.read_bytes())
        data[at] ^= 0x20
        f.write_bytes(bytes(data))
        return f.name
    return damage


def truncate(i: int, keep: float | int) -> Callable[[Path], str]:
    def damage(a: Path) -> str:
        f = files(a)[i]
        data = f.read_bytes()
        f.write_bytes(data[: int(len(data) * keep)] if isinstance(keep, float) else data[:keep])
        return f.name
    return damage


def delete(i: int, avro: bool = True, man: bool = True) -> Callable[[Path], str]:
    def damage(a: Path) -> str:
        f = files(a)[i]
        if man:
            manifest(f).unlink()
        if avro:
            f.unlink()
        return f.name
    return damage


def edit_manifest(i: int, **changes) -> Callable[[Path], str]:
    def damage(a: Path) -> str:
        f = files(a)[i]
        d = json.loads(manifest(f).read_text())
        d.update(changes)
        manifest(f).write_text(json.dumps(d))
        return f.name
    return damage


def garbage_manifest(i: int, text: str) -> Callable[[Path], str]:
    def damage(a: Path) -> str:
        manifest(files(a)[i]).write_text(text)
        return manifest(files(a)[i]).name
    return damage


def swap_manifests(a: Path) -> str:
    f0, f1 = files(a)[0], files(a)[1]
    t0, t1 = manifest(f0).read_text(), manifest(f1).read_text()
    manifest(f0).write_text(t1.replace(f1.name, f0.name))
    manifest(f1).write_text(t0.replace(f0.name, f1.name))
    return f0.name


def foreign_file(pristine: Path) -> Callable[[Path], str]:
    def damage(a: Path) -> str:
        src = sorted((pristine / "other" / "sim-79").glob("*.avro"))[0]
        shutil.copy(src, a / CL / "events-zz.avro")
        shutil.copy(manifest(src), a / CL / "events-zz.avro.manifest.json")
        return "events-zz.avro"
    return damage


def empty_avro(a: Path) -> str:
    (a / CL / "events-empty.avro").write_bytes(b"")
    return "events-empty.avro"


def other_history_file(pristine: Path, i: int) -> Callable[[Path], str]:
    """A file of a diverging history of the same cluster, in place of this one."""
    def damage(a: Path) -> str:
        mine = files(a)[i]
        theirs = files(pristine / "b")[i]
        manifest(mine).unlink()
        mine.unlink()
        shutil.copy(theirs, a / CL / theirs.name)
        shutil.copy(manifest(theirs), a / CL / manifest(theirs).name)
        return theirs.name
    return damage


@dataclass
class Row:
    id: str
    damage: Callable[[Path], str] | None
    code: int = 1  # of load and check; verify agrees (0 / 1 / 2)
    says: str = ""  # besides the damaged file's name
    names_file: bool = True
    extra: tuple[str, ...] = field(default_factory=tuple)


def rows(pristine: Path) -> list[Row]:
    size = files(pristine / "a")[1].stat().st_size
    return [
        *(Row(f"flip-middle-file-at-{at}", flip(1, at)) for at in
          (5000, 6100, 6200, 9001, size // 3, size // 2, (2 * size) // 3, size - 40, size - 5)),
        Row("flip-header-schema-json", flip(0, 600)),
        Row("flip-first-byte", flip(2, 0)),
        Row("truncate-half", truncate(1, 0.5)),
        Row("truncate-last-byte", truncate(3, -1)),
        Row("truncate-to-header", truncate(2, 40)),
        Row("delete-first-file", delete(0), says="seq 0..", names_file=False),
        Row("delete-middle-file", delete(1), says="are missing", names_file=False),
        Row("delete-a-manifest", delete(2, avro=False), says="no manifest"),
        Row("delete-a-file-keep-its-manifest", delete(2, man=False), says="the file is gone"),
        Row("manifest-garbage", garbage_manifest(1, "{not json"), says="not a valid archive manifest"),
        Row("manifest-empty", garbage_manifest(1, ""), says="not a valid archive manifest"),
        Row("manifest-wrong-types", garbage_manifest(1, json.dumps({"file": 1})), says="not a valid archive manifest"),
        Row("manifest-count-edited", edit_manifest(1, count=1499), says="manifest"),
        Row("manifest-sha-edited", edit_manifest(1, sha256="0" * 64), says="sha256"),
        Row("manifest-first-seq-edited", edit_manifest(2, first_seq=3001)),
        Row("manifest-chain-head-edited", edit_manifest(1, chain_head_hash="f" * 64)),
        Row("manifest-cluster-edited", edit_manifest(1, cluster_id="evil"), says="cluster evil"),
        Row("manifests-swapped", swap_manifests, says="events-", names_file=False),  # both files are wrong now
        Row("file-of-another-cluster-copied-in", foreign_file(pristine), says="cluster sim-79"),
        Row("zero-byte-avro-in-archive", empty_avro, says="no manifest"),
        Row("file-of-a-diverging-history", other_history_file(pristine, 2), says="", names_file=False),
    ]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def one_error_line(result, name: str, says: str) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    errors = [line for line in result.output.splitlines() if line.startswith(("ctrlaudit: error:", "ctrlaudit check:"))]
    assert len(errors) == 1, result.output
    assert name in errors[0] and says in errors[0], errors[0]


ROW_IDS = [
    *(f"flip-middle-file-at-{i}" for i in range(9)), "flip-header-schema-json", "flip-first-byte", "truncate-half",
    "truncate-last-byte", "truncate-to-header", "delete-first-file", "delete-middle-file", "delete-a-manifest",
    "delete-a-file-keep-its-manifest", "manifest-garbage", "manifest-empty", "manifest-wrong-types",
    "manifest-count-edited", "manifest-sha-edited", "manifest-first-seq-edited", "manifest-chain-head-edited",
    "manifest-cluster-edited", "manifests-swapped", "file-of-another-cluster-copied-in", "zero-byte-avro-in-archive",
    "file-of-a-diverging-history",
]


@pytest.mark.parametrize("index", range(len(ROW_IDS)), ids=ROW_IDS)
@pytest.mark.matrix
def test_a_damaged_archive_is_refused_by_every_reader(pristine, tmp_path, index):
    row = rows(pristine)[index]
    a = tmp_path / "a"
    shutil.copytree(pristine / "a", a)
    name = row.damage(a)
    before = digest(a)
    store = tmp_path / "s.duckdb"
    loaded = run("load", str(a), "--store", str(store), "--workers", "1")
    assert loaded.exit_code == row.code, loaded.output
    one_error_line(loaded, name if row.names_file else "", row.says)
    checked = run("check", str(a))
    assert checked.exit_code == row.code, checked.output
    one_error_line(checked, name if row.names_file else "", row.says)
    verified = run("verify", str(a))
    assert verified.exit_code == row.code, verified.output
    assert "Traceback" not in verified.output
    assert digest(a) == before  # readers never change an archive
    if store.exists():  # a refused load leaves no events behind
        assert run("state", "--store", str(store)).exit_code == 2


def test_a_refused_load_leaves_the_store_as_it_was(pristine, tmp_path):
    store = tmp_path / "s.duckdb"
    assert run("load", str(pristine / "a"), "--store", str(store)).exit_code == 0
    before = run("state", "--store", str(store), "--format", "json").output
    forked = run("load", str(pristine / "b"), "--store", str(store))
    assert forked.exit_code == 1
    one_error_line(forked, "", "fork")
    assert run("state", "--store", str(store), "--format", "json").output == before


def test_the_same_archive_twice_counts_once(pristine, tmp_path):
    out = tmp_path / "r.json"
    done = run("check", str(pristine / "a"), str(pristine / "a" / CL), "--json", str(out))
    assert done.exit_code in (0, 1), done.output
    assert json.loads(out.read_text())["events"] == N


def test_two_diverging_archives_are_a_fork_not_violations(pristine):
    done = run("check", str(pristine / "a"), str(pristine / "b"))
    assert done.exit_code == 1
    one_error_line(done, "", "chain fork")


def test_allow_gaps_says_so_in_every_answer_and_check_finds_no_data_there(pristine, tmp_path):
    a = tmp_path / "a"
    shutil.copytree(pristine / "a", a)
    gone = json.loads(manifest(files(a)[1]).read_text())
    delete(1)(a)
    store = tmp_path / "s.duckdb"
    done = run("load", str(a), "--store", str(store), "--allow-gaps")
    assert done.exit_code == 0, done.output
    assert f"seq {gone['first_seq']}..{gone['last_seq']} not verified" in done.output
    # a time inside the missing hour: the answer says which stretch it cannot see
    inside = (gone["first_event_time_ms"] + gone["last_event_time_ms"]) // 2
    state = run("state", "--store", str(store), "--time", str(inside))
    assert state.exit_code == 0, state.output
    header = state.output.splitlines()[0]
    assert "WARNING" in header and f"seq {gone['first_seq']}..{gone['last_seq']}" in header
    before = run("state", "--store", str(store), "--seq", str(gone["first_seq"] - 1)).output.splitlines()[0]
    assert f"chain verified to seq {gone['first_seq'] - 1}" in before
    out = tmp_path / "r.json"
    checked = run("check", str(a), "--allow-gaps", "--json", str(out))
    report = json.loads(out.read_text())
    assert checked.exit_code == 0, checked.output
    assert report["chains"][0]["verified_to"] == gone["first_seq"] - 1
    assert report["chains"][0]["gaps"][0]["from_seq"] == gone["first_seq"]
    strict = run("check", str(a))
    assert strict.exit_code == 1


def test_a_gap_filled_by_a_later_load_is_verified_again(pristine, tmp_path):
    a = tmp_path / "a"
    shutil.copytree(pristine / "a", a)
    keep = tmp_path / "kept"
    keep.mkdir()
    f = files(a)[1]
    shutil.move(str(f), keep / f.name)
    shutil.move(str(manifest(f)), keep / manifest(f).name)
    store = tmp_path / "s.duckdb"
    assert run("load", str(a), "--store", str(store), "--allow-gaps").exit_code == 0
    assert "WARNING" in run("state", "--store", str(store)).output.splitlines()[0]
    done = run("load", str(keep), "--store", str(store))
    assert done.exit_code == 0, done.output
    assert f"chain verified to seq {N - 1}" in run("state", "--store", str(store)).output.splitlines()[0]


def _archive_of(events, root: Path) -> Path:
    from schemas.archive.writer import ArchiveWriter

    with ArchiveWriter(root, events[0].cluster_id, fsync=False) as w:
        w.extend(events)
    return root


def _sim_events(n: int, seed: int = 5):
    from services.simulator import Simulation

    return list(Simulation(SimConfig(seed=seed, events=n, topics=3, partitions=3, cluster_id="sim-x")).events())


def test_clocks_going_backwards_are_loaded_and_said(tmp_path):
    from dataclasses import replace

    events = _sim_events(3000)
    k = 1500  # from here the clock is an hour behind (a controller with a skewed clock took over)
    skewed = [replace(e, event_time_ms=e.event_time_ms - 3_600_000) if e_i >= k else e for e_i, e in enumerate(events)]
    root = _archive_of(skewed, tmp_path / "arch")
    store = tmp_path / "s.duckdb"
    done = run("load", str(root), "--store", str(store))
    assert done.exit_code == 0, done.output
    t = skewed[k - 1].event_time_ms
    state = run("state", "--store", str(store), "--time", str(t))
    assert state.exit_code == 0 and "Traceback" not in state.output
    assert "event times go backwards" in state.output.splitlines()[0]
    assert "event times go backwards" not in run("state", "--store", str(store), "--seq", "10").output


def test_huge_values_load_and_answer(tmp_path):
    from dataclasses import replace

    from schemas.events import PartitionChange

    events = _sim_events(400)
    i = next(j for j, e in enumerate(events) if isinstance(e.payload, PartitionChange) and e.payload.after)
    p = events[i].payload
    huge = replace(p.after, replicas=tuple(range(5000)), isr=tuple(range(5000)), leader=2_147_483_647 % 5000,
                   leader_epoch=2_147_483_647, partition_epoch=2_147_483_646)
    events[i] = replace(events[i], payload=replace(p, after=huge), event_time_ms=events[i].event_time_ms,
                        controller_epoch=2_147_483_647)
    root = _archive_of(events, tmp_path / "arch")
    store = tmp_path / "s.duckdb"
    done = run("load", str(root), "--store", str(store))
    assert done.exit_code == 0, done.output
    state = run("state", "--store", str(store), "--seq", str(i),
                "--topic", p.topic, "--partition", str(p.partition), "--format", "json")
    assert state.exit_code == 0, state.output
    assert json.loads(state.output)["partitions"][0]["state"]["leader_epoch"] == 2_147_483_647
    checked = run("check", str(root))
    assert checked.exit_code in (0, 1) and "Traceback" not in checked.output
