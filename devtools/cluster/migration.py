"""A ZooKeeper-mode dev cluster migrated to KRaft (KIP-866), step by step as Kafka's ops.html
"ZooKeeper to KRaft Migration" describes it:

1. ``controller``: a KRaft controller (node 3000) formatted with the cluster id ZooKeeper holds, started in
   migration mode (``zookeeper.metadata.migration.enable``, ``zookeeper.connect``);
2. ``brokers``: every ZooKeeper-mode broker rolled with the migration flag and the quorum's address; once all
   registered with the controller, it claims ``/controller`` in ZooKeeper, copies ZooKeeper's metadata into its
   log in one metadata transaction and enters dual-write (it writes every change back to ZooKeeper);
3. ``kraft-brokers``: every broker rolled into KRaft mode (``process.roles=broker``, same id, no ZooKeeper);
4. ``finalize``: the controller restarted without the migration flag and ZooKeeper: no more dual-writes.

ZooKeeper keeps running (its transaction logs are the first part of the cluster's history) and its data
directory is never removed here. The step reached is kept in ``<dir>/migration.json`` so that the CLI can go on
from there.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from . import config, observe
from .config import NodeLayout
from .manager import STARTED_MARKER, ClusterError

CONTROLLER_ID = 3000
STEPS = ("controller", "brokers", "kraft-brokers", "finalize")
# KRaftMigrationDriver: the initial copy is committed and the brokers were sent the image: dual-write from here
DUAL_WRITE = "transitioning from KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE state"
COMPLETED = "Completed migration of metadata from ZooKeeper to KRaft"


def controller_layout(cluster) -> NodeLayout:
    """Node 3000 on base+5 (unused PLAINTEXT slot) and base+6 (CONTROLLER): clear of the brokers and ZooKeeper."""
    base = cluster.settings.base_port
    return NodeLayout(CONTROLLER_ID, cluster.dir / f"controller{CONTROLLER_ID}", base + 5, base + 6)


def state_file(cluster) -> Path:
    return cluster.dir / "migration.json"


def steps_done(cluster) -> list[str]:
    try:
        return list(json.loads(state_file(cluster).read_text())["done"])
    except (OSError, ValueError, KeyError):
        return []


def attach(cluster) -> None:
    """Make a cluster object (also a CLI's fresh one) know the controller and the brokers' mode of the steps done."""
    done = steps_done(cluster)
    if done:
        cluster.extra_nodes[CONTROLLER_ID] = controller_layout(cluster)
        cluster.markers[CONTROLLER_ID] = STARTED_MARKER
    if "kraft-brokers" in done:
        for i in cluster.nodes:
            cluster.markers[i] = STARTED_MARKER


class Migration:
    """The KIP-866 steps on a running ``ZkKafkaCluster`` (see the module doc)."""

    def __init__(self, cluster, *, timeout: float = 180):
        self.cluster = cluster
        self.timeout = timeout
        self.node = controller_layout(cluster)
        attach(cluster)

    @property
    def voters(self) -> str:
        return f"{CONTROLLER_ID}@127.0.0.1:{self.node.controller_port}"

    @property
    def done(self) -> list[str]:
        return steps_done(self.cluster)

    def _record(self, step: str) -> None:
        done = [s for s in self.done if s != step] + [step]
        state_file(self.cluster).write_text(json.dumps({"done": done}) + "\n")

    def run(self, until: str = "finalize") -> list[str]:
        """Every step not done yet, up to and including ``until``; returns the steps run."""
        if until not in STEPS:
            raise ValueError(f"unknown migration step {until!r}; steps: {', '.join(STEPS)}")
        ran = []
        for step in STEPS[:STEPS.index(until) + 1]:
            if step in self.done:
                continue
            getattr(self, step.replace("-", "_"))()
            ran.append(step)
        return ran

    def _require(self, step: str) -> None:
        before = STEPS[STEPS.index(step) - 1] if STEPS.index(step) else None
        if before is not None and before not in self.done:
            raise ClusterError(f"migration step {step!r} needs step {before!r} first (done: {self.done or 'none'})")

    # ---- the steps ----------------------------------------------------------------------------
    def cluster_id(self) -> str:
        """ZooKeeper's ``/cluster/id``: the id the controller must be formatted with."""
        res = self.cluster.tool("zookeeper-shell", "-server", self.cluster.zookeeper_connect, "get", "/cluster/id",
                                check=False)
        for line in res.stdout.splitlines():
            if line.startswith("{"):
                return json.loads(line)["id"]
        raise ClusterError(f"no /cluster/id in ZooKeeper: {res.stdout.strip()[-200:]} {res.stderr.strip()[-200:]}")

    def controller(self) -> None:
        c, n = self.cluster, self.node
        n.root.mkdir(parents=True, exist_ok=True)
        n.logs_dir.mkdir(exist_ok=True)
        n.properties.write_text(config.migration_controller_properties(c.settings, n, self.voters, c.zookeeper_connect))
        (n.root / "log4j.properties").write_text(config.log4j1_properties()
                                                 + "log4j.logger.org.apache.kafka.metadata.migration=TRACE\n")
        if not (n.data_dir / "meta.properties").exists():
            # the release's latest metadata.version: as the brokers' inter.broker.protocol.version
            c.tools.format_storage(self.cluster_id(), n.properties, "--release-version",
                                   config.release_line(c.version))
        c.extra_nodes[CONTROLLER_ID] = n
        c.markers[CONTROLLER_ID] = STARTED_MARKER
        c.start_node(CONTROLLER_ID)
        c.wait_ready([CONTROLLER_ID], timeout=self.timeout)
        self._record("controller")

    def brokers(self) -> None:
        self._require("brokers")
        c = self.cluster
        for i, n in c.nodes.items():
            n.properties.write_text(config.migrating_zk_broker_properties(c.settings, n, c.zookeeper_connect,
                                                                          self.voters))
            self._roll(i)
        self.wait_dual_write()
        self._record("brokers")

    def kraft_brokers(self) -> None:
        self._require("kraft-brokers")
        c = self.cluster
        for i, n in c.nodes.items():
            n.properties.write_text(config.kraft_broker_properties(c.settings, n, self.voters))
            c.markers[i] = STARTED_MARKER  # KafkaRaftServer's line, not KafkaServer's
            self._roll(i)
        self._record("kraft-brokers")

    def finalize(self) -> None:
        self._require("finalize")
        c, n = self.cluster, self.node
        n.properties.write_text(config.migration_controller_properties(c.settings, n, self.voters, None))
        c.restart_node(CONTROLLER_ID, timeout=self.timeout)
        # the quorum has one voter: its new term starts when it is back; the brokers reconnect to it
        self._wait_full_isr()
        self._record("finalize")

    # ---- helpers --------------------------------------------------------------------------------
    def _roll(self, node_id: int) -> None:
        """Restart one broker (controlled shutdown) and wait until every partition has its full ISR again, so
        the next roll never takes a partition's last in-sync replica away."""
        self.cluster.restart_node(node_id, timeout=self.timeout)
        self._wait_full_isr()

    def _wait_full_isr(self) -> None:
        observe.wait_describe(self.cluster, lambda d: all(set(p.isr) == set(p.replicas) and p.leader >= 0
                                                          for p in d.partitions.values()), timeout=self.timeout)

    def migration_log_line(self) -> str | None:
        """The controller's "Completed migration ..." line (it names the offset the migration ended at)."""
        log = self.node.logs_dir / "server.log"
        try:
            text = log.read_text(errors="replace")
        except OSError:
            return None
        found = [line for line in text.splitlines() if COMPLETED in line]
        return found[-1] if found else None

    def wait_dual_write(self) -> None:
        """The controller copied ZooKeeper's metadata and moved to dual-write (its migration driver's log)."""
        log = self.node.logs_dir / "server.log"
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if DUAL_WRITE in log.read_text(errors="replace"):
                    return
            except OSError:
                pass
            if not self.cluster.is_running(CONTROLLER_ID):
                raise ClusterError(f"the KRaft controller exited: {self.cluster._tail(log)}")
            if time.monotonic() > deadline:
                raise ClusterError(f"the migration did not reach dual-write in {self.timeout}s: "
                                   f"{self.cluster._tail(log)}")
            time.sleep(0.5)
