"""The Spark job on a real standalone cluster: a master and two workers in their own JVMs (pyspark's
spark-class), the job submitted with pyspark's spark-submit --master spark://…; its report equals
DuckDB's, and the master and both workers say they ran it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctrlaudit.check_run import run_check
from checks.spark_cluster import SparkCluster, alive_workers, spark_submit, ui_json
from tests.checks.cases import write_all

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = SparkCluster.start(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="1g")
    yield c
    c.stop()


@pytest.fixture(scope="module")
def histories(tmp_path_factory):
    d = tmp_path_factory.mktemp("histories")
    write_all(d)
    return d


def _without_timing(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in ("engine", "seconds")}


def test_job_on_a_standalone_cluster_equals_duckdb(cluster, histories, tmp_path):
    assert len(alive_workers(cluster.master_ui_port)) == 2
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    done = subprocess.run(
        [str(spark_submit()), "--master", cluster.master_url, str(REPO / "ctrlaudit" / "spark_job.py"),
         str(histories), "--json", str(tmp_path / "spark.json")],
        env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]  # the histories hold violations
    duck_code = run_check([histories], json_path=tmp_path / "duck.json")
    assert duck_code == 1
    spark = json.loads((tmp_path / "spark.json").read_text())
    duck = json.loads((tmp_path / "duck.json").read_text())
    assert spark["engine"] == "spark" and duck["engine"] == "duckdb"
    assert _without_timing(spark) == _without_timing(duck)
    assert sum(i["violations"] for i in spark["invariants"]) > 0

    # it ran on the cluster, not in a local JVM: the master lists the finished application, and each
    # worker ran one of its executors
    apps = [a for a in ui_json(cluster.master_ui_port)["completedapps"] if a["name"] == "ctrlaudit-check"]
    assert len(apps) == 1 and apps[0]["state"] == "FINISHED"
    for port in cluster.worker_ui_ports:
        ran = [e for e in ui_json(port)["finishedexecutors"] if e["appid"] == apps[0]["id"]]
        assert len(ran) == 1, port


def test_up_status_down_command(tmp_path):
    work = tmp_path / "sc"
    cmd = [sys.executable, "-m", "checks.spark_cluster"]
    up = subprocess.run([*cmd, "up", "--dir", str(work), "--workers", "1"], capture_output=True, text=True,
                        timeout=180, cwd=REPO)
    assert up.returncode == 0, up.stderr
    pids = []
    try:
        assert up.stdout.strip().startswith("spark://127.0.0.1:")
        recorded = json.loads((work / "cluster.json").read_text())
        pids = [recorded["master_pid"], *recorded["worker_pids"]]
        assert all(Path(f"/proc/{pid}").exists() for pid in pids)
        again = subprocess.run([*cmd, "up", "--dir", str(work)], capture_output=True, text=True, cwd=REPO)
        assert again.returncode == 2 and "already up" in again.stderr
        status = subprocess.run([*cmd, "status", "--dir", str(work)], capture_output=True, text=True, cwd=REPO)
        assert status.returncode == 0 and "1 alive workers" in status.stdout, status.stdout + status.stderr
    finally:
        down = subprocess.run([*cmd, "down", "--dir", str(work)], capture_output=True, text=True, timeout=60,
                              cwd=REPO)
    assert down.returncode == 0
    assert not (work / "cluster.json").exists()
    for pid in pids:  # stopped and reaped by init (they ran in their own sessions)
        assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
