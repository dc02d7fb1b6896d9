"""The one read path of archives: every command that reads archive files (load, check on both
engines, verify, import into an existing archive) reads them here, and nothing leaves this module
unchecked.

As it reads, it checks each file against its manifest (sha256 of the bytes, count, first and last
seq, the hash before the first event and the chain head), every event's hash (sha256 of prev_hash
and its body), every link (prev_hash = the hash of the event before), the chain across files (seq
gaps, a file that does not continue the one before), duplicates (the same file, or the same events,
given twice count once) and forks (two different events at one seq).

A problem stops the read with one ArchiveProblem naming the file and the seq. With
`allow_gaps=True` the stretch is recorded instead (a `Gap`: a file with a problem is left out whole,
missing seqs are missing) and reading goes on; every consumer then says so in its answers.
`ClusterChain.verified_to` is the last seq up to which the chain is verified unbroken from seq 0.

The native decoder (schemas.archive.fastflat, with OpenSSL) checks hashes and links while it decodes; the
Python path (schemas.archive.container + schemas.archive.chain.record_hash) is the reference and the fallback.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.compute as pc

from schemas import loader, names
from schemas.archive import chainbreak, fastflat, flat
from schemas.codec import READ_OPTIONS
from schemas.archive.chain import record_hash
from schemas.archive.container import iter_records, open_container
from schemas.errors import ChainBreak, CodecError, ContractError
from schemas.archive.signatures import SignatureCheck, SignatureProblem, SignedStatus, Trust
from schemas.archive.manifest import MANIFEST_SUFFIX, FileManifest, ManifestError, read_manifest

# Files decoded ahead of the one being handed on, besides one per worker (memory: each is at most
# one archive file's rows, ~2.2x its bytes).
READ_AHEAD = 0


class ArchiveProblem(ContractError):
    """The archive is not what its manifests and hash chain say: one line naming the file and seq."""

    def __init__(self, kind: str, file: str, seq: int | None, message: str, cluster_id: str = "",
                 event_id: str | None = None) -> None:
        self.kind = kind  # missing | altered | unchained | reordered | inserted | fork | manifest | unreadable |
        # signature
        self.event_id = event_id  # the event named, when there is one (altered, inserted, reordered)
        self.file = file
        self.seq = seq
        self.cluster_id = cluster_id
        super().__init__(f"{file}: {kind}: {message}")


class NotAnArchive(ContractError):
    """The paths name no archive at all (bad input, not a broken archive)."""


@dataclass(frozen=True)
class Gap:
    """seq from_seq..to_seq (inclusive) of a cluster are not verified data: missing, or left out."""

    cluster_id: str
    from_seq: int
    to_seq: int
    reason: str

    def describe(self) -> str:
        span = f"seq {self.from_seq}" if self.from_seq == self.to_seq else f"seq {self.from_seq}..{self.to_seq}"
        return f"{span} not verified ({self.reason})"


@dataclass
class ClusterChain:
    """What the read established about one cluster's chain."""

    cluster_id: str
    files: int = 0
    events: int = 0
    duplicates: int = 0  # events given more than once (counted once)
    first_seq: int = -1  # the first seq of the files read (-1: none)
    last_seq: int = -1
    head_hash: str = ""
    verified_to: int = -1  # the chain is verified unbroken from seq 0 to here (-1: not from seq 0)
    gaps: list[Gap] = field(default_factory=list)


@dataclass(frozen=True)
class ArchiveFile:
    path: Path
    manifest: FileManifest

    @property
    def name(self) -> str:
        return self.path.name


def _expand(paths: Iterable[str | Path]) -> tuple[list[Path], list[Path]]:
    """(avro files, manifests) the paths name; a directory stands for everything under it."""
    avros: dict[Path, None] = {}
    manifests: dict[Path, None] = {}
    for raw in paths:
        p = Path(raw)
        if p.is_dir():  # a listing of copied files: each name a plain one, or one line naming it (never two)
            for f in sorted(p.rglob("*.avro")):
                names.file_name(f.name, "archive file", str(p))
                avros[_absolute(f)] = None
            for f in sorted(p.rglob("*.avro" + MANIFEST_SUFFIX)):
                names.file_name(f.name, "manifest", str(p))
                manifests[_absolute(f)] = None
        elif p.name.endswith(MANIFEST_SUFFIX):
            manifests[_absolute(p)] = None
        elif p.exists():
            m = p.with_name(p.name + MANIFEST_SUFFIX)
            if m.exists():
                manifests[_absolute(m)] = None
            elif p.is_file() and not _is_container(p):  # named by the user, and no archive file at all
                raise NotAnArchive(f"{p}: not an Avro object container file (and no manifest next to it)")
            avros[_absolute(p)] = None
        else:
            raise NotAnArchive(f"{p}: no such file or directory")
    return list(avros), list(manifests)


def _absolute(path: Path) -> Path:
    """`path` made absolute through its directory only: a file's own name is the archive's, even when
    the file is a symbolic link (read_manifest refuses a manifest that is one)."""
    return path.parent.resolve() / path.name


def _is_container(path: Path) -> bool:
    try:
        with open(path, "rb") as fo:
            return fo.read(4) == b"Obj\x01"
    except OSError:
        return False


def archive_files(paths: Iterable[str | Path], allow_gaps: bool = False) -> tuple[list[ArchiveFile], list[str]]:
    """The files the paths name, each with its manifest, and (allow_gaps) the problems left out.

    An Avro file without a manifest (deleted, or the writer stopped before writing it) and a
    manifest without its file are problems: a reader that skipped them would answer from a
    history with a hole and not know it."""
    avros, manifests = _expand(paths)
    found: list[ArchiveFile] = []
    skipped: list[str] = []

    def problem(p: ArchiveProblem) -> None:
        if not allow_gaps:
            raise p
        skipped.append(str(p))

    described = set()
    for m in manifests:
        avro = m.with_name(m.name[: -len(MANIFEST_SUFFIX)])
        try:
            manifest = read_manifest(m)
        except ManifestError as exc:
            problem(ArchiveProblem("manifest", m.name, None, str(exc).split(": ", 1)[-1]))
            described.add(avro)
            continue
        described.add(avro)
        if avro not in set(avros) and not avro.exists():
            problem(ArchiveProblem("missing", avro.name, manifest.first_seq,
                                   f"the file is gone but its manifest remains: seq {manifest.first_seq}.."
                                   f"{manifest.last_seq} of cluster {manifest.cluster_id} are missing",
                                   manifest.cluster_id))
            continue
        if not avro.is_file():  # a FIFO or a device would block or never end: nothing is read from it
            problem(ArchiveProblem("unreadable", avro.name, manifest.first_seq, "not a regular file (a FIFO, a "
                                   "device or a directory); nothing is read from it", manifest.cluster_id))
            continue
        found.append(ArchiveFile(avro, manifest))
    by_dir: dict[Path, set[str]] = {}
    for f in found:
        by_dir.setdefault(f.path.parent, set()).add(f.manifest.cluster_id)
    for f in list(found):
        d = f.path.parent
        if len(by_dir[d]) > 1 and f.manifest.cluster_id != d.name and d.name in by_dir[d]:
            # one cluster's directory holding a file of another: copied in by mistake, or planted
            problem(ArchiveProblem("foreign", f.name, f.manifest.first_seq,
                                   f"a file of cluster {f.manifest.cluster_id} in the directory of cluster {d.name}",
                                   d.name))
            found.remove(f)
    for a in avros:
        if a not in described:
            problem(ArchiveProblem("manifest", a.name, None,
                                   "no manifest next to it (deleted, or its writer stopped before writing it); "
                                   "its events cannot be verified against the archive"))
    return found, skipped


# --- one file ------------------------------------------------------------------------------------

def _writer_records(path: Path) -> Iterator[tuple[dict[str, Any], Any]]:
    """(record as written, the writer's parsed schema): the chain hash is over the body in the
    schema the event was written with, which for a file of another release is not this build's."""
    with open_container(path) as fo:
        reader = fastavro.reader(fo, **READ_OPTIONS)
        parsed = fastavro.parse_schema(reader.writer_schema)
        for rec in reader:
            yield cast(dict[str, Any], rec), parsed


def _verify_python(f: ArchiveFile) -> tuple[pa.Table, str]:
    """The reference: decode with fastavro, re-encode each record for its hash, check each link."""
    m = f.manifest
    digest = hashlib.sha256()
    with open(f.path, "rb") as fo:
        for chunk in iter(lambda: fo.read(1 << 20), b""):
            digest.update(chunk)
    rows = []
    expected, head = m.first_seq, m.prev_hash
    current = _is_current(f.path)
    written = None if current else _writer_records(f.path)
    for i, rec in enumerate(iter_records(f.path)):
        seq = rec["seq"]
        if seq != expected:
            kind = "missing" if seq > expected else "reordered"
            raise ChainBreak(kind, seq, f"event {i} of the file: seq {seq} where seq {expected} was expected",
                             str(f.path))
        if rec["prev_hash"] != head:
            raise ChainBreak("unchained", seq, f"event {i} of the file: seq {seq}: its prev_hash "
                             f"{rec['prev_hash'][:64]} is not the hash {head} of the event before it", str(f.path))
        actual = record_hash(rec) if written is None else record_hash(*next(written))
        if actual != rec["hash"]:
            raise ChainBreak("altered", seq, f"event {i} of the file: seq {seq}: its hash does not match its content",
                             str(f.path))
        rows.append(flat.flatten(rec))
        expected, head = seq + 1, rec["hash"]
    return flat.to_arrow(rows), digest.hexdigest()


def _name_break(f: ArchiveFile) -> chainbreak.Break | None:
    """The event that breaks the chain of a file found broken (read again, in Python: only a broken
    archive gets here); None if it cannot be named."""
    try:
        hashes = None if _is_current(f.path) else (record_hash(*w) for w in _writer_records(f.path))
        return chainbreak.first_break(f.path, f.manifest.first_seq, f.manifest.prev_hash, hashes)
    except Exception:  # noqa: BLE001 - the break found first is reported then
        return None


def _is_current(path: Path) -> bool:
    with open_container(path) as fo:
        writer = fastavro.reader(fo).writer_schema
    canonical = fastavro.schema.to_parsing_canonical_form(fastavro.parse_schema(writer, _write_hint=False))
    return bool(canonical == loader.current().canonical)


def read_file(f: ArchiveFile) -> pa.Table:
    """The flat rows of one archive file, verified against its manifest (ArchiveProblem if not)."""
    m = f.manifest
    try:
        try:
            if not fastflat.chain_available():
                raise fastflat.Unsupported("native chain check off or not built")
            table, digest = fastflat.decode_verified(f.path, m.first_seq, m.prev_hash)
        except fastflat.Unsupported:  # not built, turned off, or a file it does not take: the reference
            table, digest = _verify_python(f)
    except ChainBreak as exc:
        detail = str(exc).split(": ", 1)[-1]
        if detail.startswith("event 0 of the file:"):  # the file does not start where its manifest says
            raise ArchiveProblem("manifest", f.name, exc.seq, f"its first event (seq {exc.seq}) is not the one its "
                                 f"manifest describes (seq {m.first_seq} after {m.prev_hash[:16] or 'nothing'}…)",
                                 m.cluster_id) from None
        named = _name_break(f)  # what happened there: missing, altered, reordered or inserted, by event
        if named is not None:
            raise ArchiveProblem(named.kind, f.name, named.seq, named.message, m.cluster_id,
                                 event_id=named.event_id) from None
        raise ArchiveProblem(exc.kind, f.name, exc.seq, detail, m.cluster_id) from None
    except CodecError as exc:
        raise ArchiveProblem("unreadable", f.name, None, exc.reason, m.cluster_id) from None
    except OSError as exc:
        raise ArchiveProblem("unreadable", f.name, None, exc.strerror or str(exc), m.cluster_id) from None
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - damaged bytes reach fastavro in ways it reports by any type
        raise ArchiveProblem("unreadable", f.name, None, f"{type(exc).__name__}: {exc}"[:300], m.cluster_id) from None
    where = f"seq {m.first_seq}..{m.last_seq}"
    if digest != m.sha256:
        raise ArchiveProblem("altered", f.name, None, f"sha256 {digest[:16]}… is not the manifest's "
                             f"{m.sha256[:16]}… (the file changed after it was written; {where})", m.cluster_id)
    if table.num_rows != m.count:
        raise ArchiveProblem("manifest", f.name, None, f"{table.num_rows} events, the manifest says {m.count}",
                             m.cluster_id)
    clusters = pc.unique(table.column("cluster_id")).to_pylist()
    if clusters != [m.cluster_id]:
        raise ArchiveProblem("manifest", f.name, None, f"events of cluster(s) {clusters}, the manifest says "
                             f"{m.cluster_id!r}", m.cluster_id)
    last_hash = table.column("hash")[-1].as_py()
    last_seq = table.column("seq")[-1].as_py()
    if last_seq != m.last_seq or last_hash != m.chain_head_hash:
        raise ArchiveProblem("manifest", f.name, last_seq, f"ends at seq {last_seq} with hash {last_hash[:12]}…, "
                             f"the manifest says seq {m.last_seq} with {m.chain_head_hash[:12]}…", m.cluster_id)
    return table


# --- the chain across files ----------------------------------------------------------------------

class _Cluster:
    """The chain of one cluster as the files arrive in seq order (internal)."""

    def __init__(self, cluster_id: str, next_seq: int = 0, head: str = "") -> None:
        self.chain = ClusterChain(cluster_id, last_seq=next_seq - 1, head_hash=head,
                                  verified_to=next_seq - 1)
        self.next_seq = next_seq
        self.head = head
        self.broken = False  # a gap has been recorded: nothing after it is anchored to seq 0
        self.bounds: dict[int, str] = {}  # seq -> hash at the ends of accepted files (overlap checks)
        self.read: list[ArchiveFile] = []  # accepted files, to look up a hash inside one (rare overlaps)
        self.last_file = ""

    def accept(self, f: ArchiveFile, table: pa.Table) -> pa.Table:
        m, c = f.manifest, self.chain
        c.files += 1
        c.events += table.num_rows
        self.bounds[m.last_seq] = m.chain_head_hash
        self.read.append(f)
        if m.first_seq > 0:
            self.bounds[m.first_seq - 1] = m.prev_hash
        self.next_seq, self.head = m.last_seq + 1, m.chain_head_hash
        c.last_seq, c.head_hash = m.last_seq, m.chain_head_hash
        c.first_seq = m.first_seq if c.first_seq < 0 else min(c.first_seq, m.first_seq)
        if not self.broken:
            c.verified_to = m.last_seq
        self.last_file = f.name
        return table

    def gap(self, from_seq: int, to_seq: int, reason: str) -> None:
        self.chain.gaps.append(Gap(self.chain.cluster_id, from_seq, to_seq, reason))
        self.broken = True


class VerifiedRead:
    """Read archive files in chain order, verified. Iterate to get (path, flat table) per file;
    `chains` holds the verdict per cluster once iteration ends.

    `known` seeds a cluster's chain with what the consumer already holds and trusts (next seq,
    head hash), e.g. a store's verified head, so newer files are checked against it; files at or
    below it are handed on as they are (the consumer compares them with what it holds).
    `progress(bytes)` is called after each file with its size."""

    def __init__(self, paths: Iterable[str | Path], *, allow_gaps: bool = False,
                 known: dict[str, tuple[int, str]] | None = None,
                 progress: Callable[[int], None] | None = None, workers: int | None = None,
                 trust: Trust | None = None) -> None:
        self.allow_gaps = allow_gaps
        # with trusted keys, the signed checkpoints are checked too (schemas.archive.signatures); `signed` then
        # holds their verdict per cluster once iteration ends
        self.trust = trust
        self.signed: dict[str, SignedStatus] = {}
        self.known = dict(known or {})
        self.progress = progress
        self.workers = workers or min(2, os.cpu_count() or 1)
        paths = list(paths)
        self.files, skipped = archive_files(paths, allow_gaps)
        if not self.files and not skipped:
            raise NotAnArchive(f"{', '.join(map(str, paths)) or '(no path)'}: no archive files "
                               "(events-*.avro with their manifests)")
        self.skipped = skipped
        self.chains: dict[str, ClusterChain] = {}
        self.accepted: list[Path] = []  # files that gave rows, in the order they were handed on
        self.total_bytes = sum(f.path.stat().st_size for f in self.files)

    def clusters(self) -> list[str]:
        return sorted({f.manifest.cluster_id for f in self.files})

    def _plan(self) -> list[ArchiveFile]:
        """Files in (cluster, seq) order. A copy of a file is read and verified like any other
        (a damaged copy is reported), then counted as duplicates (_link)."""
        return sorted(self.files, key=lambda f: (f.manifest.cluster_id, f.manifest.first_seq,
                                                 f.manifest.last_seq, str(f.path)))

    def __iter__(self) -> Iterator[tuple[Path, pa.Table]]:
        plan = self._plan()
        states: dict[str, _Cluster] = {}
        signatures = SignatureCheck(self.trust) if self.trust is not None else None
        if not plan:
            return
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = {}

            def submit(i: int) -> None:
                if i < len(plan) and i not in futures:
                    futures[i] = pool.submit(_read_or_problem, plan[i])

            for i in range(max(1, READ_AHEAD + self.workers)):
                submit(i)
            try:
                for i, f in enumerate(plan):
                    submit(i + max(1, READ_AHEAD + self.workers))
                    result = futures.pop(i).result()
                    m = f.manifest
                    st = states.get(m.cluster_id)
                    if st is None:
                        nxt, head = self.known.get(m.cluster_id, (0, ""))
                        st = states[m.cluster_id] = _Cluster(m.cluster_id, nxt, head)
                        self.chains[m.cluster_id] = st.chain
                        if signatures is not None:
                            with _as_problem():
                                signatures.begin(m.cluster_id, {g.path.parent for g in plan
                                                                if g.manifest.cluster_id == m.cluster_id})
                    table = self._link(st, f, result)
                    if signatures is not None and table is not None:
                        with _as_problem():  # a root that does not match: BROKEN (exit 1), as any problem
                            signatures.feed(m.cluster_id, table)
                    if self.progress is not None:
                        self.progress(f.path.stat().st_size)
                    if table is not None:
                        self.accepted.append(f.path)
                        yield f.path, table
            finally:
                for fut in futures.values():
                    fut.cancel()
        if signatures is not None:
            with _as_problem():
                for cluster_id in states:
                    self.signed[cluster_id] = signatures.finish(cluster_id)
                signatures.unmatched()

    def _problem(self, st: _Cluster, p: ArchiveProblem, gap: tuple[int, int] | None) -> None:
        if not self.allow_gaps:
            raise p
        if gap is None:
            return
        if p.kind == "missing":
            st.gap(gap[0], gap[1], "missing: no file holds them")
        else:
            st.gap(gap[0], gap[1], f"{p.kind}: {p.file}" + (f" at seq {p.seq}" if p.seq is not None else ""))

    def _link(self, st: _Cluster, f: ArchiveFile, result: pa.Table | ArchiveProblem) -> pa.Table | None:
        """Fit one file's (verified) rows onto the cluster's chain; None when nothing of it is new."""
        m = f.manifest
        if isinstance(result, ArchiveProblem):
            lo = max(m.first_seq, st.next_seq)
            self._problem(st, result, (lo, m.last_seq) if lo <= m.last_seq else None)
            if m.last_seq >= st.next_seq:  # the next file follows the stretch left out, unlinked
                st.next_seq, st.head = m.last_seq + 1, ""
            return None
        table = result
        if m.first_seq > st.next_seq:
            before = f"after {st.last_file} (which ends at seq {st.next_seq - 1})" if st.last_file else \
                "at the start of the archive"
            self._problem(st, ArchiveProblem(
                "missing", f.name, st.next_seq,
                f"seq {st.next_seq}..{m.first_seq - 1} are missing: no file holds them {before}"
                + ("; --allow-gaps to read the rest and record the gap" if not self.allow_gaps else ""),
                m.cluster_id), (st.next_seq, m.first_seq - 1))
            return st.accept(f, table)
        if m.first_seq == st.next_seq:
            if m.prev_hash != st.head and not (st.next_seq > 0 and st.head == ""):
                self._problem(st, ArchiveProblem(
                    "fork" if st.last_file else "unchained", f.name, m.first_seq,
                    f"seq {m.first_seq} does not continue the chain"
                    + (f" of {st.last_file}" if st.last_file else "")
                    + f": its prev_hash {m.prev_hash[:16]}… is not the head {st.head[:16]}…", m.cluster_id),
                    (m.first_seq, m.last_seq))
                if self.allow_gaps:
                    return None
            return st.accept(f, table)
        # The file starts inside what is already read: keep only what is new, after checking that
        # both agree where they meet (the chain makes one equal hash vouch for everything before it).
        meet = min(m.last_seq, st.next_seq - 1)
        common = [b for b in st.bounds if m.first_seq <= b <= meet]
        if common:
            at = max(common)
            ours = st.bounds[at]
        else:
            holder = [a for a in st.read if a.manifest.first_seq <= meet <= a.manifest.last_seq]
            if not holder:  # only the consumer holds these: it compares them with what it holds
                return st.accept(f, table) if m.last_seq >= st.next_seq else table
            # no file boundary in common: the hash inside the file read before (read again, rarely)
            at, other = meet, holder[-1]
            ours = read_file(other).column("hash")[at - other.manifest.first_seq].as_py()
        theirs = table.column("hash")[at - m.first_seq].as_py()
        if theirs != ours:
            at, theirs, ours, other_name = _first_difference(st, table, f, at, theirs, ours)
            self._problem(st, ArchiveProblem(
                "fork", f.name, at, f"chain fork: a different event at seq {at} than in {other_name} "
                f"({theirs[:16]}… vs {ours[:16]}…): two diverging histories of cluster {m.cluster_id}",
                m.cluster_id), None)
            return None
        fresh = table.filter(pc.greater_equal(table.column("seq"), st.next_seq))
        st.chain.duplicates += table.num_rows - fresh.num_rows
        if fresh.num_rows == 0:
            return None
        return st.accept(f, fresh)


@contextlib.contextmanager
def _as_problem() -> Iterator[None]:
    """A checkpoint that does not hold is an ArchiveProblem like any other, never a gap to read around."""
    try:
        yield
    except SignatureProblem as exc:
        raise ArchiveProblem("signature", exc.file or "(checkpoints)", exc.seq, str(exc), exc.cluster_id) from None


def _first_difference(st: _Cluster, table: pa.Table, f: ArchiveFile, at: int, theirs: str,
                      ours: str) -> tuple[int, str, str, str]:
    """Where two files first disagree (read again: only a fork gets here); (seq, their hash, our
    hash, the other file's name). Falls back to where the difference was found."""
    m = f.manifest
    for other in st.read:
        o = other.manifest
        lo, hi = max(m.first_seq, o.first_seq), min(m.last_seq, o.last_seq)
        if lo > hi:
            continue
        try:
            mine = table.column("hash").slice(lo - m.first_seq, hi - lo + 1)
            held = read_file(other).column("hash").slice(lo - o.first_seq, hi - lo + 1)
        except ArchiveProblem:
            continue
        differ = pc.not_equal(mine, held)
        if pc.any(differ).as_py():
            i = pc.indices_nonzero(differ)[0].as_py()
            return lo + i, mine[i].as_py(), held[i].as_py(), other.name
    return at, theirs, ours, st.last_file


def _read_or_problem(f: ArchiveFile) -> pa.Table | ArchiveProblem:
    try:
        return read_file(f)
    except ArchiveProblem as exc:
        return exc


def read_all(paths: Iterable[str | Path], allow_gaps: bool = False,
             progress: Callable[[int], None] | None = None, trust: Trust | None = None) -> tuple[pa.Table, VerifiedRead]:
    """Every verified row of the paths as one flat table, and the read (its chains and gaps)."""
    read = VerifiedRead(paths, allow_gaps=allow_gaps, progress=progress, trust=trust)
    tables = [t for _, t in read]
    table = pa.concat_tables(tables) if tables else flat.ARROW_SCHEMA.empty_table()
    return table, read


def verify(paths: Iterable[str | Path], allow_gaps: bool = False,
           progress: Callable[[int], None] | None = None, workers: int | None = None,
           trust: Trust | None = None) -> VerifiedRead:
    """Read everything and keep nothing but the verdict (ArchiveProblem on the first problem)."""
    read = VerifiedRead(paths, allow_gaps=allow_gaps, progress=progress, workers=workers, trust=trust)
    for _ in read:
        pass
    return read


def no_data_gap(gaps: Iterable[Gap], cluster_id: str, seq: int, related_seq: int | None) -> Gap | None:
    """The gap that leaves a finding without evidence: one between the event it rests on
    (related_seq) and the event it is about (seq), or, when it rests on nothing, any gap before."""
    for g in gaps:
        if g.cluster_id == cluster_id and g.from_seq <= seq and (related_seq is None or g.to_seq >= related_seq):
            return g
    return None
