"""A real Spark standalone cluster on this machine: one master and N workers, each its own JVM process,
started from pyspark's own launcher (`bin/spark-class`) and jars. No separate Spark download: the
pip-installed pyspark is a full Spark distribution minus the sbin/start-*.sh wrappers, which only
call spark-class with the same main classes.

    python -m checks.spark_cluster up [--workers 2] [--dir .spark-cluster]   # prints the master URL
    python -m checks.spark_cluster status
    python -m checks.spark_cluster down

    spark-submit --master spark://127.0.0.1:PORT ctrlaudit/spark_job.py ARCHIVE --junit report.xml

`up` leaves the processes running and writes their pids and ports to DIR/cluster.json; `down` stops
them. Everything listens on 127.0.0.1 only. Tests use `SparkCluster.start()` as a fixture.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, cast

import typer

from schemas import entry

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class SparkClusterError(RuntimeError):
    """The cluster did not come up (one line: which process, and the end of its log)."""


def spark_home() -> Path:
    import pyspark  # extra: spark

    return Path(pyspark.__file__).resolve().parent


def spark_submit() -> Path:
    return spark_home() / "bin" / "spark-submit"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(work / "logs"),
        "SPARK_WORKER_DIR": str(work / "work"),
        # executors run no Python (the checks are SQL), but a job that did would use this interpreter
        "PYSPARK_PYTHON": sys.executable,
    })
    return env


@dataclass(frozen=True)
class SparkCluster:
    """A running standalone cluster: the processes' pids and where they listen."""

    work_dir: str
    master_port: int
    master_ui_port: int
    master_pid: int
    worker_pids: tuple[int, ...]
    worker_ui_ports: tuple[int, ...]

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @classmethod
    def start(cls, work_dir: str | Path, workers: int = 2, cores: int = 1, memory: str = "1g",
              timeout: float = 90.0) -> SparkCluster:
        work = Path(work_dir).resolve()
        (work / "logs").mkdir(parents=True, exist_ok=True)
        (work / "work").mkdir(exist_ok=True)
        env = _env(work)
        spark_class = str(spark_home() / "bin" / "spark-class")
        port, ui = _free_port(), _free_port()
        procs: list[subprocess.Popen[bytes]] = []

        def launch(name: str, *args: str) -> subprocess.Popen[bytes]:
            log = open(work / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
            p = subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            procs.append(p)
            return p

        try:
            master = launch("master", MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port),
                            "--webui-port", str(ui))
            _await(lambda: ui_json(ui) is not None, timeout, "master", work, procs)
            wports = []
            for i in range(workers):
                wp = _free_port()
                launch(f"worker-{i + 1}", WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(cores),
                       "--memory", memory, "--webui-port", str(wp), "--work-dir", str(work / "work"),
                       f"spark://127.0.0.1:{port}")
                wports.append(wp)
            _await(lambda: len(alive_workers(ui)) >= workers, timeout, f"{workers} workers", work, procs)
        except BaseException:
            for p in procs:
                _kill(p.pid)
            raise
        cluster = cls(str(work), port, ui, master.pid, tuple(p.pid for p in procs[1:]), tuple(wports))
        (work / "cluster.json").write_text(json.dumps(asdict(cluster), indent=2) + "\n")
        return cluster

    @classmethod
    def load(cls, work_dir: str | Path) -> SparkCluster:
        data = json.loads((Path(work_dir) / "cluster.json").read_text())
        data["worker_pids"], data["worker_ui_ports"] = tuple(data["worker_pids"]), tuple(data["worker_ui_ports"])
        return cls(**data)

    def state(self) -> dict[str, Any] | None:
        """The master's own view (its /json endpoint): workers, running and completed applications."""
        return ui_json(self.master_ui_port)

    def stop(self) -> None:
        for pid in (*self.worker_pids, self.master_pid):
            _kill(pid)
        (Path(self.work_dir) / "cluster.json").unlink(missing_ok=True)


def alive_workers(ui_port: int) -> list[dict[str, Any]]:
    state = ui_json(ui_port) or {}
    return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]


def ui_json(port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/", timeout=2) as r:
            return cast(dict[str, Any], json.loads(r.read()))
    except (OSError, ValueError):
        return None


def _await(ready: Callable[[], bool], timeout: float, what: str, work: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        dead = [p for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            logs = sorted((work / "logs").glob("*.log"))
            tail = logs[-1].read_text(errors="replace").strip().splitlines()[-1:] if logs else []
            why = f"a process exited ({dead[0].returncode})" if dead else f"not up within {timeout:g} s"
            raise SparkClusterError(f"Spark standalone {what}: {why}; see {work / 'logs'} ({' '.join(tail)[:200]})")
        time.sleep(0.3)


def _kill(pid: int, grace: float = 10.0) -> None:
    """SIGTERM to the process group (spark-class execs the JVM in the same group), then SIGKILL."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        try:  # reap it when it is our child
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Action(str, Enum):
    up = "up"
    down = "down"
    status = "status"


cli = entry.app("A Spark standalone cluster on this machine.")


@cli.command()
def spark_cluster(
    action: Action = typer.Argument(..., help="up: start it and print the master URL; down: stop it; status"),
    directory: str = typer.Option(".spark-cluster", "--dir", help="work dir: logs, executors' files, cluster.json"),
    workers: int = typer.Option(2, "--workers"),
    cores: int = typer.Option(1, "--cores", help="cores per worker"),
    memory: str = typer.Option("1g", "--memory", help="memory per worker"),
) -> int:
    """A Spark standalone cluster on this machine: one master and N workers, each its own JVM."""
    state_file = Path(directory) / "cluster.json"
    try:
        if action is Action.up:
            if state_file.exists():
                print(f"spark_cluster: already up (see {state_file}); run down first", file=sys.stderr)
                return 2
            cluster = SparkCluster.start(directory, workers, cores, memory)
            print(cluster.master_url)
            return 0
        if not state_file.exists():
            print(f"spark_cluster: no cluster recorded in {state_file}", file=sys.stderr)
            return 2 if action is Action.status else 0
        cluster = SparkCluster.load(directory)
        if action is Action.down:
            cluster.stop()
            return 0
        state = cluster.state()
        if state is None:
            print(f"{cluster.master_url}: master not answering", file=sys.stderr)
            return 1
        print(f"{cluster.master_url}: {len(alive_workers(cluster.master_ui_port))} alive workers, "
              f"{len(state.get('activeapps', []))} running and {len(state.get('completedapps', []))} completed apps")
        return 0
    except SparkClusterError as exc:
        print(f"spark_cluster: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    return entry.run(cli, argv, "python -m checks.spark_cluster", "spark_cluster")


if __name__ == "__main__":
    sys.exit(main())
