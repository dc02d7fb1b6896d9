"""`ctrlaudit simulate`: a deterministic controller history written as archive files."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer
from rich.console import Console

from ctrlaudit.commands.keys import signers_of
from ctrlaudit.commands.options import SIGNING_KEY, given_cluster_id
from ctrlaudit.commands.output import FORCE, JSON_OUT, Output, is_stdout, refuse_outputs, write_text
from ctrlaudit.errors import UsageError, user_errors
from schemas.archive.note import b64encode
from schemas.archive.writer import written_aside
from services.simulator import BREACHES, SimConfig, simulate_to_archive


def _parse_inject(values: list[str], events: int) -> list[tuple[str, int]]:
    out = []
    for v in values:
        name, sep, index = v.partition("@")
        if not sep or not index.isdigit():
            raise UsageError(f"--inject {v!r}: expected NAME@EVENT_INDEX, e.g. leader_in_isr@5000")
        if name not in BREACHES:
            raise UsageError(f"--inject {v!r}: unknown invariant {name!r}; known: {', '.join(BREACHES)}")
        if int(index) >= events:
            raise UsageError(f"--inject {v!r}: event index {int(index)} is past the end of a history of {events} "
                             f"events (0..{events - 1})")
        out.append((name, int(index)))
    return out


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    @user_errors
    def simulate(
        out: Path = typer.Option(..., "--out", help="Archive directory to write (files go under <out>/<cluster>/)."),
        seed: int = typer.Option(0, "--seed", help="Same seed, same history, byte for byte."),
        events: int = typer.Option(10_000, "--events", min=1, help="Length of the history."),
        brokers: int = typer.Option(6, "--brokers", min=1, help="Brokers in the cluster (ids 0..N-1)."),
        racks: int = typer.Option(3, "--racks", min=0, help="Racks the brokers are spread over; 0 = brokers without racks."),
        topics: int = typer.Option(8, "--topics", min=1, help="Topics created at the start."),
        partitions: int = typer.Option(12, "--partitions", min=1, help="Partitions per topic."),
        replication_factor: int = typer.Option(3, "--replication-factor", min=1, help="Replicas per partition."),
        metadata_version: int = typer.Option(21, "--metadata-version", help="metadata.version feature level."),
        cluster_id: str | None = typer.Option(None, "--cluster-id", help="Default: sim-<seed>."),
        inject: list[str] = typer.Option([], "--inject", help="Breach NAME@EVENT_INDEX (repeatable)."),
        truth: Path | None = typer.Option(None, "--truth", help="Write the injected breaches (ground truth) as JSON."),
        zookeeper: bool = typer.Option(False, "--zookeeper",
                                       help="A ZooKeeper-mode cluster's history: sourced ZOOKEEPER, no "
                                            "metadata.version, brokers registered or gone."),
        signing_key: Path | None = SIGNING_KEY,
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Simulate Kafka's controller (placement, elections, ISR, reassignments, failover, HW/LEO)."""
        breaches = _parse_inject(inject, events)
        signers = signers_of(signing_key)
        refuse_outputs({"--json": json_path, "--truth": truth}, force=force, directories={"--out": out})
        try:
            config = SimConfig(seed=seed, events=events, brokers=brokers, racks=racks, topics=topics,
                               partitions=partitions, replication_factor=replication_factor,
                               metadata_version=metadata_version, cluster_id=given_cluster_id(cluster_id),
                               zookeeper=zookeeper)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

        console = Console(stderr=True)
        with written_aside(out, config.cluster) as aside, console.status(f"simulating {events:,} events"):
            result = simulate_to_archive(aside, config, inject=breaches, signers=signers)
        said = Output(json_path, stdout_taken=is_stdout(truth))
        said.say(f"cluster {config.cluster}: {result.events:,} events in {len(result.files)} file(s) under "
                 f"{out / config.cluster} ({result.events_per_second:,.0f} events/s)")
        said.say(f"chain head {result.chain_head_hash}")
        if result.checkpoint is not None:
            said.say(f"signed by {', '.join(s.name for s in signers)}: checkpoint of {result.checkpoint.size:,} "
                     f"events, root {b64encode(result.checkpoint.root_hash)}")
        for b in result.breaches:
            where = f" {b.topic}-{b.partition}" if b.topic is not None else ""
            said.say(f"injected {b.invariant} at seq {b.seq}{where}: {b.description}")
        for name, index in result.not_injected:
            said.say(f"NOT injected {name}@{index}: no suitable event before the end of the history")
        said.json(lambda: {"cluster_id": config.cluster, "events": result.events, "out": str(out / config.cluster),
                           "files": [str(out / config.cluster / f.file) for f in result.files],
                           "chain_head": result.chain_head_hash,
                           "injected": [asdict(b) for b in result.breaches],
                           "not_injected": [f"{n}@{i}" for n, i in result.not_injected]})
        if truth is not None:
            write_text(truth, json.dumps([asdict(b) for b in result.breaches], indent=2) + "\n")
