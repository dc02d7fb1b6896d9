"""What every offline import shares: the one error an import refuses its input with, the report it keeps of what it
read (records, files, gaps, the cluster id it took), and the one loop that reads a source into events."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from schemas.errors import ContractError
from schemas.events import ControllerEvent


class BadImport(ContractError):
    """The given files do not form a history that can be imported."""


@dataclass
class ImportReport:
    files: list[str] = field(default_factory=list)
    records: int = 0
    events: int = 0
    gaps: list[str] = field(default_factory=list)
    partial_tail: str | None = None
    aborted_transactions: int = 0
    passed_over: dict[str, str] = field(default_factory=dict)  # snapshots not used, not being whole: file -> why


@dataclass(frozen=True, slots=True)
class Made:
    """What a source's reading says beside its records: events its normalizer made of no record (a gap, a snapshot's
    image or end, what the end of the input settles), the gaps the report names for them, files read whole at once."""
    events: Sequence[ControllerEvent] = ()
    gaps: Sequence[str] = ()
    files: Sequence[str] = ()
    counted: bool = True  # the events count in the report's events (a KRaft import counts no gap among them)


R = TypeVar("R")


def import_loop(steps: Iterable[Path | Made | R], feed: Callable[[R], Iterable[ControllerEvent]], report: ImportReport,
                progress: Callable[[int], None] | None = None, until: Callable[[R], bool] | None = None,
                refuse: Callable[[Exception], str | None] = lambda exc: None) -> Iterator[ControllerEvent]:
    """The events of a source read in order: `steps` are its files (each named in the report as it is begun;
    `progress(bytes)` of the one before), its records (each fed to the normalizer by `feed`, counted with the events
    it makes) and what the reading made beside them (`Made`). `until`: stop after the first record it holds true for.
    `refuse`: why the input cannot be imported, for an error of the source's reading or decoding (None: not such
    an error): a BadImport with that text, naming the file and position as the error does."""
    previous: Path | None = None
    try:
        for step in steps:
            if isinstance(step, Path):
                if progress is not None and previous is not None:
                    progress(previous.stat().st_size)
                report.files.append(str(step))
                previous = step
            elif isinstance(step, Made):
                report.files += step.files
                report.gaps += step.gaps
                if step.counted:
                    report.events += len(step.events)
                yield from step.events
            else:
                report.records += 1
                for event in feed(step):
                    report.events += 1
                    yield event
                if until is not None and until(step):
                    return
    except ContractError as exc:
        why = None if isinstance(exc, BadImport) else refuse(exc)
        if why is None:
            raise
        raise BadImport(why) from None
