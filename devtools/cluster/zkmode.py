"""A ZooKeeper-mode Kafka 3.9 cluster on 127.0.0.1: one ZooKeeper server and 3 brokers, all from the
pinned 3.9.2 jars (they include zookeeper-3.8.4 and zookeeper-jute-3.8.4).

The brokers are started, killed and stopped exactly like the KRaft nodes (``KafkaCluster`` does it);
only what differs lives here: there is no storage to format, ZooKeeper starts first and stops last,
and the active controller is the broker that holds the ``/controller`` znode.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from . import config, migration
from .manager import SERVER_JVM_OPTS, ClusterError, KafkaCluster, _Quiet, port_free

ZK_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# KafkaServer.startup() logs "[KafkaServer id=N] started" (KRaft's "Kafka Server started" is not logged)
ZK_BROKER_STARTED = "] started (kafka.server.KafkaServer)"


class ZooKeeperServer:
    """One standalone ZooKeeper, tracked by pid in ``<root>/pid`` like the brokers."""

    def __init__(self, root: Path, client_port: int, *, snap_count: int = 10000):
        self.root = root
        self.client_port = client_port
        self.snap_count = snap_count
        self.proc: subprocess.Popen | None = None

    data_dir = config.under_root("data")
    txn_dir = config.under_root("data", "version-2")  # ``log.<zxid>``, ``snapshot.<zxid>`` (FileTxnSnapLog's)
    cfg = config.under_root("zoo.cfg")

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    def write_config(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(exist_ok=True)
        self.cfg.write_text(config.zoo_cfg(self.data_dir, self.client_port, snap_count=self.snap_count))
        (self.root / "log4j.properties").write_text(config.zk_log4j1_properties())

    def start(self, lib: Path, timeout: float = 60) -> None:
        if self.is_running():
            return
        if not port_free(self.client_port):
            raise ClusterError(f"ZooKeeper port {self.client_port} is taken")
        cmd = ["java", "-Xmx256m", "-Xms64m", *SERVER_JVM_OPTS,
               f"-Dzookeeper.log.dir={self.root}",
               f"-Dlog4j.configuration=file:{self.root / 'log4j.properties'}",
               "-cp", str(lib / "*"), ZK_MAIN, str(self.cfg)]
        out = open(self.root / "stdout.log", "ab")
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.root, start_new_session=True)
        out.close()
        (self.root / "pid").write_text(f"{self.proc.pid}\n")
        deadline = time.monotonic() + timeout
        while not self.serving():
            if self.proc.poll() is not None:
                raise ClusterError(f"ZooKeeper exited during startup: {KafkaCluster._tail(self.root / 'zookeeper.log')}")
            if time.monotonic() > deadline:
                raise ClusterError(f"ZooKeeper not serving on {self.connect} after {timeout}s")
            time.sleep(0.2)

    def serving(self) -> bool:
        """ZooKeeper's ``srvr`` four-letter word answers with its mode once it serves clients."""
        try:
            with socket.create_connection(("127.0.0.1", self.client_port), timeout=1) as s:
                s.sendall(b"srvr")
                return b"Mode: standalone" in s.recv(4096)
        except OSError:
            return False

    def last_zxid(self) -> int:
        """The zxid of the last transaction ZooKeeper applied (``srvr``'s ``Zxid:``): a position in its log."""
        with socket.create_connection(("127.0.0.1", self.client_port), timeout=5) as s:
            s.sendall(b"srvr")
            out = b""
            while chunk := s.recv(4096):
                out += chunk
        for line in out.decode(errors="replace").splitlines():
            if line.startswith("Zxid:"):
                return int(line.split(":", 1)[1].strip(), 16)
        raise ClusterError(f"ZooKeeper's srvr printed no Zxid: {out[:200]!r}")

    def is_running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self._recorded_pid() is not None

    def _recorded_pid(self) -> int | None:
        """The pid in the pid file if that process is our ZooKeeper (an earlier CLI ``up``)."""
        try:
            pid = int((self.root / "pid").read_text().strip())
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except (ValueError, OSError):
            return None
        return pid if ZK_MAIN in cmd and str(self.cfg) in cmd else None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        pid = self._recorded_pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            for _ in range(100):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.05)
        (self.root / "pid").unlink(missing_ok=True)


class ZkKafkaCluster(KafkaCluster):
    """``KafkaCluster`` in ZooKeeper mode: ZooKeeper on base_port+1, brokers on the usual ports."""

    started_marker = ZK_BROKER_STARTED
    mode = "zk"

    def __init__(self, directory: Path | str, version: str = "3.9", *, snap_count: int = 10000, **kw):
        super().__init__(directory, version, **kw)
        if not self.settings.pre_4:
            raise ClusterError(f"ZooKeeper mode needs a Kafka release before 4.0 (3.9 is the last with it), not {self.version}")
        self.zookeeper = ZooKeeperServer(self.dir / "zookeeper", self.settings.base_port + 1,
                                         snap_count=snap_count)
        migration.attach(self)  # a cluster migrated (in part) earlier: its KRaft controller, its brokers' mode

    def migrate_to_kraft(self, until: str = "finalize", *, timeout: float = 180) -> list[str]:
        """The KIP-866 migration's steps not done yet, up to ``until`` (devtools/cluster/migration.py)."""
        return migration.Migration(self, timeout=timeout).run(until)

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect

    def format(self) -> str:
        """Write the configs (there is no storage to format: brokers register in ZooKeeper)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.zookeeper.write_config()
        for n in self.nodes.values():
            n.root.mkdir(parents=True, exist_ok=True)
            n.logs_dir.mkdir(exist_ok=True)
            n.properties.write_text(config.zk_server_properties(self.settings, n, self.zookeeper_connect))
            (n.root / self._node_log_config_name()).write_text(self._node_log_config_text())
        return ""

    def up(self, timeout: float = 90) -> "ZkKafkaCluster":
        self.format()
        self.zookeeper.start(self.tools.lib)
        self._add_scram_users()
        for i in self.nodes:
            self.start_node(i)
        self.wait_ready(timeout=timeout)
        return self

    def _add_scram_users(self) -> None:
        """The secured listeners' SCRAM users, written to ZooKeeper before the brokers start (again on each start:
        the same credential, a new salt)."""
        sec = self.settings.secure
        for user, password in (sec.scram_users.items() if sec is not None else ()):
            self.tool("configs", *config.scram_zookeeper_args(self.zookeeper_connect, user, password))

    def down(self, *, graceful: bool = False, remove: bool = False) -> None:
        try:
            super().down(graceful=graceful, remove=False)
        finally:
            self.zookeeper.kill()  # last: a broker's controlled shutdown needs it
        if remove:
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)

    def active_controller(self, *, via_tool: bool = False) -> int:
        """The broker holding ``/controller``: read from ZooKeeper itself (``via_tool``: ZooKeeperMain
        ``get /controller``) or as the brokers report it in a Metadata response. Once a migration's controller took
        over, its quorum's leader (KRaft brokers name a random broker in Metadata responses, KIP-590)."""
        if "brokers" in migration.steps_done(self) and not via_tool:
            leader = self.quorum_state(migration.CONTROLLER_ID).get("leaderId", -1)
            if leader is None or leader < 0 or not self.is_running(migration.CONTROLLER_ID):
                raise ClusterError("the KRaft controller quorum has no leader")
            return leader
        if via_tool:
            import json
            res = self.tool("zookeeper-shell", "-server", self.zookeeper_connect, "get", "/controller",
                            check=False)
            for line in res.stdout.splitlines():
                if line.startswith("{"):
                    return int(json.loads(line)["brokerid"])
            raise ClusterError(f"no /controller znode: {res.stdout.strip()[-200:]} {res.stderr.strip()[-200:]}")
        running = [n.bootstrap for i, n in self.nodes.items() if self.is_running(i)]
        if not running:
            raise ClusterError("no running broker")
        admin = AdminClient({"bootstrap.servers": ",".join(running), "logger": _Quiet()})
        try:
            md = admin.list_topics(timeout=5.0)
        except Exception as e:  # noqa: BLE001 - librdkafka's KafkaException: no broker answered
            raise ClusterError(f"no broker answered a Metadata request: {e}") from None
        if md.controller_id is None or md.controller_id < 0:
            raise ClusterError("the brokers know no controller")
        return md.controller_id
