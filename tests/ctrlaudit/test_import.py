"""`ctrlaudit import kraft` end to end on a synthetic metadata log, and its bad input."""
from __future__ import annotations

from pathlib import Path

from tests.ctrlaudit.conftest import run
from tests.services.normalize.logs import T1, LogBuilder, broker, change, orders_cluster


def metadata_dir(tmp_path: Path, later: tuple[tuple[int, list[int]], ...] = ()) -> Path:
    """A copied metadata directory; `later`: (leader, isr) changes of orders-0 after the first."""
    d = tmp_path / "copy" / "__cluster_metadata-0"
    d.mkdir(parents=True, exist_ok=True)
    (d.parent / "meta.properties").write_text("version=1\ncluster.id=q1w2e3r4t5y6u7i8o9p0aA\nnode.id=1\n")
    b = LogBuilder()
    orders_cluster(b)
    change(b, T1, 0, leader=2, isr=[2, 3])
    for leader, isr in later:
        change(b, T1, 0, leader=leader, isr=isr)
    b.write(d / "00000000000000000000.log")
    return d


def test_import_load_state(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path)
    done = run("import", "kraft", str(d), "--out", str(tmp_path / "archive"))
    assert done.exit_code == 0, done.output
    assert "cluster q1w2e3r4t5y6u7i8o9p0aA: 7 records from 1 file(s) -> 7 events" in done.output
    store = str(tmp_path / "s.duckdb")
    assert run("load", str(tmp_path / "archive"), "--store", store, "--workers", "1").exit_code == 0
    state = run("state", "--store", store, "--offset", "5")
    assert "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\t" in state.output
    state = run("state", "--store", store)
    assert "\tTopic: orders\tPartition: 0\tLeader: 2\tReplicas: 1,2,3\tIsr: 2,3\t" in state.output
    explain = run("explain", "--store", store, "--offset", "6")
    assert "CLEAN" in explain.output and "previous ISR:      [1, 2, 3]" in explain.output
    verify = run("verify", str(tmp_path / "archive"))
    assert verify.exit_code == 0, verify.output


def test_import_of_a_flipped_bit_names_the_file_and_exits_2(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path)
    seg = d / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[len(data) - 10] ^= 0x40
    seg.write_bytes(bytes(data))
    done = run("import", "kraft", str(d), "--out", str(tmp_path / "archive"))
    assert done.exit_code == 2
    assert "00000000000000000000.log" in done.output and "Traceback" not in done.output
    skipped = run("import", "kraft", str(d), "--out", str(tmp_path / "archive2"), "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.output
    assert "capture gap:" in skipped.output


def test_import_of_something_else_exits_2(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    done = run("import", "kraft", str(tmp_path / "notes.txt"), "--out", str(tmp_path / "a"))
    assert done.exit_code == 2 and "not a metadata log segment" in done.output


def _digest(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_import_into_its_own_archive_appends_only_what_is_new(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path)
    out = tmp_path / "archive"
    assert run("import", "kraft", str(d), "--out", str(out)).exit_code == 0
    before = _digest(out)
    again = run("import", "kraft", str(d), "--out", str(out))  # the same copy again: nothing new
    assert again.exit_code == 0, again.output
    assert again.output.startswith(f"cluster q1w2e3r4t5y6u7i8o9p0aA: {out} already up to date: nothing new after "
                                   "seq 6 (7 records from 1 file(s) read, 7 events, all archived)\n"), again.output
    assert "0 archive file(s)" not in again.output
    assert _digest(out) == before
    # a newer copy of the same log: only the change after the archived head is appended
    metadata_dir(tmp_path, later=((3, [3]),))
    newer = run("import", "kraft", str(d), "--out", str(out))
    assert newer.exit_code == 0, newer.output
    assert "-> 8 events, 1 new after seq 6, appended in 1 archive file(s)" in newer.output
    assert all(_digest(out)[k] == v for k, v in before.items())  # nothing written before is touched
    assert run("verify", str(out)).exit_code == 0


def test_import_of_another_history_into_an_archive_is_refused(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path)
    out = tmp_path / "archive"
    assert run("import", "kraft", str(d), "--out", str(out)).exit_code == 0
    before = _digest(out)
    other = tmp_path / "other" / "__cluster_metadata-0"
    other.mkdir(parents=True)
    b = LogBuilder()
    b.leader_change(leader=1, epoch=1)
    broker(b, 1)
    b.write(other / "00000000000000000000.log")
    done = run("import", "kraft", str(other), "--out", str(out), "--cluster-id", "q1w2e3r4t5y6u7i8o9p0aA")
    assert done.exit_code == 2 and "do not continue it" in done.output and "Traceback" not in done.output
    assert _digest(out) == before


def test_import_json_on_standard_output(tmp_path: Path) -> None:
    """`import kraft --json -`: the summary as the document on standard output, the line on standard error."""
    import json

    d = metadata_dir(tmp_path)
    done = run("import", "kraft", str(d), "--out", str(tmp_path / "archive"), "--json", "-")
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    assert doc["cluster_id"] == "q1w2e3r4t5y6u7i8o9p0aA" and doc["records"] == doc["events"] == 7
    assert len(doc["archive_files"]) == 1 and doc["gaps"] == [] and doc["continued_after_seq"] is None
    written = sorted((tmp_path / "archive" / doc["cluster_id"]).glob("*.avro"))
    assert doc["archive_files"] == [str(f) for f in written]  # the files, not their manifests
    assert "7 records from 1 file(s)" in done.stderr
    again = json.loads(run("import", "kraft", str(d), "--out", str(tmp_path / "archive"), "--json", "-").stdout)
    assert again["continued_after_seq"] == 6 and again["archive_files"] == []


def test_import_of_zookeeper_logs_again_says_it_is_up_to_date(tmp_path: Path) -> None:
    import json

    log = Path(__file__).resolve().parents[1] / "services" / "zookeeper" / "data" / "log.1"
    out = tmp_path / "archive"
    assert run("import", "zk", str(log), "--out", str(out)).exit_code == 0
    again = run("import", "zk", str(log), "--out", str(out))
    assert again.exit_code == 0, again.output
    assert f"{out} already up to date: nothing new after seq 6 (72 transactions from 1 log(s) read, 7 events, " \
           "all archived)" in again.output and "0 archive file(s)" not in again.output
    doc = json.loads(run("import", "zk", str(log), "--out", str(out), "--json", "-").stdout)
    assert (doc["records"], doc["events"], doc["archive_files"], doc["continued_after_seq"]) == (72, 7, [], 6)


# --- the cluster id: meta.properties sits in the log directory, beside __cluster_metadata-0 ------------------

def _warnings(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("WARNING")]


def test_a_copy_without_meta_properties_warns_that_the_cluster_id_is_unknown(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path)
    (d.parent / "meta.properties").unlink()  # `cp -r .../__cluster_metadata-0 copy/` alone
    done = run("import", "kraft", str(d), "--out", str(tmp_path / "archive"))
    assert done.exit_code == 0, done.output
    warned = _warnings(done.output)
    assert len(warned) == 1, done.output
    assert warned[0].startswith("WARNING cluster id unknown: no meta.properties with a cluster.id in ")
    assert str(d.parent / "meta.properties") in warned[0] and "--cluster-id names the cluster" in warned[0]
    assert "cluster unknown-cluster: 7 records" in done.output and (tmp_path / "archive" / "unknown-cluster").is_dir()
    named = run("import", "kraft", str(d), "--out", str(tmp_path / "named"), "--cluster-id", "q1w2e3r4t5y6u7i8o9p0aA")
    assert named.exit_code == 0 and not _warnings(named.output)
    assert "cluster q1w2e3r4t5y6u7i8o9p0aA: 7 records" in named.output


def test_the_copy_named_from_inside_it_finds_meta_properties_beside_it(tmp_path: Path, monkeypatch) -> None:
    d = metadata_dir(tmp_path)
    monkeypatch.chdir(d)
    done = run("import", "kraft", ".", "--out", str(tmp_path / "archive"))
    assert done.exit_code == 0, done.output
    assert "cluster q1w2e3r4t5y6u7i8o9p0aA: 7 records" in done.output and not _warnings(done.output)


def test_a_log_directory_is_read_with_its_meta_properties(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path)
    (d.parent / "server.properties.bak").write_text("not read")
    done = run("import", "kraft", str(d.parent), "--out", str(tmp_path / "archive"))
    assert done.exit_code == 0, done.output
    assert "cluster q1w2e3r4t5y6u7i8o9p0aA: 7 records from 1 file(s) -> 7 events" in done.output


def test_meta_properties_is_read_no_further_than_its_first_64_kib(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path)
    (d.parent / "meta.properties").write_text("#" * (1 << 16) + "\ncluster.id=q1w2e3r4t5y6u7i8o9p0aA\n")
    done = run("import", "kraft", str(d), "--out", str(tmp_path / "archive"))
    assert done.exit_code == 0 and len(_warnings(done.output)) == 1 and "cluster unknown-cluster" in done.output
