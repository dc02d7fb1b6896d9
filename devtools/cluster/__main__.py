"""python -m devtools.cluster [--mode zk] up|down|status|kill N|restart N|controller|migrate|tool NAME ARGS...

State lives in --dir (default .kafka-dev/<version>); ``up`` leaves the JVMs running and
``down`` kills exactly the JVMs recorded there."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .jars import REPO_ROOT, resolve_version
from .manager import ClusterError, KafkaCluster
from .migration import STEPS, steps_done
from .tools import ToolError
from .zkmode import ZkKafkaCluster


DEV_SCRAM = ("admin", "admin-secret")  # a dev cluster on 127.0.0.1: fixed, well-known credentials
DEV_PLAIN = ("alice", "alice-secret")


def _secure(directory: Path):
    """Certificates (made once) and client properties files for `--secure`."""
    from .config import SecureListeners
    from .tls import DEFAULT_PASSWORD, TlsFiles, client_properties, make_tls
    d = directory / "tls"
    if (d / "client.p12").exists():
        tls = TlsFiles(d, DEFAULT_PASSWORD, d / "ca.pem", d / "truststore.p12", d / "broker.p12", d / "client.p12")
    else:
        tls = make_tls(d)
    client_properties(tls, directory, DEV_SCRAM, DEV_PLAIN)
    return SecureListeners(tls.broker_keystore, tls.truststore, tls.password,
                           scram_users=dict([DEV_SCRAM]), plain_users=dict([DEV_PLAIN]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m devtools.cluster", description=__doc__)
    ap.add_argument("--mode", choices=("kraft", "zk"), default="kraft",
                    help="zk: ZooKeeper-mode brokers and one ZooKeeper (Kafka 3.9; --version defaults to 3.9)")
    ap.add_argument("--version", default=None, help="4.x (4.3.1 pinned, the default in KRaft mode), 3.9 (the default with --mode zk), or x.y.z")
    ap.add_argument("--dir", type=Path, help="cluster directory (default .kafka-dev/<version>)")
    ap.add_argument("--base-port", type=int, default=19000)
    ap.add_argument("--segment-bytes", type=int, help="metadata log segment size (small = rolls)")
    ap.add_argument("--secure", action="store_true",
                    help="also a SASL_SSL listener (SCRAM-SHA-512 user admin, PLAIN user alice) and an SSL listener "
                         "requiring client certificates; certificates and client-*.properties in --dir")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("up", help="format (once) and start all nodes, wait until ready")
    d = sub.add_parser("down", help="stop every node this directory's pid files name")
    d.add_argument("--graceful", action="store_true", help="SIGTERM (controlled shutdown)")
    d.add_argument("--remove", action="store_true", help="also delete the directory")
    sub.add_parser("status", help="running nodes and the active controller")
    for name, hlp in (("kill", "kill -9 node N"), ("stop", "SIGTERM node N"),
                      ("start", "start node N"), ("restart", "restart node N")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("node", type=int)
    c = sub.add_parser("controller", help="print the active controller's node id")
    c.add_argument("--via-tool", action="store_true", help="ask MetadataQuorumCommand")
    m = sub.add_parser("migrate", help="(--mode zk) migrate to KRaft (KIP-866): the steps not done yet, up to --step")
    m.add_argument("--step", default="finalize", choices=STEPS,
                   help="controller: start the KRaft controller in migration mode; brokers: roll the brokers with "
                        "the migration flag (metadata copied, dual-write); kraft-brokers: roll them into KRaft; "
                        "finalize: the controller without ZooKeeper (default: all)")
    t = sub.add_parser("tool", help="run a Kafka tool: topics, reassign, leader-election, "
                                    "dump-log, metadata-shell, metadata-quorum, storage, ...")
    t.add_argument("name")
    t.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)

    version = resolve_version(a.version or ("3.9" if a.mode == "zk" else "4.x"))
    directory = a.dir or REPO_ROOT / ".kafka-dev" / version
    secure = _secure(directory) if a.secure else None
    if a.mode == "zk":
        if secure or a.segment_bytes:
            ap.error("--secure and --segment-bytes are KRaft-only")
        directory = a.dir or REPO_ROOT / ".kafka-dev" / f"{version}-zk"
        cluster = ZkKafkaCluster(directory, version, base_port=a.base_port).adopt()
    else:
        cluster = KafkaCluster(directory, version, base_port=a.base_port,
                               metadata_segment_bytes=a.segment_bytes, secure=secure).adopt()
    try:
        if a.cmd == "up":
            cluster.up()
            print(f"up: {cluster.bootstrap_servers} (dir {cluster.dir}, Kafka {version})")
            if secure:
                print(f"SASL_SSL: {cluster.sasl_ssl_bootstrap} (--command-config {directory}/client-scram.properties "
                      f"or client-plain.properties); mutual TLS: {cluster.ssl_bootstrap} (client-mtls.properties)")
        elif a.cmd == "down":
            cluster.down(graceful=a.graceful, remove=a.remove)
            print("down")
        elif a.cmd == "status":
            for i in cluster.nodes:
                print(f"node {i}: {'running' if cluster.is_running(i) else 'stopped'} "
                      f"{cluster.nodes[i].bootstrap}")
            try:
                print(f"active controller: {cluster.active_controller()}")
            except ClusterError as e:
                print(f"active controller: unknown ({e})")
            for i, n in cluster.extra_nodes.items():
                print(f"KRaft controller {i}: {'running' if cluster.is_running(i) else 'stopped'} "
                      f"127.0.0.1:{n.controller_port} (migration steps done: {', '.join(steps_done(cluster))})")
            if a.mode == "zk":
                print(f"zookeeper: {'running' if cluster.zookeeper.is_running() else 'stopped'} "
                      f"{cluster.zookeeper_connect} (transaction logs in {cluster.zookeeper.txn_dir})")
        elif a.cmd == "kill":
            cluster.kill_node(a.node)
        elif a.cmd == "stop":
            cluster.stop_node(a.node)
        elif a.cmd == "start":
            cluster.start_node(a.node)
            cluster.wait_ready([a.node])
        elif a.cmd == "restart":
            cluster.restart_node(a.node)
        elif a.cmd == "controller":
            print(cluster.active_controller(via_tool=a.via_tool))
        elif a.cmd == "migrate":
            if a.mode != "zk":
                ap.error("migrate: a ZooKeeper-mode cluster's (--mode zk)")
            ran = cluster.migrate_to_kraft(a.step)
            print(f"migration steps run: {', '.join(ran) or 'none (already done)'}; done: "
                  f"{', '.join(steps_done(cluster))}")
        elif a.cmd == "tool":
            res = cluster.tool(a.name, *a.args, check=False)
            sys.stdout.write(res.stdout)
            sys.stderr.write(res.stderr)
            return res.returncode
    except (ClusterError, ToolError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
