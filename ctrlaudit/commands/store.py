"""`ctrlaudit load`: archive files into the DuckDB store."""
from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import typer

from ctrlaudit.commands.keys import signed_lines, trust_of
from ctrlaudit.commands.options import COMMAND_CONFIG, STORE, TRUSTED_KEY, WITNESS_KEY
from ctrlaudit.commands.output import FORCE, JSON_OUT, Output, refuse_outputs, store_files
from ctrlaudit.errors import UsageError, user_errors
from ctrlaudit.progress import archive_bytes, bar
from replay import gaps
from replay.store import Store
from services.capture.archiver import consume_to_archive
from services.capture.settings import Settings


def register(app: typer.Typer) -> None:
    @app.command("load")
    @user_errors
    def load(
        paths: list[Path] | None = typer.Argument(None, help="Archive files (.avro) or directories of them."),
        store: Path = STORE,
        bootstrap_server: str | None = typer.Option(None, "--bootstrap-server",
                                                    help="Read the events topic instead of files (with --topic)."),
        topic: str | None = typer.Option(None, "--topic", help="Events topic (default ctrlaudit.events)."),
        command_config: Path | None = COMMAND_CONFIG,
        workers: int | None = typer.Option(None, "--workers", min=1, help="Decoding threads (default: 2)."),
        allow_gaps: bool = typer.Option(False, "--allow-gaps",
                                        help="Load around missing or damaged files and record the stretches as "
                                             "gaps (every answer touching them says so) instead of refusing."),
        trusted_key: list[str] = TRUSTED_KEY, witness_key: list[str] = WITNESS_KEY,
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Load archive files into the store. Loading the same events twice adds nothing.

        With --trusted-key the archive's signed checkpoints are checked as it is read (as `verify --trusted-key`
        does); an archive that fails them loads nothing (exit 1)."""
        trust = trust_of(trusted_key, witness_key)
        if not paths and not bootstrap_server:
            raise UsageError("give archive paths, or --bootstrap-server (and --topic) to read the events topic")
        if command_config and not bootstrap_server:
            raise UsageError("--command-config is for reading the events topic: give --bootstrap-server too")
        refuse_outputs({"--json": json_path}, force=force, inputs=[*(paths or []), *store_files(store)])
        with tempfile.TemporaryDirectory(prefix="ctrlaudit-topic-") as tmp:
            if bootstrap_server:
                security = Settings().replace(command_config=str(command_config) if command_config else None).security
                got = consume_to_archive(bootstrap_server, topic or "ctrlaudit.events", Path(tmp), security=security)
                if got.appended == 0 and not paths:
                    raise UsageError(f"topic {topic or 'ctrlaudit.events'} at {bootstrap_server} holds no events")
                paths = [*(paths or []), Path(tmp)]

            assert paths is not None  # given, or the topic's events just read into tmp

            with _removed_if_new_and_failed(Store(store)) as s, bar("loading", archive_bytes(paths)) as progress:
                report = s.load(paths, workers=workers, allow_gaps=allow_gaps, progress=progress, trust=trust)
                unread = {cluster_id: gaps.stretches(s.con, cluster_id) for cluster_id in report.chains}

        seconds = report.decode_seconds + report.store_seconds
        rate = f" ({report.events_read / seconds:,.0f} events/s)" if seconds else ""
        out = Output(json_path)
        out.say(f"{store}: read {report.events_read:,} events from {len(report.files)} file(s), "
                f"added {report.events_added:,}, already present {report.duplicates:,}{rate}")
        for status in report.chains.values():
            out.say(status.describe())
        signed = report.read.signed if report.read else {}
        for cluster_id, st in signed.items():
            for line in signed_lines(st):
                out.say(f"cluster {cluster_id}: {line}")
        for cluster_id, stretches in unread.items():
            for line in gap_lines(stretches):
                out.say(f"cluster {cluster_id}: {line}")
        for cluster_id, seqs in report.unread_requests.items():
            out.say(f"cluster {cluster_id}: WARNING {len(seqs)} kept request(s) this build cannot read back (seq "
                    f"{', '.join(map(str, seqs[:5]))}{', ...' if len(seqs) > 5 else ''}): left out of who asked")
        left_out = [str(s) for s in (report.read.skipped if report.read else ())]
        for skipped in left_out:
            out.say(f"left out: {skipped}")
        out.json(lambda: {"store": str(store), "files": len(report.files), "events_read": report.events_read,
                          "events_added": report.events_added, "already_present": report.duplicates,
                          "seconds": round(seconds, 3), "chains": [asdict(c) for c in report.chains.values()],
                          "left_out": left_out, "unread_requests": report.unread_requests,
                          "capture_gaps": {c: [g.as_json() for g in st] for c, st in unread.items() if st}})


SHOWN_GAPS = 3


def gap_lines(stretches: list[gaps.CaptureStretch]) -> list[str]:
    """What a load says of the stretches its history does not know: a reader learns of them here, before any
    answer, not only when an answer happens to fall inside one."""
    if not stretches:
        return []
    lines = [f"{len(stretches):,} capture gap(s) in its history: answers inside them say WARNING "
             f"(`ctrlaudit timeline` shows them in place)"]
    lines += [f"  {g.describe()}" for g in stretches[:SHOWN_GAPS]]
    if len(stretches) > SHOWN_GAPS:
        lines.append(f"  ... and {len(stretches) - SHOWN_GAPS:,} more")
    return lines


@contextlib.contextmanager
def _removed_if_new_and_failed(s: Store) -> Iterator[Store]:
    """Close the store; when this load created it and failed (bad input, Ctrl-C), remove the empty store
    file too, so that a failed load leaves the directory as it was. Safe: the layout was made under this
    process's write lock, and a load is one transaction, so the file holds nothing else."""
    try:
        yield s
    except BaseException:
        s.close()
        if s.created:
            for leftover in (s.path, s.path.with_name(s.path.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    s.close()
