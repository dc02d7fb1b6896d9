"""`ctrlaudit export` from a store loaded with --allow-gaps names the seqs that are not verified data: in
the Parquet file's key-value metadata, beside a CSV or JSON-lines file (<out>.gaps.csv / .gaps.json), and
in a WARNING line per gap; on the real CLI."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from services.simulator import SimConfig, simulate_to_archive
from tests.ctrlaudit.test_bad_inputs import ctrlaudit

CL = "sim-78"
QUOTED = "events-renamed-4500.avro"  # a file of its own name (a hostile one is refused by the listing): in a reason


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """`gaps`: 7500 events in five files, the second deleted and the fourth renamed and
    damaged, loaded with --allow-gaps; `whole`: the same archive intact."""
    root = tmp_path_factory.mktemp("export-gaps")
    simulate_to_archive(root / "whole", SimConfig(seed=78, events=7500, topics=3, partitions=3, cluster_id=CL),
                        max_events_per_file=1500, fsync=False)
    shutil.copytree(root / "whole", root / "gaps")
    files = sorted((root / "gaps" / CL).glob("*.avro"))
    files[1].unlink()
    files[1].with_name(files[1].name + ".manifest.json").unlink()
    data = bytearray(files[3].read_bytes())
    data[len(data) // 2] ^= 0x20
    (root / "gaps" / CL / QUOTED).write_bytes(bytes(data))
    files[3].with_name(files[3].name + ".manifest.json").rename(root / "gaps" / CL / (QUOTED + ".manifest.json"))
    files[3].unlink()
    shutil.copytree(root / "whole", root / "tail")  # the newest file damaged: a stretch after the last event
    newest = sorted((root / "tail" / CL).glob("*.avro"))[-1]
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0x20
    newest.write_bytes(bytes(data))
    out = {}
    for name, extra in (("gaps", ["--allow-gaps"]), ("whole", []), ("tail", ["--allow-gaps"])):
        out[name] = root / f"{name}.duckdb"
        done = ctrlaudit("load", str(root / name), "--store", str(out[name]), *extra)
        assert done.returncode == 0, done.stderr
    return out


def warnings(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("WARNING")]


@pytest.mark.slow
def test_parquet_holds_its_gaps_in_its_metadata(stores, tmp_path):
    out = tmp_path / "e.parquet"
    done = ctrlaudit("export", "--store", str(stores["gaps"]), "--out", str(out))
    assert done.returncode == 0, done.stderr
    said = warnings(done.stdout)
    assert len(said) == 2
    assert said[0].startswith("WARNING seq 1500..2999 not verified (missing: no file holds them)")
    assert said[1].startswith("WARNING seq 4500..5999 not verified (") and QUOTED in said[1]
    meta = pq.read_metadata(out).metadata
    gaps = json.loads(meta[b"ctrlaudit.gaps"])
    assert [(g["from_seq"], g["to_seq"]) for g in gaps] == [(1500, 2999), (4500, 5999)]
    assert QUOTED in gaps[1]["reason"] and gaps[0]["cluster_id"] == CL
    assert meta[b"ctrlaudit.verified_to"] == b"1499" and meta[b"ctrlaudit.seq_range"] == b"0..7499"
    seqs = pq.read_table(out, columns=["seq"]).column("seq").to_pylist()
    assert len(seqs) == 4500 and not any(1500 <= s <= 2999 or 4500 <= s <= 5999 for s in seqs)
    assert not list(tmp_path.glob("*.gaps.*"))  # Parquet carries them itself


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_lines_get_a_sidecar_of_their_gaps(stores, tmp_path, fmt):
    out = tmp_path / f"e.{fmt}"
    done = ctrlaudit("export", "--store", str(stores["gaps"]), "--out", str(out), "--format", fmt, "--json", "-")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # --json -: the document alone on standard output, the lines on stderr
    sidecar = Path(result["gaps_file"])
    assert sidecar == tmp_path / f"e.{fmt}.gaps.{fmt}"
    assert [line for line in done.stderr.splitlines() if line.startswith("WARNING")][0].endswith(f"{sidecar})")
    if fmt == "csv":
        listed = list(csv.DictReader(sidecar.open(newline="")))
        rows = list(csv.DictReader(out.open(newline="")))
    else:
        listed = [json.loads(line) for line in sidecar.read_text().splitlines()]
        rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(int(g["from_seq"]), int(g["to_seq"])) for g in listed] == [(1500, 2999), (4500, 5999)]
    assert QUOTED in listed[1]["reason"]
    assert [(g["from_seq"], g["to_seq"]) for g in result["gaps"]] == [(1500, 2999), (4500, 5999)]
    seqs = [int(r["seq"]) for r in rows]  # the events as they were, no row made up for a gap
    assert seqs == [*range(1500), *range(3000, 4500), *range(6000, 7500)]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_an_export_without_gaps_says_none(stores, tmp_path, fmt):
    out = tmp_path / f"e.{fmt}"
    done = ctrlaudit("export", "--store", str(stores["whole"]), "--out", str(out), "--format", fmt)
    assert done.returncode == 0, done.stderr
    assert not warnings(done.stdout) and not list(tmp_path.glob("*.gaps.*"))
    if fmt == "parquet":
        assert json.loads(pq.read_metadata(out).metadata[b"ctrlaudit.gaps"]) == []


def test_an_existing_sidecar_is_not_overwritten(stores, tmp_path):
    out = tmp_path / "e.csv"
    sidecar = tmp_path / "e.csv.gaps.csv"
    sidecar.write_text("mine\n")
    done = ctrlaudit("export", "--store", str(stores["gaps"]), "--out", str(out), "--format", "csv")
    assert done.returncode == 2 and "e.csv.gaps.csv (the gaps' file): exists; give --force" in done.stderr
    assert sidecar.read_text() == "mine\n" and not out.exists()
    done = ctrlaudit("export", "--store", str(stores["gaps"]), "--out", str(out), "--format", "csv", "--force")
    assert done.returncode == 0, done.stderr
    assert sidecar.read_text().startswith("cluster_id,from_seq,to_seq,reason") and out.exists()


def test_a_damaged_newest_file_is_a_gap_after_the_last_event(stores, tmp_path):
    """Left out under --allow-gaps, the newest file's seqs follow the last event loaded: no hole between events,
    but the history claims them, and every answer says so."""
    state = ctrlaudit("state", "--store", str(stores["tail"]))
    assert state.returncode == 0, state.stderr
    assert "WARNING seq 6000..7499 not verified (" in state.stdout.splitlines()[0]
    out = tmp_path / "e.parquet"
    done = ctrlaudit("export", "--store", str(stores["tail"]), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert [w.split(" (")[0] for w in warnings(done.stdout)] == ["WARNING seq 6000..7499 not verified"]
    gaps = json.loads(pq.read_metadata(out).metadata[b"ctrlaudit.gaps"])
    assert [(g["from_seq"], g["to_seq"]) for g in gaps] == [(6000, 7499)]


def test_the_metadata_is_quoted_as_sql_text(tmp_path):
    """COPY takes no prepared parameters for its path or options: a value holding a quote (a reason naming
    some text of the input) is one SQL string, read back as written, and runs nothing."""
    import duckdb
    import pyarrow.parquet as pq

    from ctrlaudit.commands.export import _sql_text

    hostile = "x'); DROP TABLE t; --"
    target = tmp_path / "o'q.parquet"
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 1 AS a")
    con.execute(f"COPY t TO {_sql_text(str(target))} (FORMAT parquet, KV_METADATA {{'k': {_sql_text(hostile)}}})")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (1,)
    assert pq.read_metadata(target).metadata[b"k"] == hostile.encode()


def test_to_standard_output_the_gaps_are_the_warning_lines(stores):
    """`--out -`: the CSV alone on standard output (no sidecar to write), each gap a WARNING line on standard
    error, where the lines for a person go then."""
    done = ctrlaudit("export", "--store", str(stores["gaps"]), "--out", "-", "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("seq,") or done.stdout.splitlines()[0].count(",") > 10
    assert "WARNING" not in done.stdout
    said = warnings(done.stderr)
    assert len(said) == 2 and said[0].startswith("WARNING seq 1500..2999 not verified (missing")
