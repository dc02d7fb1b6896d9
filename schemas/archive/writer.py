"""ArchiveWriter: chain events and write them as hourly Avro object container files with manifests.

Layout: `<root>/<cluster_id>/events-YYYYMMDDTHH-<first seq, 12 digits>.avro`, one file per hour of
`event_time_ms` (UTC) and at most `max_events_per_file` events, each with a JSON manifest next to it.

Each event is Avro-encoded exactly once (see `encoder.py`): the same bytes give the chain hash and
the stored record. Container blocks are written here rather than by fastavro because fastavro would
encode every record a second time; the format is the Avro spec's: magic `Obj\\x01`, the metadata map
(`avro.schema`, `avro.codec`), a 16-byte sync marker, then blocks of (count, size, bytes, sync).
The sync marker is derived from the cluster and first seq, so the same events give byte-identical
files (and the same sha256) on every run.

Durability: a file is written as `<name>.part`, fsynced, renamed, then its manifest is written and
fsynced; only then is it reported done (`on_file_done`) and listed by readers.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import tempfile
import threading
import time
import zlib
from typing import Any
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from schemas import loader, names
from schemas.errors import ContractError
from schemas.events import ControllerEvent
from schemas.archive.fastencode import long_ as enc_long
from schemas.archive.chain import Chain
from schemas.archive.encoder import make_encoder
from schemas.archive.manifest import FileManifest, SourceMark, fsync_dir, write_manifest
from schemas.archive.listing import list_files
from schemas.archive.note import Signer
from schemas.archive.signed import LogSigner, Signed
from schemas.archive.verified import ArchiveProblem, NotAnArchive, VerifiedRead, verify

HOUR_MS = 3_600_000


def _archived_hashes(directory: Path, start: int) -> Iterator[str]:
    """The chain hashes of a cluster directory's events from seq `start` on, read verified."""
    for _, table in VerifiedRead([directory]):
        first = table.column("seq")[0].as_py() if table.num_rows else start
        yield from table.column("hash").to_pylist()[max(0, start - first):]


@contextlib.contextmanager
def _held_off() -> Iterator[None]:
    """Ctrl-C and SIGTERM held off (in the main thread, where Python handles them) while a finished file and its
    manifest are put in place: a file without its manifest would stop the next writer, which never overwrites."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    was = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, was)


class ArchiveExists(ContractError):
    """The output already holds an archive that the new events do not continue (exit 2)."""


@contextlib.contextmanager
def written_aside(root: str | Path, cluster_id: str) -> Iterator[Path]:
    """A new chain is written under a hidden directory beside `root` (yielded: write `<it>/<cluster_id>/`) and
    renamed to `<root>/<cluster_id>` only once whole: a writer interrupted (Ctrl-C, an error) leaves nothing under
    `root` that would verify and load as a whole, shorter history. The root's cluster directory must be absent or
    empty (refuse_non_empty)."""
    root = Path(root).absolute()
    refuse_non_empty(root, cluster_id)
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        # beside the root, on its filesystem (a rename cannot cross one): inside it when it is a mount point
        beside = root if root.is_dir() and os.stat(root).st_dev != os.stat(root.parent).st_dev else root.parent
        aside = Path(tempfile.mkdtemp(prefix=f".{root.name}.{cluster_id}.writing-", dir=beside))
    except OSError as exc:  # named as the user gave it: the hidden directory is ours, not theirs
        raise OSError(exc.errno, exc.strerror, str(root)) from None
    try:
        yield aside
        root.mkdir(exist_ok=True)
        try:
            os.rename(aside / cluster_id, root / cluster_id)  # onto an empty directory too; atomic
        except OSError as exc:
            raise ArchiveExists(f"{root / cluster_id}: cannot be put in place ({exc.strerror}); "
                                "refusing to overwrite an archive: choose an empty --out") from None
        fsync_dir(root)
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def refuse_non_empty(root: str | Path, cluster_id: str) -> None:
    """For writers that start a chain at seq 0 (simulate): the cluster's directory must not hold
    anything yet, and the root nothing but cluster directories."""
    root = Path(root)
    cluster_dir = names.child(root, cluster_id)
    if not root.exists():
        return
    if not root.is_dir():
        raise ArchiveExists(f"{root}: not a directory")
    loose = [p.name for p in root.iterdir() if not p.is_dir()]
    held = sorted(p.name for p in cluster_dir.iterdir()) if cluster_dir.is_dir() else []
    if loose or held:
        what = held or loose
        raise ArchiveExists(f"{cluster_dir if held else root}: not empty ({len(what)} file(s), e.g. {what[0]}); "
                            "refusing to overwrite an archive: choose an empty --out")


def continuation(root: str | Path, cluster_id: str) -> FileManifest | None:
    """Where an import into `root` may continue: None for a fresh cluster directory; else the
    verified archive's last manifest, whose last event the new events must contain (the caller
    appends only what follows it: `after`). A directory that does not verify is refused."""
    cluster_dir = names.child(root, cluster_id)
    if Path(root).exists() and not Path(root).is_dir():
        raise ArchiveExists(f"{root}: not a directory")
    if not cluster_dir.is_dir() or not any(cluster_dir.iterdir()):
        return None
    try:
        verify([cluster_dir])
    except (ArchiveProblem, NotAnArchive) as exc:
        raise ArchiveExists(f"{cluster_dir}: not empty, and not an intact archive to continue ({exc}); "
                            "refusing to write into it: choose an empty --out") from None
    return list_files(cluster_dir)[-1][1]


def after(events: Iterable[ControllerEvent], last: FileManifest, where: Path) -> Iterable[ControllerEvent]:
    """The events after the archived head `last` (matched by source position); ArchiveExists when
    the events never reach it: they are not the same history, and nothing is appended."""
    mark = last.last_source
    found = False
    for e in events:
        if found:
            yield e
        elif (e.source.kind.value, e.source.offset, e.source.index) == (mark.kind, mark.offset, mark.index):
            found = True
    if not found:
        raise ArchiveExists(f"{where}: holds an archive whose last event ({mark.kind} offset {mark.offset} index "
                            f"{mark.index}) is not among the new events: they do not continue it; nothing was "
                            "written (choose an empty --out)")
MAGIC = b"Obj\x01"
CODECS = ("null", "deflate")


def file_name(event_time_ms: int, first_seq: int) -> str:
    hour = time.strftime("%Y%m%dT%H", time.gmtime(event_time_ms // 1000))
    return f"events-{hour}-{first_seq:012d}.avro"


class _OpenFile:
    """The container file being written (internal)."""

    def __init__(self, directory: Path, name: str, sync: bytes, header: bytes) -> None:
        self.final = directory / name
        self.part = directory / (name + ".part")
        self.part.unlink(missing_ok=True)  # never written through a link left there
        self.fo = open(self.part, "xb")
        self.sha = hashlib.sha256()
        self.size = 0
        self.sync = sync
        self.block: list[bytes] = []
        self.block_bytes = 0
        self.count = 0
        self.first: ControllerEvent | None = None
        self.first_seq = 0
        self.prev_hash = ""
        self.last: ControllerEvent | None = None
        self.last_seq = 0
        self.last_hash = ""
        self.write(header)

    def write(self, data: bytes) -> None:
        self.fo.write(data)
        self.sha.update(data)
        self.size += len(data)


class ArchiveWriter:
    """Writes one cluster's chain. Not thread-safe. Use as a context manager or call close()."""

    def __init__(
        self,
        root: str | Path,
        cluster_id: str,
        *,
        next_seq: int = 0,
        head_hash: str = "",
        max_events_per_file: int = 1_000_000,
        codec: str = "null",
        block_bytes: int = 256 * 1024,
        on_file_done: Callable[[FileManifest], None] | None = None,
        fsync: bool = True,
        fast_encoder: bool | None = None,
        signers: Sequence[Signer] = (),
        keep_tree: bool = False,
    ) -> None:
        if codec not in CODECS:
            raise ValueError(f"codec {codec!r} not supported (choose from {CODECS})")
        if max_events_per_file < 1:
            raise ValueError("max_events_per_file must be at least 1")
        self.root = Path(root)
        self.cluster_id = cluster_id
        self.dir = names.child(self.root, cluster_id)  # a cluster id from input is never a path elsewhere
        self.dir.mkdir(parents=True, exist_ok=True)
        for stale in self.dir.glob("*.part"):  # an unfinished file of a crashed writer
            stale.unlink()
        self._chain = Chain(cluster_id, next_seq, head_hash, make_encoder(fast_encoder))
        self.max_events_per_file = max_events_per_file
        self.codec = codec
        self.block_limit = block_bytes
        self.on_file_done = on_file_done
        self.fsync = fsync
        self.files: list[FileManifest] = []
        schema = loader.current()
        self._schema = schema
        self._schema_json = json.dumps(schema.json, separators=(",", ":")).encode()
        self._file: _OpenFile | None = None
        self._hour = -1
        self._closed = False
        # with keys, every finished file ends in a signed checkpoint of the Merkle tree over the chain so far;
        # keep_tree keeps the tree without signing (an archiver checks checkpoints signed elsewhere against it)
        self._log: LogSigner | None = None
        if signers or keep_tree:
            self._log = LogSigner(self.dir, cluster_id, signers, next_seq, head_hash,
                                  lambda start: _archived_hashes(self.dir, start), fsync=fsync)
        self.checkpoints: list[Signed] = []

    @property
    def next_seq(self) -> int:
        """The seq the next event gets."""
        return self._chain.next_seq

    @property
    def head_hash(self) -> str:
        """The hash of the last event chained ("" before the first)."""
        return self._chain.head_hash

    def tree_root(self, size: int) -> bytes:
        """The Merkle tree hash of the first `size` events, which must be in finished files (signers or keep_tree)."""
        if self._log is None:
            raise ValueError("this writer keeps no Merkle tree (no signers, keep_tree not set)")
        return self._log.root(size)

    @classmethod
    def resume(cls, root: str | Path, cluster_id: str, **kwargs: Any) -> ArchiveWriter:
        """Continue the chain after the last finished file of `cluster_id` under `root`."""
        done = list_files(names.child(root, cluster_id))
        if not done:
            return cls(root, cluster_id, **kwargs)
        last = done[-1][1]
        return cls(root, cluster_id, next_seq=last.last_seq + 1, head_hash=last.chain_head_hash, **kwargs)

    # -- appending ----------------------------------------------------------------------------
    def append(self, event: ControllerEvent) -> str:
        """Chain and write one event; returns its hash.

        An unchained event (hash "") gets seq = next seq and prev_hash = the chain head. An
        already-chained one must fit the chain exactly (seq, prev_hash and hash), else ValueError.
        """
        if self._closed:
            raise ValueError("ArchiveWriter is closed")
        if event.cluster_id != self.cluster_id:
            raise ValueError(f"event of cluster {event.cluster_id!r} given to the writer of {self.cluster_id!r}")
        seq, prev = self._chain.next_seq, self._chain.head_hash
        digest, body = self._chain.append_body(event)
        hour = event.event_time_ms // HOUR_MS
        f = self._file
        if f is None or hour != self._hour or f.count >= self.max_events_per_file:
            if f is not None:
                self._finish()
            f = self._open(event, seq, prev)
            self._hour = hour
        f.block.append(body)
        f.block_bytes += len(body)
        f.count += 1
        f.last = event
        f.last_seq = seq
        f.last_hash = digest
        if self._log is not None:
            self._log.add(digest)
        if f.block_bytes >= self.block_limit:
            self._flush_block(f)
        return digest

    def extend(self, events: Iterable[ControllerEvent]) -> int:
        n = 0
        for e in events:
            self.append(e)
            n += 1
        return n

    def close(self) -> list[FileManifest]:
        """Finish the open file; returns the manifests of every file this writer finished."""
        if not self._closed:
            if self._file is not None:
                self._finish()
            self._closed = True
            if self._log is not None:
                if not self.checkpoints and self._log.size:  # resumed with nothing new: sign what is there
                    signed = self._log.sign()
                    if signed is not None:
                        self.checkpoints.append(signed)
                self._log.close()
        return self.files

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc_type is None:
            self.close()
        elif self._file is not None:  # leave no half-written file behind as if it were done
            self._file.fo.close()
            self._file.part.unlink(missing_ok=True)
            self._file = None
            self._closed = True
        if self._log is not None:
            self._log.close()

    # -- files --------------------------------------------------------------------------------
    def _open(self, event: ControllerEvent, seq: int, prev: str) -> _OpenFile:
        sync = hashlib.sha256(f"{self.cluster_id}|{seq}|{prev}".encode()).digest()[:16]
        meta = {b"avro.schema": self._schema_json, b"avro.codec": self.codec.encode()}
        header = [MAGIC, enc_long(len(meta))]
        for k, v in meta.items():
            header += [enc_long(len(k)), k, enc_long(len(v)), v]
        header += [b"\x00", sync]
        f = _OpenFile(self.dir, file_name(event.event_time_ms, seq), sync, b"".join(header))
        f.first, f.first_seq, f.prev_hash = event, seq, prev
        self._file = f
        return f

    def _flush_block(self, f: _OpenFile) -> None:
        if not f.block:
            return
        data = b"".join(f.block)
        if self.codec == "deflate":
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            data = c.compress(data) + c.flush()
        f.write(b"".join((enc_long(len(f.block)), enc_long(len(data)), data, f.sync)))
        f.block = []
        f.block_bytes = 0

    def _finish(self) -> None:
        f = self._file
        assert f is not None and f.first is not None and f.last is not None
        self._flush_block(f)
        f.fo.flush()
        if self.fsync:
            os.fsync(f.fo.fileno())
        f.fo.close()
        if f.final.exists():  # never replace a finished file: an archive is only ever appended to
            f.part.unlink(missing_ok=True)
            raise ArchiveExists(f"{f.final}: already exists; an archive file is never overwritten")
        manifest = FileManifest(
            file=f.final.name, cluster_id=self.cluster_id, count=f.count,
            first_seq=f.first_seq, last_seq=f.last_seq,
            first_source=SourceMark(f.first.source.kind.value, f.first.source.offset, f.first.source.index),
            last_source=SourceMark(f.last.source.kind.value, f.last.source.offset, f.last.source.index),
            first_event_time_ms=f.first.event_time_ms, last_event_time_ms=f.last.event_time_ms,
            sha256=f.sha.hexdigest(), size_bytes=f.size, prev_hash=f.prev_hash, chain_head_hash=f.last_hash,
            schema_version=self._schema.version, schema_fingerprint=self._schema.fingerprint_hex, codec=self.codec,
        )
        with _held_off():
            os.replace(f.part, f.final)
            if self.fsync:
                fsync_dir(self.dir)
            write_manifest(f.final, manifest, fsync=self.fsync)
        self._file = None
        self.files.append(manifest)
        if self._log is not None:
            signed = self._log.sign()
            if signed is not None:
                self.checkpoints.append(signed)
        if self.on_file_done is not None:
            self.on_file_done(manifest)
