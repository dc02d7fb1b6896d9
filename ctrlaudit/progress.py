"""Progress bars for the long commands (load, verify, check, import): rich, on standard error, and
only when it is a terminal, so logs and pipes get the result lines alone."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from checks.inputs import is_uri


@contextmanager
def bar(description: str, total: int | None, unit: str = "bytes") -> Iterator[Callable[[int], None] | None]:
    """A callback advancing the bar by n (of `total`), or None when standard error is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return

    amount = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
    with Progress(TextColumn("{task.description}"), BarColumn(), amount, TimeElapsedColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n: progress.advance(task, n)


def archive_bytes(paths: Sequence[str | Path]) -> int | None:
    """Bytes of the archive files under `paths` (the total of a read's bar); None (a bar without a
    total) when one is a URI: its size is known only once the driver has listed it through Hadoop."""
    if any(is_uri(p) for p in paths):
        return None
    total = 0
    for p in map(Path, paths):
        if p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*.avro") if f.is_file())
        elif p.is_file():
            total += p.stat().st_size
    return total
