"""A 3-node combined-mode (broker+controller) KRaft cluster on 127.0.0.1, run from Maven jars.

Every JVM this class starts is tracked by pid in ``<dir>/node<i>/pid`` and in memory, and
``down()`` kills exactly those, so a crashed test never leaves a broker behind and never touches
a JVM someone else started.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import config
from .config import ClusterSettings, NodeLayout, SecureListeners
from .jars import resolve_version
from .tools import KafkaTools, ToolResult

SERVER_JVM_OPTS = ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Xss1m",
                   "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true"]
STARTED_MARKER = "Kafka Server started"


class ClusterError(RuntimeError):
    """The dev cluster could not be formatted, started or queried."""


def random_cluster_id() -> str:
    """A Kafka Uuid string (URL-safe base64, no padding); Kafka never hands out one starting '-'."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


def port_free(port: int) -> bool:
    """Free for a listener that does not set SO_REUSEADDR: a port whose connections of an earlier
    cluster still linger in TIME_WAIT is not (a broker's bind then fails: seen in CI as "node 1 exited
    during startup ... openServerSocket")."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def find_free_base_port(nodes: int = 3, start: int = 20000, stop: int = 60000,
                        step: int = 1000) -> int:
    """A base port whose derived ports are all free right now: the nodes' and a ZooKeeper-mode cluster's
    ZooKeeper (base + 1), whose connections of an earlier cluster may still linger in TIME_WAIT, and its KRaft
    controller of a migration (base + 6, devtools/cluster/migration.py)."""
    for base in range(start, stop, step):
        # PLAINTEXT, CONTROLLER and the two secured listeners' ports (config.ports_for, NodeLayout)
        ports = [config.ports_for(base, i)[0] + k for i in range(1, nodes + 1) for k in range(4)] + [base + 1, base + 6]
        if all(port_free(p) for p in ports):
            return base
    raise ClusterError("no free base port found")


class KafkaCluster:
    started_marker = STARTED_MARKER  # the server.log line that says a node finished startup
    mode = "kraft"

    def __init__(self, directory: Path | str, version: str = "4.x", *, nodes: int = 3,
                 base_port: int = 19000, metadata_segment_bytes: int | None = None,
                 heap: str = "512m", overrides: dict[str, str] | None = None,
                 secure: SecureListeners | None = None, request_logs: bool = False):
        self.dir = Path(directory).resolve()
        self.version = resolve_version(version)
        self.settings = ClusterSettings(
            version=self.version, nodes=nodes, base_port=base_port, heap=heap,
            metadata_segment_bytes=metadata_segment_bytes, overrides=dict(overrides or {}), secure=secure,
            request_logs=request_logs)
        self.tools = KafkaTools(self.version, workdir=self.dir)
        self.procs: dict[int, subprocess.Popen] = {}
        self.paused: set[int] = set()
        self.nodes = {i: NodeLayout(i, self.dir / f"node{i}", *config.ports_for(base_port, i))
                      for i in range(1, nodes + 1)}
        # Nodes outside the broker set (a ZooKeeper-mode cluster's KRaft controller during a migration):
        # started, stopped and torn down like the others, never in bootstrap lists.
        self.extra_nodes: dict[int, NodeLayout] = {}
        # A node whose role changes (a ZooKeeper-mode broker rolled into KRaft) logs another start line.
        self.markers: dict[int, str] = {}

    # ---- layout -------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values())

    @property
    def sasl_ssl_bootstrap(self) -> str:
        """The SASL_SSL listeners (SCRAM-SHA-512, PLAIN), when started with `secure`."""
        return ",".join(f"127.0.0.1:{n.sasl_ssl_port}" for n in self.nodes.values())

    @property
    def ssl_bootstrap(self) -> str:
        """The SSL listeners that require a client certificate, when started with `secure`."""
        return ",".join(f"127.0.0.1:{n.ssl_port}" for n in self.nodes.values())

    @property
    def voters(self) -> str:
        return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())

    @property
    def cluster_id_file(self) -> Path:
        return self.dir / "cluster.id"

    def metadata_dir(self, node_id: int) -> Path:
        return self.layout(node_id).metadata_dir

    def layout(self, node_id: int) -> NodeLayout:
        return self.nodes[node_id] if node_id in self.nodes else self.extra_nodes[node_id]

    def _all_layouts(self) -> dict[int, NodeLayout]:
        return {**self.nodes, **self.extra_nodes}

    # ---- lifecycle ----------------------------------------------------------------------------
    def format(self) -> str:
        """Write configs and format every node's storage once (idempotent)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.cluster_id_file.exists():
            cid = self.cluster_id_file.read_text().strip()
        else:
            cid = random_cluster_id()
        log_cfg = self._node_log_config_text()
        for n in self.nodes.values():
            n.root.mkdir(parents=True, exist_ok=True)
            n.logs_dir.mkdir(exist_ok=True)
            n.properties.write_text(config.server_properties(self.settings, n, self.voters))
            (n.root / self._node_log_config_name()).write_text(log_cfg)
        todo = [n for n in self.nodes.values() if not (n.data_dir / "meta.properties").exists()]

        def fmt(n: NodeLayout) -> ToolResult:
            scram = config.scram_format_args(self.settings.secure) if self.settings.secure else []
            return self.tools.format_storage(cid, n.properties, "--ignore-formatted", *scram, check=False)
        with ThreadPoolExecutor(max_workers=len(todo) or 1) as ex:
            for n, res in zip(todo, ex.map(fmt, todo)):
                if res.returncode != 0:
                    raise ClusterError(f"formatting node {n.node_id} failed: "
                                       f"{(res.stderr or res.stdout).strip()[-500:]}")
        self.cluster_id_file.write_text(cid + "\n")
        return cid

    def _node_log_config_name(self) -> str:
        return "log4j.properties" if self.settings.pre_4 else "log4j2.properties"

    def _node_log_config_text(self) -> str:
        text = config.log4j1_properties() if self.settings.pre_4 else config.log4j2_properties()
        if self.settings.request_logs:
            text += config.request_loggers_log4j1() if self.settings.pre_4 else config.request_loggers_log4j2()
        return text

    def start_node(self, node_id: int) -> None:
        n = self.layout(node_id)
        if self.is_running(node_id):
            return
        log_cfg = n.root / self._node_log_config_name()
        log_opt = (f"-Dlog4j.configuration=file:{log_cfg}" if self.settings.pre_4
                   else f"-Dlog4j2.configurationFile={log_cfg}")
        cmd = ["java", f"-Xmx{self.settings.heap}", "-Xms128m", *SERVER_JVM_OPTS,
               f"-Dkafka.logs.dir={n.logs_dir}", log_opt,
               "-cp", str(self.tools.lib / "*"), "kafka.Kafka", str(n.properties)]
        # Mark where this start begins in server.log so readiness ignores earlier runs.
        server_log = n.logs_dir / "server.log"
        self._log_offsets = getattr(self, "_log_offsets", {})
        self._log_offsets[node_id] = server_log.stat().st_size if server_log.exists() else 0
        out = open(n.stdout, "ab")
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=n.root, start_new_session=True)
        out.close()
        self.procs[node_id] = proc
        (n.root / "pid").write_text(f"{proc.pid}\n")

    def up(self, timeout: float = 90) -> "KafkaCluster":
        self.format()
        for i in self.nodes:
            self.start_node(i)
        self.wait_ready(timeout=timeout)
        return self

    def is_running(self, node_id: int) -> bool:
        p = self.procs.get(node_id)
        return p is not None and p.poll() is None

    def node_started(self, node_id: int) -> bool:
        """True once this run of the node logged that it finished startup (implies unfenced)."""
        log = self.layout(node_id).logs_dir / "server.log"
        if not log.exists():
            return False
        with open(log, "rb") as f:
            f.seek(getattr(self, "_log_offsets", {}).get(node_id, 0))
            return self.markers.get(node_id, self.started_marker).encode() in f.read()

    def wait_ready(self, node_ids: list[int] | None = None, timeout: float = 90) -> None:
        ids = list(node_ids or self.nodes)
        deadline = time.monotonic() + timeout
        pending = set(ids)
        while pending:
            for i in list(pending):
                if not self.is_running(i):
                    tail = self._tail(self.layout(i).stdout) or self._tail(
                        self.layout(i).logs_dir / "server.log")
                    raise ClusterError(f"node {i} exited during startup: {tail}")
                if self.node_started(i):
                    pending.discard(i)
            if pending and time.monotonic() > deadline:
                raise ClusterError(f"nodes {sorted(pending)} not ready after {timeout}s")
            if pending:
                time.sleep(0.2)

    def stop_node(self, node_id: int, timeout: float = 30) -> None:
        """Graceful stop (SIGTERM: controlled shutdown), SIGKILL if it does not exit in time."""
        p = self.procs.get(node_id)
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGCONT)  # a paused JVM cannot act on SIGTERM
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill_node(node_id)

    def kill_node(self, node_id: int) -> None:
        """kill -9: no controlled shutdown, the controller fences the broker after the session timeout."""
        p = self.procs.get(node_id)
        if p is None or p.poll() is not None:
            return
        p.kill()
        p.wait(10)
        self.paused.discard(node_id)

    def pause_node(self, node_id: int) -> None:
        """SIGSTOP: the JVM stays alive but stops heartbeating and fetching (it is fenced after
        the session timeout and drops out of ISRs) without losing its registration or its log."""
        p = self.procs.get(node_id)
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGSTOP)
            self.paused.add(node_id)

    def resume_node(self, node_id: int) -> None:
        p = self.procs.get(node_id)
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGCONT)
        self.paused.discard(node_id)

    def restart_node(self, node_id: int, *, kill: bool = False, timeout: float = 60) -> None:
        (self.kill_node if kill else self.stop_node)(node_id)
        self.start_node(node_id)
        self.wait_ready([node_id], timeout=timeout)

    def down(self, *, graceful: bool = False, remove: bool = False) -> None:
        """Stop every JVM this object started (also ones recorded in pid files by an earlier run)."""
        for i in self._all_layouts():
            if graceful:
                self.stop_node(i)
            else:
                self.kill_node(i)
        for n in self._all_layouts().values():
            self._kill_stale_pidfile(n)
        if remove:
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)

    def _kill_stale_pidfile(self, n: NodeLayout) -> None:
        """Kill a JVM from a previous process of ours (CLI ``up`` then ``down``), pid-checked."""
        pidfile = n.root / "pid"
        if not pidfile.exists():
            return
        try:
            pid = int(pidfile.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except (ValueError, OSError):
            pidfile.unlink(missing_ok=True)
            return
        # Only a kafka.Kafka JVM started with this node's properties file is ours.
        if "kafka.Kafka" in cmdline and str(n.properties) in cmdline:
            os.kill(pid, signal.SIGKILL)
            for _ in range(100):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.05)
        pidfile.unlink(missing_ok=True)

    def adopt(self) -> "KafkaCluster":
        """For the CLI: treat pid files from an earlier ``up`` as our processes."""
        for i, n in self._all_layouts().items():
            pidfile = n.root / "pid"
            if pidfile.exists() and i not in self.procs:
                self.procs[i] = _PidProcess(int(pidfile.read_text().strip()), n)
        return self

    def __enter__(self) -> "KafkaCluster":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # ---- queries ------------------------------------------------------------------------------
    def quorum_state(self, node_id: int) -> dict:
        path = self.metadata_dir(node_id) / "quorum-state"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return {}

    def active_controller(self, *, via_tool: bool = False) -> int:
        """Node id of the Raft leader: the highest-epoch leaderId among running nodes' quorum-state
        files, or (``via_tool``) what MetadataQuorumCommand describe --status reports."""
        if via_tool:
            out = self.tool("metadata-quorum", "--bootstrap-server", self.bootstrap_servers,
                            "describe", "--status").stdout
            for line in out.splitlines():
                if line.startswith("LeaderId:"):
                    return int(line.split(":", 1)[1])
            raise ClusterError(f"no LeaderId in: {out!r}")
        best: tuple[int, int] | None = None
        for i in self.nodes:
            if not self.is_running(i):
                continue
            st = self.quorum_state(i)
            leader, epoch = st.get("leaderId", -1), st.get("leaderEpoch", -1)
            if leader is not None and leader >= 0 and (best is None or epoch > best[1]):
                best = (leader, epoch)
        if best is None:
            raise ClusterError("no running node knows a leader")
        return best[0]

    def wait_for_controller(self, *, exclude: int | None = None, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while True:
            try:
                leader = self.active_controller()
                if leader != exclude and self.is_running(leader):
                    return leader
            except ClusterError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"no active controller other than {exclude} after {timeout}s")
            time.sleep(0.2)

    def tool(self, tool: str, *args: str, check: bool = True, timeout: float = 120) -> ToolResult:
        return self.tools.run(tool, *args, check=check, timeout=timeout)

    def topics(self, *args: str, check: bool = True) -> ToolResult:
        return self.tool("topics", "--bootstrap-server", self.bootstrap_servers, *args, check=check)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     *extra: str) -> ToolResult:
        done = self.topics("--create", "--topic", name, "--partitions", str(partitions),
                           "--replication-factor", str(replication_factor), *extra)
        self._await_topic(name)
        return done

    def _await_topic(self, name: str, timeout: float = 30.0) -> None:
        """Wait until every running broker's metadata has the new topic: a Kafka tool run right after
        the creation may ask a broker that has not seen it yet (seen on 3.9 under load: the
        reassignment tool's "Topic ... not found")."""
        import time

        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        for node_id, node in self.nodes.items():
            if not self.is_running(node_id):
                continue
            admin = AdminClient({"bootstrap.servers": node.bootstrap, "logger": _Quiet()})
            while time.monotonic() < deadline:
                try:
                    md = admin.list_topics(name, timeout=2.0)
                    if name in md.topics and md.topics[name].error is None and md.topics[name].partitions:
                        break
                except Exception:  # noqa: BLE001 - a broker not answering yet: try again until the deadline
                    pass
                time.sleep(0.1)

    def metadata_files(self, node_id: int) -> list[Path]:
        """Segments and snapshots of a node's metadata log, in offset order."""
        d = self.metadata_dir(node_id)
        files = [p for p in d.iterdir() if p.suffix in (".log", ".checkpoint")]
        return sorted(files, key=lambda p: (p.name.split("-")[0].split(".")[0], p.suffix))

    @staticmethod
    def _tail(path: Path, n: int = 5) -> str:
        try:
            return " | ".join(path.read_text(errors="replace").strip().splitlines()[-n:])
        except OSError:
            return ""


class _PidProcess:
    """Minimal Popen look-alike for a JVM started by an earlier CLI invocation."""

    def __init__(self, pid: int, node: NodeLayout):
        self.pid = pid
        self._node = node
        self.returncode: int | None = None

    def _ours(self) -> bool:
        try:
            cmd = Path(f"/proc/{self.pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False
        return "kafka.Kafka" in cmd and str(self._node.properties) in cmd

    def poll(self) -> int | None:
        if self.returncode is None and not self._ours():
            self.returncode = -1
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self._ours():
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = time.monotonic() + (timeout or 1e9)
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.05)
        return self.returncode or 0


class _Quiet:
    """librdkafka's log lines of the topic wait: not wanted in the test output."""

    def log(self, level, fmt, *args):
        pass
