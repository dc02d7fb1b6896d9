"""What the user pointed `ctrlaudit check` at: Avro archive files (or directories of them), or one
DuckDB store built by replay/. Every problem a user can cause becomes one BadInput with one line.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas import fastflat, flat
from schemas.container import iter_records
from schemas.errors import ContractError

AVRO_MAGIC = b"Obj\x01"
DUCKDB_MAGIC = b"DUCK"  # at byte offset 8 of a DuckDB database file
# replay.store.LAYOUT_VERSION this build reads (checks does not import replay; a test pins the two).
STORE_LAYOUT_VERSION = 1


class BadInput(ContractError):
    """Input that cannot be checked: exit code 2, one line."""


@dataclass(frozen=True)
class Inputs:
    archives: tuple[Path, ...] = ()
    store: Path | None = None

    def describe(self) -> list[str]:
        return [str(self.store)] if self.store else [str(p) for p in self.archives]


def _kind_of(path: Path) -> str:
    with open(path, "rb") as fo:
        head = fo.read(16)
    if head.startswith(AVRO_MAGIC):
        return "archive"
    if head[8:12] == DUCKDB_MAGIC:
        return "store"
    return "other"


def resolve(paths: Sequence[str | Path]) -> Inputs:
    """Sort the given paths into archive files or one store; directories yield their *.avro files."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise BadInput("no input given: name an archive file, a directory of archives, or a store")
    archives: list[Path] = []
    stores: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise BadInput(f"{path}: no such file or directory")
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.avro") if p.is_file())
            if not found:
                raise BadInput(f"{path}: directory holds no *.avro archive files")
            archives.extend(found)
            continue
        kind = _kind_of(path)
        if kind == "archive":
            archives.append(path)
        elif kind == "store":
            stores.append(path)
        elif path.stat().st_size == 0:
            raise BadInput(f"{path}: empty file")
        else:
            raise BadInput(f"{path}: neither an Avro archive nor a ctrlaudit DuckDB store")
    if stores and (archives or len(stores) > 1):
        raise BadInput("a store must be checked on its own, not together with other inputs")
    return Inputs(archives=tuple(archives), store=stores[0] if stores else None)


def iter_flat_rows(archives: Sequence[Path]) -> Iterator[tuple[Any, ...]]:
    for path in archives:
        for record in iter_records(path):
            yield flat.flatten(record)


def archives_to_arrow(archives: Sequence[Path]) -> pa.Table:
    """The flat events table of the archives (CodecError on a corrupt file, BadInput when empty)."""
    tables = [_archive_table(p) for p in archives]  # fastflat
    table = pa.concat_tables(tables) if tables else flat.to_arrow([])
    if table.num_rows == 0:
        raise BadInput(f"{', '.join(map(str, archives))}: archive holds no events")
    return table


def _archive_table(path: Path) -> pa.Table:
    """fastflat: the native decoder for a file whose writer schema is exactly v1 (codec null or
    deflate), else the Python path (flat.flatten, the reference)."""
    if fastflat.accepts(path):
        try:
            return fastflat.decode_file(path)
        except fastflat.Unsupported:
            pass
    return flat.to_arrow(iter_flat_rows([path]))


def check_layout(columns: Sequence[tuple[str, str]], where: str) -> None:
    """A store's `events` table must have exactly flat.py's columns (names, in order)."""
    names = [c for c, _ in columns]
    if names == flat.COLUMN_NAMES:
        return
    missing = [c for c in flat.COLUMN_NAMES if c not in names]
    extra = [c for c in names if c not in flat.COLUMN_NAMES]
    detail = []
    if missing:
        detail.append(f"missing {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
    if extra:
        detail.append(f"unknown {', '.join(extra[:5])}{' …' if len(extra) > 5 else ''}")
    if not detail:
        detail.append("columns in another order")
    raise BadInput(f"{where}: store of another layout version ({'; '.join(detail)}); rebuild it with this ctrlaudit")
