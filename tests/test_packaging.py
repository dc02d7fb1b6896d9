"""Packaging: the core install is offline forensics (no Kafka client, no Faust, no Spark), the extras
add capture and Spark, and constraints.txt pins everything CI installs."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.ctrlaudit.test_import import metadata_dir

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRA_MODULES = ("faust", "aiokafka", "confluent_kafka", "kafka", "pyspark", "py4j")


def _requirements() -> list[Requirement]:
    reqs = [Requirement(r) for r in PYPROJECT["dependencies"]]
    for extra in PYPROJECT["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra if not r.startswith("ctrlaudit")]
    return reqs


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            pins[canonicalize_name(name)] = version
    return pins


def test_constraints_pin_every_dependency_within_its_bounds():
    pins = _pins()
    for req in _requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"constraints.txt does not pin {req.name}"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req.name}=={pins[name]} outside {req.specifier}"


def test_extras_hold_the_kafka_clients_and_spark():
    core = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["dependencies"]}
    for heavy in ("faust-streaming", "aiokafka", "confluent-kafka", "kafka-python", "pyspark", "avro",
                  "pyyaml"):
        assert heavy not in core, heavy
    extras = PYPROJECT["optional-dependencies"]
    assert "pyspark>=4.0" in extras["spark"]
    assert {canonicalize_name(Requirement(r).name) for r in extras["capture"]} >= {
        "faust-streaming", "aiokafka", "confluent-kafka", "kafka-python"}


# A child interpreter in which the extras' modules cannot be imported: what a core install sees.
_BLOCKED = f"""
import sys
from importlib.abc import MetaPathFinder
BLOCKED = {EXTRA_MODULES!r}
class NotInstalled(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
from ctrlaudit.cli import main
sys.argv = ["ctrlaudit", *sys.argv[1:]]
main()
"""


def _core(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _BLOCKED, *args], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd)}, timeout=300)


@pytest.mark.slow
def test_offline_forensics_without_the_extras(tmp_path):
    def ok(*args: str) -> str:
        done = _core(*args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        return done.stdout

    ok("import", "kraft", str(metadata_dir(tmp_path)), "--out", str(tmp_path / "imported"))
    ok("simulate", "--out", str(tmp_path / "sim"), "--seed", "3", "--events", "3000")
    ok("verify", str(tmp_path / "sim"))
    ok("load", str(tmp_path / "sim"), str(tmp_path / "imported"), "--store", str(tmp_path / "s.duckdb"))
    assert "Topic: orders" in ok("state", "--store", str(tmp_path / "s.duckdb"), "--cluster",
                                 "q1w2e3r4t5y6u7i8o9p0aA")
    assert "controller_epoch_monotonic" in ok("check", str(tmp_path / "sim"))


@pytest.mark.slow
def test_capture_and_spark_without_their_extra_say_which_extra(tmp_path):
    capture = _core("archive", "--bootstrap-server", "127.0.0.1:1", cwd=tmp_path)
    assert capture.returncode == 2
    assert "needs the 'capture' extra" in capture.stderr and "pip install 'ctrlaudit[capture]'" in capture.stderr
    assert "Traceback" not in capture.stderr and len(capture.stderr.strip().splitlines()) == 1
    assert _core("simulate", "--out", str(tmp_path / "sim"), "--seed", "4", "--events", "500", cwd=tmp_path).returncode == 0
    spark = _core("check", str(tmp_path / "sim"), "--engine", "spark", cwd=tmp_path)
    assert spark.returncode == 2
    assert "needs the 'spark' extra" in spark.stderr and "Traceback" not in spark.stderr


@pytest.mark.slow
def test_the_wheel_holds_every_file_read_at_run_time(tmp_path):
    """A plain `pip install .` must bring the invariants' SQL (and its fragments), the Avro schema and the KRaft
    record field tables: `ctrlaudit check` and the KRaft decoder read them at run time. The wheel is built from
    this tree, as pip builds it."""
    import zipfile

    from checks.catalog import CATALOG

    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("ctrlaudit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {f"checks/invariants/{inv.name}.sql" for inv in CATALOG}
    wanted |= {f"checks/invariants/fragments/{p.name}" for p in (ROOT / "checks" / "invariants" / "fragments").glob("*.sql")}
    wanted |= {"schemas/avro/controller_event.v1.avsc", "services/kraft/specs.json"}
    assert wanted - names == set()
