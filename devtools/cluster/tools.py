"""Kafka's own command-line tools, run as ``java -cp lib/* <MainClass>`` from the pinned jars."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import config
from .jars import ensure_jars, resolve_version

# JIT tiers above C1 cost CPU at startup and buy nothing for a short-lived tool.
TOOL_JVM_OPTS = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]

# Each tool's main class, newest first, with the first release that has it there: the tools moved from
# Scala (kafka.*) to Java (org.apache.kafka.tools.*) one by one through 3.x (read off each release's jars).
_MAIN_CLASSES: dict[str, list[tuple[tuple[int, int], str]]] = {
    "topics": [((3, 7), "org.apache.kafka.tools.TopicCommand"), ((0, 0), "kafka.admin.TopicCommand")],
    "reassign": [((3, 7), "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"),
                 ((0, 0), "kafka.admin.ReassignPartitionsCommand")],
    "leader-election": [((3, 7), "org.apache.kafka.tools.LeaderElectionCommand"),
                        ((0, 0), "kafka.admin.LeaderElectionCommand")],
    "configs": [((0, 0), "kafka.admin.ConfigCommand")],  # kafka-configs (still Scala in 3.9 and 4.x)
    "metadata-quorum": [((3, 4), "org.apache.kafka.tools.MetadataQuorumCommand"),
                        ((3, 3), "kafka.admin.MetadataQuorumCommand")],
    "metadata-shell": [((0, 0), "org.apache.kafka.shell.MetadataShell")],
    "features": [((3, 6), "org.apache.kafka.tools.FeatureCommand"), ((0, 0), "kafka.admin.FeatureCommand")],
    "cluster": [((3, 5), "org.apache.kafka.tools.ClusterTool"), ((0, 0), "kafka.tools.ClusterTool")],
    "storage": [((0, 0), "kafka.tools.StorageTool")],
    "producer-perf": [((0, 0), "org.apache.kafka.tools.ProducerPerformance")],
    "server": [((0, 0), "kafka.Kafka")],
    "dump-log": [((4, 3), "org.apache.kafka.tools.DumpLogSegments"), ((0, 0), "kafka.tools.DumpLogSegments")],
    # ZooKeeper's own (3.x jars only): a znode reader and the transaction-log dump tool
    "zookeeper-shell": [((0, 0), "org.apache.zookeeper.ZooKeeperMain")],
    "txnlog-toolkit": [((0, 0), "org.apache.zookeeper.server.persistence.TxnLogToolkit")],
}
# Tools that only read: safe to run again.
_READ_ONLY = {"metadata-shell", "dump-log", "txnlog-toolkit"}


def version_tuple(version: str) -> tuple[int, ...]:
    """(major, minor) of a full Kafka version: 4.4.0 -> (4, 4)."""
    return tuple(int(p) for p in version.split(".")[:2])


def main_class(tool: str, version: str) -> str:
    """The main class of ``tool`` in Kafka ``version`` (e.g. DumpLogSegments moved to Java in 4.3)."""
    try:
        classes = _MAIN_CLASSES[tool]
    except KeyError:
        raise ValueError(f"unknown Kafka tool {tool!r}; known: {', '.join(sorted(_MAIN_CLASSES))}") from None
    full = version_tuple(resolve_version(version))
    for since, cls in classes:
        if full >= since:
            return cls
    raise ToolUnavailable(f"Kafka {resolve_version(version)} has no {tool} tool "
                          f"(it came with {'.'.join(map(str, classes[-1][0]))})")


@dataclass
class ToolResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> "ToolResult":
        if self.returncode != 0:
            raise ToolError(self)
        return self


class ToolError(RuntimeError):
    def __init__(self, result: ToolResult):
        self.result = result
        last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-3:]
        super().__init__(f"{result.args[-1] if result.args else 'tool'} exited "
                         f"{result.returncode}: {' | '.join(last)}")


class ToolUnavailable(RuntimeError):
    """The tool is not among the resolved jars of this Kafka release."""


class KafkaTools:
    """Runs Kafka tools of one version with a quiet (stderr, WARN) logging config."""

    def __init__(self, version: str = "4.x", workdir: Path | None = None):
        self.version = resolve_version(version)
        self.lib = ensure_jars(self.version)
        self.workdir = Path(workdir) if workdir else self.lib.parent
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._log_config = self._write_log_config()

    @property
    def pre_4(self) -> bool:
        """A release before 4.0: ZooKeeper mode, log4j 1.x."""
        return int(self.version.split(".")[0]) < 4

    def _write_log_config(self) -> Path:
        if self.pre_4:
            path = self.workdir / "tools-log4j.properties"
            text = config.tools_log4j1_properties()
        else:
            path = self.workdir / "tools-log4j2.properties"
            text = config.tools_log4j2_properties()
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        return path

    def log_opts(self) -> list[str]:
        if self.pre_4:
            return [f"-Dlog4j.configuration=file:{self._log_config}"]
        return [f"-Dlog4j2.configurationFile={self._log_config}"]

    def command(self, tool: str, *args: str, jvm_opts: list[str] | None = None) -> list[str]:
        if tool == "metadata-shell" and not self.has_shell:
            # an older release's shell cannot stand in: it refuses a newer metadata.version (4.3.1's shell
            # on 4.4.0's snapshots: "No MetadataVersion with feature level 33")
            raise ToolUnavailable(f"Kafka {self.version} was resolved without kafka-shell (not on Maven Central)")
        return ["java", *(jvm_opts or TOOL_JVM_OPTS), *self.log_opts(),
                "-cp", str(self.lib / "*"), main_class(tool, self.version), *map(str, args)]

    @property
    def has_shell(self) -> bool:
        """Whether this release's metadata shell is there (devtools.cluster.jars resolves a release whose
        kafka-shell jar Maven Central lacks without it)."""
        return any(self.lib.glob("kafka-shell-*.jar"))

    def run(self, tool: str, *args: str, check: bool = True, timeout: float = 120,
            input: str | None = None) -> ToolResult:
        cmd = self.command(tool, *args)
        # Read-only tools get a second try when they time out: a MetadataShell run that normally takes
        # seconds once hung past 120 s in a CI run. Tools that change the cluster are never repeated.
        tries = 2 if tool in _READ_ONLY else 1
        for attempt in range(tries):
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                      input=input, stdin=None if input is not None else subprocess.DEVNULL)
                break
            except subprocess.TimeoutExpired:
                if attempt + 1 == tries:
                    raise
        res = ToolResult(cmd, proc.returncode, proc.stdout, proc.stderr)
        return res.check() if check else res

    def format_storage(self, cluster_id: str, properties: Path | str, *args: str, check: bool = True) -> ToolResult:
        """`kafka-storage format` of a node's log dirs. The id goes as `--cluster-id=ID`: a ZooKeeper-mode
        cluster's id (java.util.UUID in URL-safe base64) may begin with '-', and `-t ID` then reads it as an
        option ("expected one argument": a migration test failed so in CI)."""
        return self.run("storage", "format", f"--cluster-id={cluster_id}", "-c", str(properties), *args, check=check)

    def dump_log(self, *files: Path | str, metadata: bool = True) -> str:
        """DumpLogSegments output for ``files`` (``--cluster-metadata-decoder`` by default)."""
        args = ["--files", ",".join(str(f) for f in files)]
        if metadata:
            args.append("--cluster-metadata-decoder")
        return self.run("dump-log", *args).stdout
