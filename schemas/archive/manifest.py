"""The manifest written next to each archive file: what the file holds and how to verify it.

`<file>.avro` gets `<file>.manifest.json`. A file without a manifest is not done (the writer
crashed before fsyncing it) and readers skip it. The manifest pins the file's sha256 and its
chain ends (prev_hash before the first event, hash of the last), so a reader can verify a whole
archive, file by file, without decoding anything but the chain fields.
"""
from __future__ import annotations

import json
import os
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any

from schemas import names
from schemas.bounded import NotReadable, TooLarge, read_bounded
from schemas.errors import ContractError

MANIFEST_SUFFIX = ".manifest.json"
FORMAT = "ctrlaudit-archive-manifest/1"


@dataclass(frozen=True)
class SourceMark:
    kind: str
    offset: int
    index: int


@dataclass(frozen=True)
class FileManifest:
    file: str  # file name, relative to the manifest's directory
    cluster_id: str
    count: int
    first_seq: int
    last_seq: int
    first_source: SourceMark
    last_source: SourceMark
    first_event_time_ms: int
    last_event_time_ms: int
    sha256: str
    size_bytes: int
    prev_hash: str  # hash of the event before first_seq ("" when first_seq is 0)
    chain_head_hash: str  # hash of the event at last_seq
    schema_version: int
    schema_fingerprint: str  # CRC-64-AVRO, hex, as single-object encoding writes it
    codec: str
    format: str = FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> FileManifest:
        d = _keys_of(FileManifest, json.loads(text), "")
        d["first_source"] = SourceMark(**_keys_of(SourceMark, d["first_source"], "first_source."))
        d["last_source"] = SourceMark(**_keys_of(SourceMark, d["last_source"], "last_source."))
        return FileManifest(**d)


class ManifestShape(ValueError):
    """A manifest's JSON is not an object with the manifest's keys (names the keys)."""


def _keys_of(cls: Any, value: Any, where: str) -> dict[str, Any]:
    """`value` when it is an object with `cls`'s keys; ManifestShape naming the unknown and missing ones."""
    if not isinstance(value, dict):
        raise ManifestShape(f"{where.rstrip('.') or 'the manifest'} is not a JSON object")
    known = {f.name for f in fields(cls)}
    needed = {f.name for f in fields(cls) if f.default is MISSING}
    unknown, missing = sorted(set(value) - known), sorted(needed - set(value))
    if unknown or missing:
        said = ([f"unknown keys {', '.join(repr(where + k) for k in unknown)}"] if unknown else []) + \
               ([f"missing keys {', '.join(repr(where + k) for k in missing)}"] if missing else [])
        raise ManifestShape("; ".join(said))
    return dict(value)


def manifest_path(avro_path: Path) -> Path:
    return avro_path.with_name(avro_path.name + MANIFEST_SUFFIX)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(avro_path: Path, manifest: FileManifest, fsync: bool = True) -> Path:
    """Write durably: temp file, fsync, rename, fsync the directory (fsync=False: tests only)."""
    final = manifest_path(avro_path)
    tmp = final.with_name(final.name + ".tmp")
    tmp.unlink(missing_ok=True)  # a leftover, or a link planted in a copied archive: never written through
    with open(tmp, "x", encoding="utf-8") as fo:
        fo.write(manifest.to_json())
        fo.flush()
        if fsync:
            os.fsync(fo.fileno())
    os.replace(tmp, final)
    if fsync:
        fsync_dir(final.parent)
    return final


class ManifestError(ContractError):
    """A manifest that cannot be read or does not describe a file (names the manifest)."""


# A manifest is about 700 bytes; a larger one is not ours (and must not be read whole into memory).
MAX_MANIFEST_BYTES = 64 * 1024


def _manifest_text(path: Path) -> str:
    """The manifest's text, read only from a regular file of at most MAX_MANIFEST_BYTES: a symbolic link
    (which could point anywhere: /dev/zero, a FIFO, a file outside the archive) is not followed."""
    try:
        data = read_bounded(path, MAX_MANIFEST_BYTES, follow_links=False)
    except TooLarge:
        raise ManifestShape(f"larger than {MAX_MANIFEST_BYTES} bytes") from None
    except NotReadable as exc:
        raise ManifestShape(str(exc)) from None
    return data.decode("utf-8")


def read_manifest(path: Path) -> FileManifest:
    """The manifest at `path`; ManifestError (one line, naming it) when it is not a valid one."""
    path = Path(path)
    try:
        manifest = FileManifest.from_json(_manifest_text(path))
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the manifest: {exc.strerror}") from exc
    except ManifestShape as exc:
        raise ManifestError(f"{path}: not a valid archive manifest ({exc})") from exc
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:  # not JSON, not text, too deep
        raise ManifestError(f"{path}: not a valid archive manifest ({type(exc).__name__}: {exc})") from exc
    ints = ("count", "first_seq", "last_seq", "first_event_time_ms", "last_event_time_ms", "size_bytes",
            "schema_version")
    bad = [k for k in ints if type(getattr(manifest, k)) is not int]
    bad += [k for k in ("file", "cluster_id", "sha256", "prev_hash", "chain_head_hash", "codec")
            if not isinstance(getattr(manifest, k), str)]
    if bad:
        raise ManifestError(f"{path}: not a valid archive manifest (bad {', '.join(bad)})")
    if manifest.format != FORMAT:
        raise ManifestError(f"{path}: manifest format {manifest.format!r}, this build reads {FORMAT!r}")
    try:  # names a hostile manifest could turn into paths: a plain file name beside it, a cluster id
        names.file_name(manifest.file, "file")
        names.cluster_id(manifest.cluster_id, "cluster_id")
    except names.UnsafeName as exc:
        raise ManifestError(f"{path}: not a valid archive manifest ({exc})") from None
    return manifest
