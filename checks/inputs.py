"""What the user pointed `ctrlaudit check` at: Avro archive files (or directories of them), or one
DuckDB store built by replay/. Every problem a user can cause becomes one BadInput with one line.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.archive import flat
from schemas.errors import ContractError
from schemas.archive.signatures import Trust
from schemas.archive.verified import Gap, VerifiedRead, read_all

AVRO_MAGIC = b"Obj\x01"
DUCKDB_MAGIC = b"DUCK"  # at byte offset 8 of a DuckDB database file


class BadInput(ContractError):
    """Input that cannot be checked: exit code 2, one line."""


@dataclass(frozen=True)
class Inputs:
    archives: tuple[Path, ...] = ()  # the archive files
    store: Path | None = None
    roots: tuple[Path, ...] = ()  # the files and directories as named: what the verified read is given
    uris: tuple[str, ...] = ()  # or: archives on a Hadoop filesystem, as URIs (Spark only: checks.hadoop)

    def describe(self) -> list[str]:
        if self.uris:
            return list(self.uris)
        return [str(self.store)] if self.store else [str(p) for p in (self.roots or self.archives)]

    def sources(self) -> tuple[Path, ...]:
        """What to read: the named directories (so a manifest left without its file is seen) and files."""
        return self.roots or self.archives


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(path: str | Path) -> bool:
    """A Hadoop URI (scheme://…: hdfs, s3a, file, …) rather than a local path. (A pathlib.Path cannot
    hold one: it folds "//" into "/", which is why `ctrlaudit check` takes its inputs as strings.)"""
    return isinstance(path, str) and bool(_SCHEME.match(path))


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
    if any(is_uri(p) for p in paths):
        # Spark lists and reads these through Hadoop (checks.hadoop); a local path among them joins
        # them as a file:// URI, so that one verified read covers all of them (one chain across them)
        local = [Path(p) for p in paths if not is_uri(p)]
        for path in local:
            if not path.exists():
                raise BadInput(f"{path}: no such file or directory")
        return Inputs(uris=tuple([str(p) for p in paths if is_uri(p)] + [p.resolve().as_uri() for p in local]))
    archives: list[Path] = []
    roots: list[Path] = []
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
            roots.append(path)
            continue
        kind = _kind_of(path)
        if kind == "archive":
            archives.append(path)
            roots.append(path)
        elif kind == "store":
            stores.append(path)
        elif path.stat().st_size == 0:
            raise BadInput(f"{path}: empty file")
        else:
            raise BadInput(f"{path}: neither an Avro archive nor a ctrlaudit DuckDB store")
    if stores and (archives or len(stores) > 1):
        raise BadInput("a store must be checked on its own, not together with other inputs")
    return Inputs(archives=tuple(archives), store=stores[0] if stores else None, roots=tuple(roots))


def refuse_trust_for_store(trust: Trust | None, store: Path) -> None:
    """A store holds rows, not the archive's checkpoints: signatures are checked when the archive is read."""
    if trust is not None:
        raise BadInput(f"{store}: --trusted-key checks an archive's signed checkpoints, and a store holds none: "
                       "give the archive, or load it with `ctrlaudit load --trusted-key`")


def archives_to_arrow(archives: Sequence[Path], allow_gaps: bool = False) -> pa.Table:
    """The flat events table of the archives (verified: see read_archives)."""
    return read_archives(archives, allow_gaps)[0]


def read_archives(archives: Sequence[Path], allow_gaps: bool = False,
                  progress: Callable[[int], None] | None = None,
                  trust: Trust | None = None) -> tuple[pa.Table, VerifiedRead]:
    """The flat events table of the archives, read through schemas.archive.verified (ArchiveProblem on a
    file that does not verify, unless allow_gaps), and the read (its chains and gaps)."""
    table, read = read_all(archives, allow_gaps=allow_gaps, progress=progress, trust=trust)
    if table.num_rows == 0:
        raise BadInput(f"{', '.join(map(str, archives))}: archive holds no verified events")
    return table, read


def chains_of(read: VerifiedRead) -> tuple[list[Gap], list[dict[str, Any]]]:
    """The gaps and the per-cluster chain summaries a report carries."""
    gaps = [g for c in read.chains.values() for g in c.gaps]
    return gaps, [chain_summary(c.cluster_id, c.verified_to, c.last_seq, c.gaps, c.first_seq, c.head_hash)
                  for c in read.chains.values()]


def chain_summary(cluster_id: str, verified_to: int, last_seq: int, gaps: Sequence[Gap], first_seq: int,
                  head_hash: str) -> dict[str, Any]:
    """One cluster's entry of a report's `chains`. It also binds the verdict to the history judged:
    seq first_seq..last_seq, and the chain's hash at last_seq (which commits to every event up to it, so it
    names this history wherever its files or store are copied); `ctrlaudit report --check-json` compares
    it with the store it reports on."""
    return {"cluster_id": cluster_id, "first_seq": first_seq, "last_seq": last_seq, "head_hash": head_hash,
            "verified_to": verified_to,
            "gaps": [{"from_seq": g.from_seq, "to_seq": g.to_seq, "reason": g.reason} for g in gaps]}


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
