"""A simulated Kafka KRaft controller: seeded histories of ControllerEvents, optionally with breaches.

    from services.simulator import SimConfig, simulate, simulate_to_archive
    for event in simulate(SimConfig(seed=7, events=50_000)): ...
    result = simulate_to_archive("out/", SimConfig(seed=7), inject=[("leader_in_isr", 20_000)])
    result.breaches  # ground truth: [BreachRecord(invariant, seq, event_id, topic, partition, description)]

Events come unchained (seq set, prev_hash/hash empty); the ArchiveWriter chains them as it writes.
Memory is bounded by the cluster model, not by the number of events (but for the image's mark of each
deleted topic: replay's builder remembers a topic as gone, ~150 of them per 200k events with topic churn).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypedDict, Unpack

from schemas.archive.manifest import FileManifest
from schemas.events import ControllerEvent
from schemas.archive.note import Signer
from schemas.archive.writer import ArchiveWriter
from services.simulator.breaches import Injector
from services.simulator.config import BREACHES, BreachRecord, SimConfig, SimResult
from services.simulator.late import KRAFT_ONLY, LATE_MS, LIVENESS_BREACHES
from services.simulator.placement import (
    assign_replicas_to_brokers,
    assign_replicas_to_brokers_rack_aware,
    rack_alternated_broker_list,
)
from services.simulator.workload import Simulator

__all__ = [
    "BREACHES", "KRAFT_ONLY", "LATE_MS", "LIVENESS_BREACHES", "BreachRecord", "SimConfig", "SimResult", "Simulator",
    "assign_replicas_to_brokers", "assign_replicas_to_brokers_rack_aware", "rack_alternated_broker_list", "simulate", "simulate_to_archive",
    "write_archive",
]


class WriterOptions(TypedDict, total=False):
    """ArchiveWriter's keyword options."""

    next_seq: int
    head_hash: str
    max_events_per_file: int
    codec: str
    block_bytes: int
    on_file_done: Callable[[FileManifest], None] | None
    fsync: bool
    fast_encoder: bool | None
    signers: Sequence[Signer]


class Simulation:
    """One run: iterate `events()`; afterwards `breaches` holds the ground truth of what was emitted."""

    def __init__(self, config: SimConfig, inject: Sequence[tuple[str, int]] = ()) -> None:
        for name, index in inject:
            if index >= config.events:
                raise ValueError(f"breach {name} at index {index} is past the end ({config.events} events)")
        self.config = config
        self.sim = Simulator(config)
        self.injector = Injector(inject)
        self.sim.injector = self.injector if inject else None
        self.emitted = 0

    def events(self) -> Iterator[ControllerEvent]:
        for e in self.sim.events():
            self.emitted += 1
            yield e

    @property
    def breaches(self) -> list[BreachRecord]:
        return [b for b in self.injector.records if b.seq < self.emitted]

    @property
    def not_injected(self) -> list[tuple[str, int]]:
        done = {(b.invariant, b.seq) for b in self.breaches}
        missing = list(self.injector.pending)
        missing += [(b.invariant, b.seq) for b in self.injector.records if (b.invariant, b.seq) not in done]
        return missing


def simulate(config: SimConfig, inject: Sequence[tuple[str, int]] = ()) -> Iterator[ControllerEvent]:
    """The history of `config` (exactly `config.events` events). For ground truth use Simulation."""
    return Simulation(config, inject).events()


def write_archive(out_dir: str | Path, run: Simulation, **writer_options: Unpack[WriterOptions]) -> SimResult:
    """Run `run` to the end, writing its events under out_dir/<cluster_id>/."""
    started = time.perf_counter()
    result = SimResult(run.config)
    with ArchiveWriter(out_dir, run.config.cluster, **writer_options) as writer:
        for e in run.events():
            writer.append(e)
        result.files = writer.close()
        result.chain_head_hash = writer.head_hash
        result.checkpoint = writer.checkpoints[-1].checkpoint if writer.checkpoints else None
    result.events = run.emitted
    result.breaches = run.breaches
    result.not_injected = run.not_injected
    result.seconds = time.perf_counter() - started
    return result


def simulate_to_archive(out_dir: str | Path, config: SimConfig, inject: Sequence[tuple[str, int]] = (),
                        **writer_options: Unpack[WriterOptions]) -> SimResult:
    """The CLI's one-liner: simulate `config` with `inject` breaches and archive it."""
    return write_archive(out_dir, Simulation(config, inject), **writer_options)
