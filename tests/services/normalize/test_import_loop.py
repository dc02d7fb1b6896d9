"""The one import loop: what it counts and names in the report, where it stops, which errors refuse the input."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.errors import ContractError
from schemas.events import ControllerEvent
from services.normalize.imports import BadImport, ImportReport, Made, import_loop
from services.zookeeper.normalizer import ZooKeeperNormalizer


class Damaged(ContractError):
    pass


def _gap(n: ZooKeeperNormalizer, zxid: int) -> ControllerEvent:
    return n.gap(zxid, zxid, f"zxid {zxid} not read", 1_000)


def test_records_files_gaps_and_events_are_counted_as_the_source_says(tmp_path: Path) -> None:
    n = ZooKeeperNormalizer("c", clock=lambda: 0)
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_bytes(b"x" * 7)
    second.write_bytes(b"y" * 3)
    fed: list[int] = []
    progress: list[int] = []

    def feed(record: int) -> list[ControllerEvent]:
        fed.append(record)
        return [_gap(n, record)] * (record % 2)  # odd records make one event

    report = ImportReport()
    steps = [Made(files=["snapshot"]), first, 1, 2, Made([_gap(n, 10)], ["a gap"], counted=False), second, 3,
             Made([_gap(n, 11)], ["another"])]
    events = list(import_loop(steps, feed, report, progress.append))
    assert fed == [1, 2, 3] and len(events) == 4
    assert report.files == ["snapshot", str(first), str(second)] and progress == [7]  # the one before, when begun
    assert (report.records, report.events, report.gaps) == (3, 3, ["a gap", "another"])


def test_until_stops_after_the_first_record_it_holds_for() -> None:
    report = ImportReport()
    events = list(import_loop([1, 2, 3], lambda r: [], report, until=lambda r: r == 2))
    assert events == [] and report.records == 2


def test_an_error_of_the_source_is_a_bad_import_others_pass_through() -> None:
    def steps(error: Exception) -> object:
        yield 1
        raise error

    def refuse(exc: Exception) -> str | None:
        return f"refused: {exc}" if isinstance(exc, Damaged) else None

    with pytest.raises(BadImport, match="^refused: f, byte 3$"):
        list(import_loop(steps(Damaged("f, byte 3")), lambda r: [], ImportReport(), refuse=refuse))
    with pytest.raises(ContractError, match="^other$") as raised:
        list(import_loop(steps(ContractError("other")), lambda r: [], ImportReport(), refuse=refuse))
    assert not isinstance(raised.value, BadImport)
    with pytest.raises(BadImport, match="^as it was$"):  # an import's own refusal is kept as it is
        list(import_loop(steps(BadImport("as it was")), lambda r: [], ImportReport(), refuse=refuse))
