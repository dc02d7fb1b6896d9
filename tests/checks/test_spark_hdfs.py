"""An archive on a real HDFS (Hadoop's MiniDFSCluster: a NameNode and a DataNode in their own JVM,
devtools.cluster.hdfs): `ctrlaudit check hdfs://… --engine spark` lists, copies and verifies it on the
driver through Hadoop's FileSystem API (checks.hadoop) and reports what DuckDB reports on the local
copy; a flipped byte and a missing manifest on HDFS are the verified read's one line, naming the
file's URI; a file replaced on HDFS after it was verified fails the check."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctrlaudit.check_run import run_check
from services.simulator import SimConfig, simulate_to_archive

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
PREFIX = "ctrlaudit: error: "
# two clusters, several files each (a chain across files; each cluster's first files share a name)
SECOND = "sim-3/events-20250101T00-000000004000.avro"
THIRD = "sim-3/events-20250101T00-000000008000.avro"


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory):
    from devtools.cluster.hdfs import MiniHdfs
    from devtools.cluster.testing import java_available

    if not java_available():
        pytest.skip("needs java and mvn")
    with MiniHdfs.running(tmp_path_factory.mktemp("hdfs")) as h:
        yield h


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim") / "archive"
    simulate_to_archive(out, SimConfig(seed=3, events=12000), inject=[("leader_in_isr", 5000)],
                        max_events_per_file=4000, fsync=False)
    simulate_to_archive(out, SimConfig(seed=4, events=6000), max_events_per_file=4000, fsync=False)
    return out


def _cli(*args: str, spark_log: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env["PYTHONPATH"] = str(REPO)  # this checkout's packages, whatever the venv has installed
    if spark_log is not None:
        env["CTRLAUDIT_SPARK_LOG"] = str(spark_log)
    return subprocess.run([sys.executable, "-m", "ctrlaudit", "check", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(PREFIX)]


def test_check_of_an_archive_on_hdfs_equals_duckdb_on_the_local_copy(hdfs, archive, tmp_path):
    uri = hdfs.put(archive, "/audit/archive")
    done = _cli(uri, "--engine", "spark", "--master", "local[2]", "--json", str(tmp_path / "spark.json"),
                spark_log=tmp_path / "jvm.log")
    assert done.returncode == 1, done.stderr[-3000:]  # the injected leader_in_isr breach
    assert "Traceback" not in done.stderr
    # the JVM's start-up lines and WARNs go to its log file, not among the check's lines
    assert not [line for line in done.stderr.splitlines() if " WARN " in line or "log4j" in line], done.stderr
    assert "log4j" in (tmp_path / "jvm.log").read_text()
    assert run_check([str(archive)], json_path=tmp_path / "duck.json") == 1
    spark = json.loads((tmp_path / "spark.json").read_text())
    duck = json.loads((tmp_path / "duck.json").read_text())
    assert spark["engine"] == "spark" and spark["inputs"] == [uri]
    assert spark["events"] == duck["events"] == 18000
    same = ("engine", "seconds", "inputs")
    assert {k: v for k, v in spark.items() if k not in same} == {k: v for k, v in duck.items() if k not in same}
    leader = next(i for i in spark["invariants"] if i["name"] == "leader_in_isr")
    assert leader["violations"] == 1


def test_a_flipped_byte_on_hdfs_is_one_line_naming_the_file_and_seq(hdfs, archive, tmp_path):
    hdfs.put(archive, "/flipped/archive")
    bad = tmp_path / "bad.avro"
    data = bytearray((archive / SECOND).read_bytes())
    data[len(data) // 2] ^= 0x01
    bad.write_bytes(bytes(data))
    hdfs.put(bad, f"/flipped/archive/{SECOND}")

    done = _cli(hdfs.url("/flipped/archive"), "--engine", "spark", "--master", "local[2]")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and not done.stdout.strip()
    lines = _error_lines(done.stderr)
    assert len(lines) == 1, done.stderr[-3000:]
    # the verified read's own line on the same bytes, naming the file by its URI instead of its name
    local = tmp_path / "local"
    subprocess.run(["cp", "-r", str(archive), str(local)], check=True)
    (local / SECOND).write_bytes(bytes(data))
    duck = subprocess.run([sys.executable, "-m", "ctrlaudit", "check", str(local)], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert duck.returncode == 1
    name = SECOND.rsplit("/", 1)[1]
    [expected] = _error_lines(duck.stderr)
    assert expected.startswith(f"{PREFIX}{name}: altered: seq ")
    assert lines[0] == PREFIX + hdfs.url(f"/flipped/archive/{SECOND}") + expected[len(PREFIX + name):]


def test_a_missing_manifest_on_hdfs_is_one_line_naming_the_file(spark, hdfs, archive, capsys, tmp_path):
    # sim-4 has a file of that name too, with its manifest: the one without is named
    hdfs.put(archive, "/unsealed/archive")
    hdfs.rm(f"/unsealed/archive/{SECOND}.manifest.json")
    code = run_check([hdfs.url("/unsealed/archive")], engine="spark", spark=spark)
    assert code == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"{PREFIX}{hdfs.url('/unsealed/archive/' + SECOND)}: manifest: no manifest next to "
                                "it (deleted, or its writer stopped before writing it); its events cannot be "
                                "verified against the archive"]

    # --allow-gaps: the rest is checked around the file left out, as DuckDB does on the same local files
    local = tmp_path / "local"
    subprocess.run(["cp", "-r", str(archive), str(local)], check=True)
    (local / f"{SECOND}.manifest.json").unlink()
    # (the injected breach, at seq 5001, is in the file left out: nothing is violated around it)
    # (two invariants: the read around the gap is under test here; the whole catalog is, above)
    some = ["leader_in_isr", "state_continuity"]
    assert run_check([hdfs.url("/unsealed/archive")], engine="spark", spark=spark, allow_gaps=True, invariants=some,
                     json_path=tmp_path / "spark.json") == 0
    assert run_check([str(local)], allow_gaps=True, invariants=some, json_path=tmp_path / "duck.json") == 0
    spark_report, duck = (json.loads((tmp_path / f).read_text()) for f in ("spark.json", "duck.json"))
    same = ("engine", "seconds", "inputs")
    assert {k: v for k, v in spark_report.items() if k not in same} == \
        {k: v for k, v in duck.items() if k not in same}
    assert spark_report["events"] == 18000 - 4000
    assert [c["gaps"] for c in spark_report["chains"] if c["cluster_id"] == "sim-3"] == [
        [{"from_seq": 4000, "to_seq": 7999, "reason": "missing: no file holds them"}]]


def test_a_file_replaced_after_verification_fails_the_check(spark, hdfs, archive, tmp_path):
    from checks.spark_engine import SparkEngine
    from schemas.archive.verified import ArchiveProblem

    uri = hdfs.put(archive, "/replaced/archive")
    engine = SparkEngine.from_uris(spark, [uri])
    try:
        engine.confirm_sources()  # nothing changed: passes
        # the same bytes written again: a new file (new modification time), unverified for all we know
        hdfs.put(archive / THIRD, f"/replaced/archive/{THIRD}")
        with pytest.raises(ArchiveProblem) as caught:
            engine.confirm_sources()
    finally:
        engine.close()
    assert str(caught.value).startswith(f"{hdfs.url('/replaced/archive/' + THIRD)}: altered: the file changed after "
                                        "it was verified")


def test_a_missing_path_on_hdfs_is_bad_input(spark, hdfs, capsys):
    assert run_check([hdfs.url("/no/such/archive")], engine="spark", spark=spark) == 2
    assert capsys.readouterr().err.splitlines() == [f"{PREFIX}{hdfs.url('/no/such/archive')}: no such file or "
                                                    "directory"]


def test_a_directory_without_archive_files_on_hdfs_is_bad_input(spark, hdfs, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not an archive\n")
    uri = hdfs.put(tmp_path / "empty", "/empty")
    assert run_check([uri], engine="spark", spark=spark) == 2
    assert capsys.readouterr().err.splitlines() == [f"{PREFIX}{uri}: no archive files (events-*.avro with their "
                                                    "manifests)"]
