"""What every offline import shares: the one error an import refuses its input with, and the report it keeps of
what it read (records, files, gaps, the cluster id it took)."""
from __future__ import annotations

from dataclasses import dataclass, field

from schemas.errors import ContractError


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
