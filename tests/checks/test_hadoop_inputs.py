"""Hadoop URIs among check's inputs, without a JVM: they are kept whole (never folded like a Path), go to
Spark only, and a local path among them joins them as a file:// URI (checks.inputs, checks.hadoop)."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from checks.inputs import BadInput, is_uri, resolve
from ctrlaudit.check_run import run_check
from ctrlaudit.cli import app
from ctrlaudit.progress import archive_bytes
from tests.checks.cases import CLEAN

URI = "hdfs://namenode:8020/audit/archive"


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    d = tmp_path_factory.mktemp("one")
    CLEAN["clean_baseline"]("clean_baseline").write(d / "clean.avro")
    return d


def test_uris_are_told_from_paths():
    assert is_uri(URI) and is_uri("s3a://bucket/a") and is_uri("file:///tmp/a")
    assert not is_uri("/tmp/a") and not is_uri("archive/") and not is_uri(Path("hdfs://x/a"))


def test_resolve_keeps_uris_whole_and_a_local_path_joins_them(archive):
    got = resolve([URI, str(archive)])
    assert got.uris == (URI, archive.resolve().as_uri())
    assert got.archives == () and got.store is None
    assert got.describe() == [URI, archive.resolve().as_uri()]
    with pytest.raises(BadInput, match="no-such: no such file or directory"):
        resolve([URI, str(archive / "no-such")])


def test_duckdb_refuses_a_hadoop_uri_in_one_line(capsys):
    assert run_check([URI]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"ctrlaudit: error: {URI}: an archive on a Hadoop filesystem is checked with --engine spark "
        "(DuckDB reads local or mounted paths)"]


def test_duckdb_reads_a_file_uri_as_the_local_path(archive, tmp_path):
    assert run_check([archive.resolve().as_uri()], json_path=tmp_path / "uri.json") == 0
    assert run_check([str(archive)], json_path=tmp_path / "path.json") == 0


def test_the_command_keeps_the_double_slash():
    # a pathlib.Path argument would make it hdfs:/namenode:8020/…
    done = CliRunner().invoke(app, ["check", URI])
    assert done.exit_code == 2
    assert f"{URI}: an archive on a Hadoop filesystem is checked with --engine spark" in done.output


def test_no_byte_total_for_a_uri(archive):
    assert archive_bytes([URI, archive]) is None
    assert archive_bytes([archive]) == (archive / "clean.avro").stat().st_size


def test_the_test_hdfs_speaks_pysparks_hadoop_version():
    """kafka/hdfs-pom.xml's MiniDFSCluster is pinned to the Hadoop client pyspark ships: a pyspark
    upgrade that moves it must move the pin too."""
    pyspark = pytest.importorskip("pyspark")
    from devtools.cluster.jars import HADOOP_VERSION

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert [j.name for j in jars] == [f"hadoop-client-api-{HADOOP_VERSION}.jar"]
    assert f"<hadoop.version>{HADOOP_VERSION}</hadoop.version>" in \
        (Path(__file__).resolve().parents[2] / "kafka" / "hdfs-pom.xml").read_text()
