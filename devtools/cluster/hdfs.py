"""A real HDFS on this machine for the tests: Hadoop's MiniDFSCluster (a NameNode and a DataNode, the
real server code over real RPC on loopback) in its own JVM, from the jars kafka/hdfs-pom.xml resolves
(devtools.cluster.jars.ensure_hdfs_jars), run by devtools/cluster/MiniHdfs.java as a single source file.

    with MiniHdfs.running(workdir) as hdfs:
        hdfs.put(local_dir, "/archive")          # -> hdfs://localhost:PORT/archive
        ...

The JVM serves until its standard input closes, so it cannot outlive the process that started it.
"""
from __future__ import annotations

import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devtools.cluster.jars import ensure_hdfs_jars

SOURCE = Path(__file__).with_name("MiniHdfs.java")


class HdfsError(RuntimeError):
    """The mini HDFS did not start, or refused a command."""


class MiniHdfs:
    def __init__(self, proc: subprocess.Popen[str], uri: str, log: Path) -> None:
        self.proc = proc
        self.uri = uri.rstrip("/")  # hdfs://localhost:PORT
        self.log = log
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader: threading.Thread | None = None

    @classmethod
    def start(cls, workdir: Path, timeout: float = 120.0) -> MiniHdfs:
        """Start it in `workdir` and wait (at most `timeout` s) until its DataNode has registered."""
        java = shutil.which("java")
        if java is None:
            raise HdfsError("no java on PATH")
        lib = ensure_hdfs_jars()
        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / "minihdfs.log"
        with open(log, "w") as err:
            proc = subprocess.Popen([java, "-Xmx512m", "-cp", f"{lib}/*", str(SOURCE), str(workdir / "dfs")],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                    bufsize=1)
        self = cls(proc, "", log)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        first = self._next(timeout)
        if first is None or not first.startswith("ready hdfs://"):
            self.stop()
            tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-5:])
            raise HdfsError(f"MiniDFSCluster did not start within {timeout:g} s: {first or tail}")
        self.uri = first.split(" ", 1)[1].strip().rstrip("/")
        return self

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)  # the JVM is gone

    def _next(self, timeout: float) -> str | None:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def _command(self, line: str, timeout: float = 60.0) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self._next(timeout)
        if answer != "ok":
            raise HdfsError(f"{line}: {answer or 'no answer'}")

    def url(self, path: str) -> str:
        return self.uri + "/" + path.lstrip("/")

    def put(self, local: Path, path: str) -> str:
        """Copy a local file or directory to `path` (a file there is replaced: a new file); its URI."""
        if " " in str(local) or " " in path:
            raise HdfsError("paths with spaces are not supported by this test helper")
        self._command(f"put {Path(local).resolve()} {path}")
        return self.url(path)

    def rm(self, path: str) -> None:
        self._command(f"rm {path}")

    def stop(self, timeout: float = 30.0) -> None:
        """Close its standard input (it shuts the cluster down and exits); kill it if it does not."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    @classmethod
    @contextmanager
    def running(cls, workdir: Path, timeout: float = 120.0) -> Iterator[MiniHdfs]:
        hdfs = cls.start(workdir, timeout)
        try:
            yield hdfs
        finally:
            hdfs.stop()
