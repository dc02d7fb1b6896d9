"""The archive: hash-chained ControllerEvents in hourly Avro object container files with manifests."""
from schemas.manifest import FileManifest, SourceMark, read_manifest
from services.archive.reader import clusters, iter_archive_records, iter_events, list_files
from services.archive.writer import ArchiveWriter, file_name

__all__ = [
    "ArchiveWriter", "FileManifest", "SourceMark", "clusters", "file_name", "iter_archive_records",
    "iter_events", "list_files", "read_manifest",
]
