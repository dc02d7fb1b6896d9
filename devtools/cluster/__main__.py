"""python -m devtools.cluster [--mode zk] up|down|status|kill N|restart N|controller|migrate|tool NAME ARGS...

State lives in --dir (default .kafka-dev/<version>); ``up`` leaves the JVMs running and
``down`` kills exactly the JVMs recorded there."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import typer

from schemas import entry

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


class Mode(str, Enum):
    kraft = "kraft"
    zk = "zk"


Step = Enum("Step", {s.replace("-", "_"): s for s in STEPS}, type=str)  # the migration's steps, as a choice


@dataclass
class Options:
    """The options given before the command: which cluster."""

    mode: Mode
    version: str | None
    dir: Path | None
    base_port: int
    segment_bytes: int | None
    secure: bool


cli = entry.app(__doc__ or "")
cli.info.no_args_is_help = True


def _usage(message: str) -> typer.Exit:
    print(f"devtools.cluster: error: {message}", file=sys.stderr)
    return typer.Exit(2)


@cli.callback()
def options(
    ctx: typer.Context,
    mode: Mode = typer.Option(Mode.kraft, "--mode",
                              help="zk: ZooKeeper-mode brokers and one ZooKeeper (Kafka 3.9; --version defaults to 3.9)"),
    version: str | None = typer.Option(None, "--version",
                                       help="4.x (4.3.1 pinned, the default in KRaft mode), 3.9 (the default with "
                                            "--mode zk), or x.y.z"),
    directory: Path | None = typer.Option(None, "--dir", help="cluster directory (default .kafka-dev/<version>)"),
    base_port: int = typer.Option(19000, "--base-port"),
    segment_bytes: int | None = typer.Option(None, "--segment-bytes", help="metadata log segment size (small = rolls)"),
    secure: bool = typer.Option(False, "--secure",
                                help="also a SASL_SSL listener (SCRAM-SHA-512 user admin, PLAIN user alice) and an SSL "
                                     "listener requiring client certificates; certificates and client-*.properties "
                                     "in --dir"),
) -> None:
    ctx.obj = Options(mode, version, directory, base_port, segment_bytes, secure)


def _cluster(ctx: typer.Context) -> tuple[KafkaCluster | ZkKafkaCluster, Options, str, Path]:
    """The cluster the options name (adopting the JVMs its directory records), made when a command runs."""
    o: Options = ctx.obj
    version = resolve_version(o.version or ("3.9" if o.mode is Mode.zk else "4.x"))
    directory = o.dir or REPO_ROOT / ".kafka-dev" / version
    if o.mode is Mode.zk:
        if o.segment_bytes:
            raise _usage("--segment-bytes is KRaft-only")
        directory = o.dir or REPO_ROOT / ".kafka-dev" / f"{version}-zk"
        zk_secure = _secure(directory) if o.secure else None
        return (ZkKafkaCluster(directory, version, base_port=o.base_port, secure=zk_secure).adopt(), o, version,
                directory)
    secure = _secure(directory) if o.secure else None
    return (KafkaCluster(directory, version, base_port=o.base_port, metadata_segment_bytes=o.segment_bytes,
                         secure=secure).adopt(), o, version, directory)


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """A cluster or tool that fails: one line, exit 1."""
    try:
        yield
    except (ClusterError, ToolError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(1) from None


@cli.command(help="format (once) and start all nodes, wait until ready")
def up(ctx: typer.Context) -> None:
    with _errors():
        cluster, o, version, directory = _cluster(ctx)
        cluster.up()
        print(f"up: {cluster.bootstrap_servers} (dir {cluster.dir}, Kafka {version})")
        if o.secure and isinstance(cluster, KafkaCluster):
            print(f"SASL_SSL: {cluster.sasl_ssl_bootstrap} (--command-config {directory}/client-scram.properties "
                  f"or client-plain.properties); mutual TLS: {cluster.ssl_bootstrap} (client-mtls.properties)")


@cli.command(help="stop every node this directory's pid files name")
def down(ctx: typer.Context,
         graceful: bool = typer.Option(False, "--graceful", help="SIGTERM (controlled shutdown)"),
         remove: bool = typer.Option(False, "--remove", help="also delete the directory")) -> None:
    with _errors():
        cluster = _cluster(ctx)[0]
        cluster.down(graceful=graceful, remove=remove)
        print("down")


@cli.command(help="running nodes and the active controller")
def status(ctx: typer.Context) -> None:
    with _errors():
        cluster, o = _cluster(ctx)[:2]
        for i in cluster.nodes:
            print(f"node {i}: {'running' if cluster.is_running(i) else 'stopped'} {cluster.nodes[i].bootstrap}")
        try:
            print(f"active controller: {cluster.active_controller()}")
        except ClusterError as e:
            print(f"active controller: unknown ({e})")
        for i, n in cluster.extra_nodes.items():
            print(f"KRaft controller {i}: {'running' if cluster.is_running(i) else 'stopped'} "
                  f"127.0.0.1:{n.controller_port} (migration steps done: {', '.join(steps_done(cluster))})")
        if isinstance(cluster, ZkKafkaCluster):
            print(f"zookeeper: {'running' if cluster.zookeeper.is_running() else 'stopped'} "
                  f"{cluster.zookeeper_connect} (transaction logs in {cluster.zookeeper.txn_dir})")


NODE = typer.Argument(..., help="the node's id")


@cli.command(help="kill -9 node N")
def kill(ctx: typer.Context, node: int = NODE) -> None:
    with _errors():
        _cluster(ctx)[0].kill_node(node)


@cli.command(help="SIGTERM node N")
def stop(ctx: typer.Context, node: int = NODE) -> None:
    with _errors():
        _cluster(ctx)[0].stop_node(node)


@cli.command(help="start node N")
def start(ctx: typer.Context, node: int = NODE) -> None:
    with _errors():
        cluster = _cluster(ctx)[0]
        cluster.start_node(node)
        cluster.wait_ready([node])


@cli.command(help="restart node N")
def restart(ctx: typer.Context, node: int = NODE) -> None:
    with _errors():
        _cluster(ctx)[0].restart_node(node)


@cli.command(help="print the active controller's node id")
def controller(ctx: typer.Context,
               via_tool: bool = typer.Option(False, "--via-tool", help="ask MetadataQuorumCommand")) -> None:
    with _errors():
        print(_cluster(ctx)[0].active_controller(via_tool=via_tool))


@cli.command(help="(--mode zk) migrate to KRaft (KIP-866): the steps not done yet, up to --step")
def migrate(ctx: typer.Context,
            step: Step = typer.Option(Step(STEPS[-1]), "--step",
                                      help="controller: start the KRaft controller in migration mode; brokers: roll "
                                           "the brokers with the migration flag (metadata copied, dual-write); "
                                           "kraft-brokers: roll them into KRaft; finalize: the controller without "
                                           "ZooKeeper (default: all)")) -> None:
    if ctx.obj.mode is not Mode.zk:
        raise _usage("migrate: a ZooKeeper-mode cluster's (--mode zk)")
    with _errors():
        cluster = _cluster(ctx)[0]
        assert isinstance(cluster, ZkKafkaCluster)  # --mode zk
        ran = cluster.migrate_to_kraft(step.value)
        print(f"migration steps run: {', '.join(ran) or 'none (already done)'}; done: "
              f"{', '.join(steps_done(cluster))}")


@cli.command(help="run a Kafka tool: topics, reassign, leader-election, dump-log, metadata-shell, metadata-quorum, "
                  "storage, ...",
             # the tool's own flags, --help included, are handed on to it
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []})
def tool(ctx: typer.Context, name: str = typer.Argument(..., help="the tool")) -> None:
    with _errors():
        res = _cluster(ctx)[0].tool(name, *ctx.args, check=False)
        sys.stdout.write(res.stdout)
        sys.stderr.write(res.stderr)
        raise typer.Exit(res.returncode)


def main(argv: list[str] | None = None) -> int:
    return entry.run(cli, argv, "python -m devtools.cluster", "devtools.cluster")


if __name__ == "__main__":
    sys.exit(main())
