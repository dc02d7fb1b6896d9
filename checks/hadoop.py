"""Archives on HDFS, S3 or any filesystem Hadoop reaches (`hdfs://`, `s3a://`, `file://`, …), for the
Spark engine: verified by the one verified read (schemas.archive.verified) before the executors read them.

The verified read works on local files, so the driver first copies every archive file and manifest under
the URIs through Hadoop's FileSystem API (the Spark session's own JVM and Hadoop configuration: whatever
reaches the cluster's HDFS or S3 for the executors reaches it here) into a temporary directory, keeping
the relative layout (a cluster's directory keeps its name: the verified read checks that a file sits in
its own cluster's directory), and verifies that copy. No second verifier: the bytes verified are the
bytes copied.

The executors then read the URIs themselves, through Spark's Avro source. What guarantees they read the
bytes that were verified: each file's length and modification time from the listing must be the same
after it was copied (else it changed while being copied), and for each file the executors read, its
length, modification time and, where the filesystem computes one (HDFS: a checksum of its blocks' CRCs),
its checksum must be the same again once the job has read everything (`Staged.confirm_unchanged`). A file that changed is one ArchiveProblem
naming its URI: the report would rest on bytes nobody verified.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checks.inputs import BadInput
from schemas import names
from schemas.errors import ContractError
from schemas.archive.manifest import MANIFEST_SUFFIX, read_manifest
from schemas.archive.signatures import Trust
from schemas.archive.signed import CHECKPOINT_RE
from schemas.archive.verified import ArchiveProblem, VerifiedRead, verify


@dataclass(frozen=True)
class RemoteFile:
    uri: str
    length: int
    mtime: int
    checksum: str | None  # None: the filesystem computes none (the local one, S3A by default)


def _archive_name(name: str) -> bool:
    return name.endswith(".avro") or name.endswith(".avro" + MANIFEST_SUFFIX) or bool(CHECKPOINT_RE.fullmatch(name))


def _java_error(uri: str, exc: Exception) -> BadInput:
    """One line for a Hadoop error on `uri` (a missing path, an unknown scheme, a refused connection)."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        raise exc
    cls = java.getClass().getSimpleName()
    message = (java.getMessage() or "").strip().splitlines()[0][:300] if java.getMessage() else ""
    if cls == "FileNotFoundException":
        return BadInput(f"{uri}: no such file or directory")
    if cls == "UnsupportedFileSystemException":
        return BadInput(f"{uri}: {message} (the job's classpath lacks that filesystem: for s3a, "
                        "spark-submit --packages org.apache.hadoop:hadoop-aws:<pyspark's Hadoop version>)")
    return BadInput(f"{uri}: {cls}: {message}")


def _cluster_of(staged: Path) -> str | None:
    """The cluster id in the manifest of a staged file (or in the staged manifest itself)."""
    manifest = staged if staged.name.endswith(MANIFEST_SUFFIX) else staged.with_name(staged.name + MANIFEST_SUFFIX)
    try:
        return read_manifest(manifest).cluster_id
    except ContractError:
        return None


class Staged:
    """The archive files under some URIs, copied to a local directory, with what they were when copied."""

    def __init__(self, spark: Any, dest: Path) -> None:
        self.jvm = spark._jvm
        self.conf = spark._jsc.hadoopConfiguration()
        self.dest = dest
        self.roots: list[Path] = []  # what the verified read is given, one per URI
        self.files: dict[Path, RemoteFile] = {}  # staged copy (resolved) -> the file it is a copy of
        self.root_uris: dict[str, str] = {}  # str(local root) -> URI as given, for messages

    def _fs(self, uri: str) -> tuple[Any, Any]:
        path = self.jvm.org.apache.hadoop.fs.Path(uri)
        return path, path.getFileSystem(self.conf)

    def add(self, uri: str) -> None:
        try:
            path, fs = self._fs(uri)
            status = fs.getFileStatus(path)
            # the local root keeps the URI's last name: a cluster's directory stays recognisable as such
            root = self.dest / str(len(self.roots)) / (path.getName() or "root")
            if status.isDirectory():
                root.mkdir(parents=True)  # one without archive files is the verified read's to name
                base = status.getPath().toUri().getPath().rstrip("/")
                listing = fs.listFiles(status.getPath(), True)
                while listing.hasNext():
                    s = listing.next()
                    if _archive_name(s.getPath().getName()):
                        relative = s.getPath().toUri().getPath()[len(base) + 1:]
                        self._copy(fs, s, names.below(root, relative, "file", uri))
            else:
                self._copy(fs, status, root)
                sibling = self.jvm.org.apache.hadoop.fs.Path(status.getPath().toString() + MANIFEST_SUFFIX)
                if fs.exists(sibling):
                    self._copy(fs, fs.getFileStatus(sibling), root.with_name(root.name + MANIFEST_SUFFIX))
        except ContractError:
            raise
        except Exception as exc:  # noqa: BLE001 - Py4JJavaError: a Hadoop exception, named in one line
            raise _java_error(uri, exc) from None
        self.roots.append(root)
        self.root_uris[str(root)] = uri

    def _copy(self, fs: Any, status: Any, local: Path) -> None:
        src = status.getPath()
        local.parent.mkdir(parents=True, exist_ok=True)
        # the JVM writes the copy itself (no bytes through Py4J); the raw local filesystem writes no .crc
        fs.copyToLocalFile(False, src, self.jvm.org.apache.hadoop.fs.Path(local.as_uri()), True)
        after = fs.getFileStatus(src)
        uri = src.toString()
        if (after.getLen(), after.getModificationTime()) != (status.getLen(), status.getModificationTime()):
            raise ArchiveProblem("altered", uri, None, "the file changed while it was being copied for verification")
        self.files[local.resolve()] = RemoteFile(uri, status.getLen(), status.getModificationTime(),
                                                 self._checksum(fs, src))

    @staticmethod
    def _checksum(fs: Any, path: Any) -> str | None:
        checksum = fs.getFileChecksum(path)
        return None if checksum is None else str(checksum.toString())

    def uri_of(self, local: Path) -> str:
        return self.files[Path(local).resolve()].uri

    def _uri_named(self, name: str, cluster_id: str) -> str | None:
        """The URI of the staged file called `name` (a file whose manifest alone is left: through that
        manifest); several of that name (each cluster's first files have the same names): the one whose
        manifest is of `cluster_id`, or, for a problem of no cluster (a manifest missing or unreadable),
        the one without a readable manifest. None when that does not single one out."""
        hits = {p: r.uri for p, r in self.files.items() if p.name == name}
        hits = hits or {p: r.uri[: -len(MANIFEST_SUFFIX)] for p, r in self.files.items()
                        if p.name == name + MANIFEST_SUFFIX}
        if len(hits) > 1:
            hits = {p: u for p, u in hits.items() if _cluster_of(p) == (cluster_id or None)}
        return next(iter(hits.values())) if len(hits) == 1 else None

    def renamed(self, exc: ContractError) -> ContractError:
        """The same problem, naming the file by its URI rather than its staged copy."""
        if isinstance(exc, ArchiveProblem):  # the verified read names a file by its name
            uri = self._uri_named(exc.file, exc.cluster_id)
            prefix = f"{exc.file}: {exc.kind}: "
            if uri is None or not str(exc).startswith(prefix):
                return exc
            return ArchiveProblem(exc.kind, uri, exc.seq, str(exc)[len(prefix):], exc.cluster_id, exc.event_id)
        text = str(exc)
        for local, uri in self.root_uris.items():
            text = text.replace(local, uri)
        return type(exc)(text) if text != str(exc) else exc

    def confirm_unchanged(self, uris: Sequence[str] | None = None) -> None:
        """ArchiveProblem naming the first file (of `uris`: the ones the executors read; default all) that
        is no longer what was verified (see the module doc)."""
        wanted = None if uris is None else set(uris)
        for r in self.files.values():
            if wanted is not None and r.uri not in wanted:
                continue
            try:
                path, fs = self._fs(r.uri)
                now = fs.getFileStatus(path)
                same = (now.getLen(), now.getModificationTime()) == (r.length, r.mtime) \
                    and self._checksum(fs, path) == r.checksum
            except Exception as exc:  # noqa: BLE001 - gone (FileNotFoundException) or unreachable
                java = getattr(exc, "java_exception", None)
                if java is None:
                    raise
                same = False
            if not same:
                raise ArchiveProblem("altered", r.uri, None, "the file changed after it was verified, while Spark "
                                     "read it: the report would rest on unverified bytes; run the check again")


@dataclass(frozen=True)
class VerifiedUris:
    """Archives on a Hadoop filesystem, verified on the driver from staged copies: the read's verdicts, the
    URIs of the files that verified (the executors read those), and the check that they still hold the bytes
    verified (`confirm_unchanged`, after the job)."""

    read: VerifiedRead
    accepted: list[str]
    staged: Staged

    def confirm_unchanged(self) -> None:
        self.staged.confirm_unchanged(self.accepted)


def verified_uris(spark: Any, uris: Sequence[str], allow_gaps: bool = False,
                  progress: Callable[[int], None] | None = None, trust: Trust | None = None) -> VerifiedUris:
    """The archives under `uris`, verified on the driver first (see the module doc); SparkEngine.from_uris
    reads what verified."""
    with tempfile.TemporaryDirectory(prefix="ctrlaudit-staged-") as tmp:
        staged = Staged(spark, Path(tmp))
        for uri in uris:
            staged.add(uri)
        try:
            read = verify(staged.roots, allow_gaps=allow_gaps, progress=progress, trust=trust)
        except ContractError as exc:
            raise staged.renamed(exc) from None
        if not read.accepted:
            raise BadInput(f"{', '.join(uris)}: archive holds no verified events")
        accepted = [staged.uri_of(p) for p in read.accepted]
    # the staged copies are gone: from here on the executors read the URIs
    return VerifiedUris(read, accepted, staged)
