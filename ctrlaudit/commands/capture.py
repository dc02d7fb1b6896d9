"""`ctrlaudit capture`, `ctrlaudit archive`, `ctrlaudit verify`: the capture side's commands."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import typer

from ctrlaudit.commands.keys import accidents_only, signed_lines, signers_of, trust_of
from ctrlaudit.commands.options import (
    COMMAND_CONFIG, SIGNING_KEY, TRUSTED_KEY, WITNESS_KEY, given_cluster_id, signing_key, trusted_keys,
)
from ctrlaudit.commands.output import FORCE, JSON_OUT, Output, refuse_outputs
from ctrlaudit.errors import EXIT_FOUND, UsageError, user_errors
from ctrlaudit.progress import bar
from ctrlaudit.supervisor import Child, Supervisor
from schemas import names
from schemas.archive.signed import load_verifiers
from schemas.archive.verified import ArchiveProblem, VerifiedRead
from services.capture.archiver import run
from services.capture.connect import connect_timeout, require_reachable
from services.capture.settings import Settings
from services.zookeeper.watch import ZooKeeperWatch

BOOTSTRAP = typer.Option(None, "--bootstrap-server",
                         help="Kafka bootstrap servers (env CTRLAUDIT_BOOTSTRAP_SERVERS); a cluster that does not "
                              "answer within CTRLAUDIT_CONNECT_TIMEOUT seconds (15) is an error.")
EVENTS_TOPIC = typer.Option(None, "--topic", help="Events topic (env CTRLAUDIT_EVENTS_TOPIC, default ctrlaudit.events).")
CAPTURE_SIGNING_KEY = signing_key(
    "Sign checkpoints of the events' Merkle tree with this key file (ctrlaudit keygen) and publish them to the "
    "checkpoints topic (env CTRLAUDIT_SIGNING_KEY; every CTRLAUDIT_SIGN_EVERY_EVENTS events, 10000, or "
    "CTRLAUDIT_SIGN_EVERY_SECONDS, 60).")
CHECKPOINT_KEY = trusted_keys(
    "Store capture's checkpoints only when signed by this public key (name+id+key or a file of them; "
    "repeatable; env CTRLAUDIT_TRUSTED_KEY). Without it they are stored when their roots match the archive's.")


def register(app: typer.Typer) -> None:
    @app.command("capture")
    @user_errors
    def capture(
        metadata_dir: Path | None = typer.Option(None, "--metadata-dir",
                                                 help="A KRaft node's __cluster_metadata-0 directory (tailed)."),
        zookeeper: str | None = typer.Option(None, "--zookeeper",
                                             help="HOST:PORT[/chroot] of a ZooKeeper-mode cluster's ZooKeeper: its "
                                                  "controller znodes are watched instead (Kafka 3.x)."),
        bootstrap_server: str | None = BOOTSTRAP,
        command_config: Path | None = COMMAND_CONFIG,
        cluster_id: str | None = typer.Option(None, "--cluster-id",
                                              help="Default: meta.properties next to the directory, or ZooKeeper's "
                                                   "/cluster/id."),
        sample_interval: float = typer.Option(0, "--sample-interval", help="Also run the offset sampler every N s."),
        inline_watch: bool = typer.Option(False, "--inline-watch",
                                          help="Run the watch agent in the capture worker instead of its own."),
        loglevel: str = typer.Option("info", "--loglevel", "-l", help="Log level of the workers: debug, info, warning, "
                                                                      "error."),
        max_restarts: int = typer.Option(5, "--max-restarts",
                                         help="Give up after a process fails this many times in a row, "
                                              "each within a minute of starting."),
        signing_key: Path | None = CAPTURE_SIGNING_KEY,
        request_log_dir: list[str] = typer.Option(
            [], "--request-log-dir",
            help="DIR or DIR=ID: a node's log directory whose kafka-request.log and kafka-authorizer.log are followed "
                 "into the chain as ClientRequest events (who asked); its node id as the server.log there states it, "
                 "or ID (repeatable; env CTRLAUDIT_REQUEST_LOG_DIRS, comma-separated)."),
    ) -> None:
        """Start the capture worker (Faust) with the KRaft source (or the ZooKeeper source) for a cluster, and
        the watch worker.

        The watch agent (live invariant checks -> alerts topic) runs in a second worker at a lower CPU
        priority, so that a burst of changes is captured at full speed and the alerts catch up after.
        A process that exits is started again after a backoff (1 s, doubling to 30 s); one that fails
        within a minute of starting --max-restarts times in a row stops the capture with its exit code."""
        if (metadata_dir is None) == (zookeeper is None):
            raise UsageError("give --metadata-dir (a KRaft cluster) or --zookeeper (a ZooKeeper-mode cluster)")
        if metadata_dir is not None and not (metadata_dir / "quorum-state").exists() \
                and not any(metadata_dir.glob("*.log")):
            raise UsageError(f"{metadata_dir}: not a __cluster_metadata-0 directory")
        if max_restarts < 1:
            raise UsageError(f"--max-restarts {max_restarts}: must be at least 1")
        env = dict(os.environ)
        if metadata_dir is not None:
            env["CTRLAUDIT_METADATA_DIR"] = str(metadata_dir.resolve())
        else:
            assert zookeeper is not None  # one of the two: refused above otherwise
            env["CTRLAUDIT_ZOOKEEPER"] = zookeeper
            env.pop("CTRLAUDIT_METADATA_DIR", None)
        if bootstrap_server:
            env["CTRLAUDIT_BOOTSTRAP_SERVERS"] = bootstrap_server
        if cluster_id is not None:
            env["CTRLAUDIT_CLUSTER_ID"] = given_cluster_id(cluster_id)
        elif env.get("CTRLAUDIT_CLUSTER_ID"):
            given_cluster_id(env["CTRLAUDIT_CLUSTER_ID"], "CTRLAUDIT_CLUSTER_ID")
        if zookeeper is not None:  # one line now, not a worker restarted until it gives up

            probe = ZooKeeperWatch(zookeeper, timeout=connect_timeout())
            probe.require_kafka()
            # one cluster id for the workers and the sampler (its events must join the same chain)
            if not cluster_id and "CTRLAUDIT_CLUSTER_ID" not in env:
                found = probe.cluster_id()
                if found:
                    env["CTRLAUDIT_CLUSTER_ID"] = names.cluster_id(found, "the /cluster/id znode's id", zookeeper)
            probe.stop()
        if command_config:  # the workers and the sampler read the same file (an absolute path: their cwd may differ)
            env["CTRLAUDIT_COMMAND_CONFIG"] = str(command_config.resolve())
        if signing_key is not None:  # read now: a key that cannot be used is one line, not a worker restarted
            signers_of(signing_key)
            env["CTRLAUDIT_SIGNING_KEY"] = str(signing_key.resolve())
        if request_log_dir:
            env["CTRLAUDIT_REQUEST_LOG_DIRS"] = ",".join(_request_log_dir(d) for d in request_log_dir)
        _check_access(env)
        # no web server in any worker: two workers cannot both bind its port
        worker = [sys.executable, "-m", "services.capture", "worker", "-l", loglevel, "--without-web"]

        def start(cmd: list[str], roles: str | None = None, nice: int = 0) -> Callable[[], subprocess.Popen[bytes]]:
            e = dict(env, CTRLAUDIT_ROLES=roles) if roles else env
            return lambda: subprocess.Popen(cmd, env=e, preexec_fn=(lambda: os.nice(nice)) if nice else None)
        if inline_watch:
            children = [Child("capture worker", start(worker))]
        else:
            children = [Child("normalize worker", start(worker, "normalize")),
                        # its own consumer group (settings.worker_app_id)
                        Child("watch worker", start(worker, "watch", nice=10))]
        if sample_interval:
            env["CTRLAUDIT_SAMPLE_INTERVAL"] = str(sample_interval)
            children.append(Child("offset sampler", start([sys.executable, "-m", "services.capture", "sampler"])))
        raise typer.Exit(Supervisor(children, max_quick=max_restarts).run())

    @app.command("archive")
    @user_errors
    def archive(
        archive_dir: Path | None = typer.Option(None, "--archive-dir",
                                                help="Archive root (env CTRLAUDIT_ARCHIVE_DIR)."),
        bootstrap_server: str | None = BOOTSTRAP,
        command_config: Path | None = COMMAND_CONFIG,
        topic: str | None = EVENTS_TOPIC,
        flush_seconds: float | None = typer.Option(None, "--flush-seconds",
                                                   help="Finish files and commit every N s (60)."),
        idle_exit: float | None = typer.Option(None, "--idle-exit", help="Stop after N s without events."),
        signing_key: Path | None = SIGNING_KEY,
        trusted_key: list[str] = CHECKPOINT_KEY,
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Consume the events topic into hourly Avro files with manifests (fsync, then commit), and store capture's
        signed checkpoints (the checkpoints topic) beside them once the archive reaches them and their roots are
        the archive's; a checkpoint that does not match is not stored (one ERROR line) and the archiver goes on."""
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        s = Settings().replace(bootstrap_servers=bootstrap_server, events_topic=topic,
                               archive_dir=str(archive_dir) if archive_dir else None,
                               archive_flush_seconds=flush_seconds,
                               command_config=str(command_config) if command_config else None,
                               signing_key=str(signing_key) if signing_key else None)
        _ = s.signers  # a key that cannot be used: one line before anything starts
        trusted = [k for t in trusted_key for k in load_verifiers(t)]
        refuse_outputs({"--json": json_path}, force=force, inputs=[s.archive_dir])
        _check_access(s)
        a = run(s, idle_exit=idle_exit, trusted=trusted)
        out = Output(json_path)
        out.say(f"{s.archive_dir}: archived {a.appended:,} events ({a.skipped:,} already present); "
                f"{a.shelf.stored:,} checkpoint(s) of capture stored, {a.shelf.refused:,} refused")
        out.json({"archive_dir": str(s.archive_dir), "appended": a.appended, "already_present": a.skipped,
                  "checkpoints_stored": a.shelf.stored, "checkpoints_refused": a.shelf.refused})

    @app.command("verify")
    @user_errors
    def verify(
        archive: Path = typer.Argument(..., help="Archive root or one cluster's directory."),
        trusted_key: list[str] = TRUSTED_KEY, witness_key: list[str] = WITNESS_KEY,
        checkpoint: list[Path] = typer.Option(
            [], "--checkpoint", help="A signed checkpoint you hold from elsewhere (the checkpoints topic, a witness, "
                                     "an earlier audit): the archive must hold its tree (repeatable)."),
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Check the hash chain and the manifests; name the first missing/altered/reordered/inserted event.
        With --trusted-key, also every signed checkpoint: the Merkle root of the events at its size and its
        signature; events after the newest checkpoint are reported as not yet signed.

        Exit 0: intact; 1: broken; 2: not an archive."""
        refuse_outputs({"--json": json_path}, force=force, inputs=[archive])
        trust = trust_of(trusted_key, witness_key, checkpoint)
        try:
            read = VerifiedRead([archive], trust=trust)
            with bar("verifying", read.total_bytes) as progress:
                read.progress = progress
                for _ in read:
                    pass
        except ArchiveProblem as problem:  # names the file, and the event that is missing/altered/...
            out = Output(json_path)
            out.say(f"{problem}")
            out.say(f"{archive}: BROKEN: {problem.kind} at seq {problem.seq}" if problem.seq is not None
                    else f"{archive}: BROKEN: {problem.kind}")
            out.json({"archive": str(archive), "intact": False,
                      "problems": [{"kind": problem.kind, "file": problem.file, "seq": problem.seq,
                                    "event_id": problem.event_id, "cluster_id": problem.cluster_id,
                                    "message": str(problem)}]})
            raise typer.Exit(EXIT_FOUND) from None
        out = Output(json_path)
        for chain in read.chains.values():
            out.say(f"{archive}: OK: {chain.events:,} events in {chain.files} file(s), cluster {chain.cluster_id}, "
                    f"chain verified to seq {chain.verified_to}")
            signed = read.signed.get(chain.cluster_id)
            if signed is not None:
                for line in signed_lines(signed):
                    out.say(f"{archive}: cluster {chain.cluster_id}: {line}")
        caveat = accidents_only(trust)
        if caveat is not None:
            out.say(f"{archive}: {caveat}")
        out.json(lambda: {"archive": str(archive), "intact": True, "problems": [],
                          "signatures_checked": trust is not None,
                          "chains": [asdict(c) for c in read.chains.values()],
                          "signed": [asdict(s) | {"unsigned": s.unsigned} for s in read.signed.values()]})


def _request_log_dir(given: str) -> str:
    """--request-log-dir DIR or DIR=ID as the setting holds it (an absolute DIR); UsageError, one line, otherwise."""
    where, eq, n = given.rpartition("=")
    if not eq:
        where, n = given, ""
    elif not n.isdigit():
        raise UsageError(f"--request-log-dir {given!r}: not DIR or DIR=ID (a node id >= 0)")
    d = Path(where)
    if not d.is_dir():
        raise UsageError(f"--request-log-dir {given!r}: {where} is not a directory")
    if "," in str(d.resolve()):
        raise UsageError(f"--request-log-dir {given!r}: a directory whose path holds a comma cannot be given")
    return f"{d.resolve()}={n}" if n else str(d.resolve())


def _check_access(env_or_settings: dict[str, str] | Settings) -> None:
    """Read the --command-config file and try it on the brokers once, before any client starts: a bad file,
    refused credentials or a cluster that does not answer within CTRLAUDIT_CONNECT_TIMEOUT (15 s) is one
    line and exit 2 here, not a worker restarted until it gives up nor a consumer retrying forever."""
    s = env_or_settings
    if isinstance(s, dict):
        s = Settings().replace(bootstrap_servers=s.get("CTRLAUDIT_BOOTSTRAP_SERVERS"),
                               command_config=s.get("CTRLAUDIT_COMMAND_CONFIG"))
    require_reachable(s.bootstrap_servers, s.security)
