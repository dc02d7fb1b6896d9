"""The archive format: hash-chained ControllerEvents (chain.py, with the body encoders of encoder.py and
fastencode.py) in hourly Avro object container files (container.py) with manifests (manifest.py), written by
writer.py; read by one verified read (verified.py, naming the event that breaks a chain: chainbreak.py) into the
flat layout (flat.py, and the native decoder of fastflat.py); listing.py lists an archive's files."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from schemas.archive.listing import clusters, iter_events, list_files
    from schemas.archive.manifest import FileManifest, SourceMark, read_manifest
    from schemas.archive.writer import ArchiveWriter, file_name

# The names below are imported when first asked for, not with the package: the capture worker imports
# schemas.archive.chain on its per-event path, which imports this package first, and the reader's and the
# writer's modules (pyarrow.compute among them) would cost every worker's start CPU that it never uses.
_FROM = {"clusters": "listing", "iter_events": "listing", "list_files": "listing",
         "FileManifest": "manifest", "SourceMark": "manifest", "read_manifest": "manifest",
         "ArchiveWriter": "writer", "file_name": "writer"}

__all__ = ["ArchiveWriter", "FileManifest", "SourceMark", "clusters", "file_name", "iter_events", "list_files",
           "read_manifest"]


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once: a plain attribute from then on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
