"""Names from an incident's copied files are hostile: a cluster id from --cluster-id, a copied meta.properties
or ZooKeeper's /cluster/id, and a file name in a manifest never become a path outside the output. On the real
CLI in a subprocess: exit 2 (a manifest: exit 1, the archive is not what it claims), one line naming the value
and where it came from, no traceback, nothing created anywhere, the inputs' bytes unchanged."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.simulator import SimConfig, simulate_to_archive
from tests.ctrlaudit.test_bad_inputs import ctrlaudit, digest
from tests.ctrlaudit.test_import import metadata_dir

# (id, value): what a hostile or broken source could say; each one is refused
HOSTILE_IDS = [
    ("parent", "../x"), ("parents", "../../etc"), ("slash", "/"), ("absolute", "/tmp/ctrlaudit-escape"),
    ("dotdot", ".."), ("dot", "."), ("empty", ""), ("inner-slash", "a/b"), ("backslash", "a\\b"),
    ("space", "a b"), ("newline", "a\nb"), ("over-long", "x" * 250), ("unicode", "clüster"),
    ("fullwidth-dot", "\uff0e\uff0e"), ("tilde", "~root"),
]
NUL = ("nul", "abc\x00def")  # not an argument a process can be given: only from a file


def everything(*roots: Path) -> set[str]:
    """Every path under the roots (what a refused command must not add to)."""
    return {str(p) for root in roots for p in root.rglob("*")}


def refused(done, code: int = 2) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code, done.stderr + done.stdout
    assert len(lines) == 1 and lines[0].startswith("ctrlaudit: error: "), done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    return lines[0]


@pytest.mark.parametrize("value", [v for _, v in HOSTILE_IDS], ids=[i for i, _ in HOSTILE_IDS])
@pytest.mark.matrix
def test_cluster_id_option_of_import_and_simulate(tmp_path, value):
    d = metadata_dir(tmp_path)
    # where a joined path would land outside --out: nothing may appear there either
    escapes = [Path("/tmp/ctrlaudit-escape"), tmp_path / "x", Path("/x"), Path("/etc/sim-0")]
    before, existed = digest(tmp_path), [p.exists() for p in escapes]
    for args in (["import", "kraft", str(d), "--out", str(tmp_path / "out"), "--cluster-id", value],
                 ["simulate", "--out", str(tmp_path / "sim"), "--events", "50", "--cluster-id", value]):
        line = refused(ctrlaudit(*args))
        assert line.startswith("ctrlaudit: error: --cluster-id ") and "Kafka cluster id" in line, line
        assert repr(value[:60]) in line  # the value itself, quoted and escaped
        assert digest(tmp_path) == before and not (tmp_path / "out").exists() and not (tmp_path / "sim").exists()
        assert [p.exists() for p in escapes] == existed


@pytest.mark.parametrize("value", [v for _, v in HOSTILE_IDS if "\n" not in v] + [NUL[1]],
                         ids=[i for i, v in HOSTILE_IDS if "\n" not in v] + [NUL[0]])
@pytest.mark.matrix
def test_cluster_id_of_a_copied_meta_properties(tmp_path, value):
    d = metadata_dir(tmp_path)
    meta = d.parent / "meta.properties"
    meta.write_bytes(f"version=1\ncluster.id={value}\nnode.id=1\n".encode())
    before, paths = digest(tmp_path), everything(tmp_path)
    line = refused(ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "out")))
    assert line.startswith(f"ctrlaudit: error: {meta}: cluster.id "), line
    assert digest(tmp_path) == before and everything(tmp_path) == paths
    assert not Path("/tmp/ctrlaudit-escape").exists()


def test_a_legal_cluster_id_still_imports_where_the_line_says(tmp_path):
    """The allow-list is Kafka's: a real 22-character id, sim-<seed> and unknown-cluster pass."""
    d = metadata_dir(tmp_path)
    done = ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "out"), "--cluster-id", "Ab-_9.x")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["Ab-_9.x"]
    (d.parent / "meta.properties").unlink()
    assert ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "out2")).returncode == 0
    assert [p.name for p in (tmp_path / "out2").iterdir()] == ["unknown-cluster"]


def test_a_cluster_directory_that_is_a_link_leading_out_is_refused(tmp_path):
    """A copied archive root whose cluster directory is a symbolic link elsewhere: never written through."""
    d = metadata_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "q1w2e3r4t5y6u7i8o9p0aA").symlink_to(elsewhere)
    line = refused(ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "out")))
    assert "outside" in line and str(tmp_path / "out") in line
    assert list(elsewhere.iterdir()) == []


def _archive(tmp_path: Path) -> Path:
    archive = tmp_path / "archive"
    simulate_to_archive(archive, SimConfig(seed=2, events=300, topics=2, partitions=2), max_events_per_file=100,
                        fsync=False)
    return archive


@pytest.mark.parametrize("name", ["../x.avro", "/etc/passwd", "..", "", "sub/events.avro", "e\x00.avro"])
@pytest.mark.slow
def test_a_manifest_naming_a_file_elsewhere(tmp_path, name):
    archive = _archive(tmp_path)
    manifest = sorted(archive.rglob("*.manifest.json"))[1]
    body = json.loads(manifest.read_text())
    body["file"] = name
    manifest.write_text(json.dumps(body))
    before, paths = digest(tmp_path), everything(tmp_path)
    for args in (["verify", str(archive)], ["load", str(archive), "--store", str(tmp_path / "s.duckdb")],
                 ["check", str(archive)]):
        done = ctrlaudit(*args)
        assert done.returncode == 1, done.stderr + done.stdout
        said = done.stderr + done.stdout
        assert "Traceback" not in said and manifest.name in said and "not a plain file name" in said
        assert digest(tmp_path) == before and everything(tmp_path) == paths


def test_a_manifest_naming_a_cluster_that_is_a_path(tmp_path):
    archive = _archive(tmp_path)
    manifest = sorted(archive.rglob("*.manifest.json"))[0]
    body = json.loads(manifest.read_text())
    body["cluster_id"] = "../../etc"
    manifest.write_text(json.dumps(body))
    done = ctrlaudit("verify", str(archive))
    assert done.returncode == 1 and "not a Kafka cluster id" in done.stdout + done.stderr


@pytest.mark.parametrize("how", ["option", "environment"])
def test_capture_refuses_a_cluster_id_before_starting_anything(tmp_path, how):
    """The live capture's cluster id names the archive's directory at the archiver: refused up front, before
    any worker starts or any cluster is contacted."""
    (tmp_path / "__cluster_metadata-0").mkdir()
    (tmp_path / "__cluster_metadata-0" / "quorum-state").write_text("{}")
    args = ["capture", "--metadata-dir", str(tmp_path / "__cluster_metadata-0"), "--bootstrap-server", "localhost:1"]
    env = dict(os.environ, CTRLAUDIT_CLUSTER_ID="../../etc") if how == "environment" else None
    if how == "option":
        args += ["--cluster-id", "../../etc"]
    done = subprocess.run([sys.executable, "-m", "ctrlaudit", *args], capture_output=True, text=True, env=env,
                          timeout=60)
    line = refused(done)
    assert ("--cluster-id" if how == "option" else "CTRLAUDIT_CLUSTER_ID") + " '../../etc' is not a Kafka" in line


@pytest.mark.parametrize("name", ["a\nb.avro", "événements.avro", "x y.avro.manifest.json", "ctrl\x1b[31m.avro"])
def test_an_archive_listing_with_a_name_that_is_not_plain(tmp_path, name):
    """A copied archive holding a file whose name is not a plain one (a newline would make two lines of
    error, an escape sequence would colour the terminal): one line naming it escaped, exit 2."""
    archive = _archive(tmp_path)
    (archive / "sim-2" / name).write_bytes(b"Obj\x01")
    before = digest(tmp_path)
    for args in (["verify", str(archive)], ["check", str(archive)]):
        line = refused(ctrlaudit(*args))
        assert line.startswith(f"ctrlaudit: error: {archive}: ") and repr(name) in line and "\x1b" not in line
    assert digest(tmp_path) == before
