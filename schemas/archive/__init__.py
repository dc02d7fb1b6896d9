"""The archive format: hash-chained ControllerEvents (chain.py, with the body encoders of encoder.py and
fastencode.py) in hourly Avro object container files (container.py) with manifests (manifest.py), written by
writer.py; read by one verified read (verified.py, naming the event that breaks a chain: chainbreak.py) into the
flat layout (flat.py, and the native decoder of fastflat.py); listing.py lists an archive's files."""
from schemas.archive.listing import clusters, iter_events, list_files
from schemas.archive.manifest import FileManifest, SourceMark, read_manifest
from schemas.archive.writer import ArchiveWriter, file_name

__all__ = ["ArchiveWriter", "FileManifest", "SourceMark", "clusters", "file_name", "iter_events", "list_files",
           "read_manifest"]
