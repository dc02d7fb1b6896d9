"""The one place an untrusted name becomes a path: cluster ids, and file names read from manifests or
archive listings.

An incident's copied files may come from a compromised cluster, so a name they hold is never trusted to
be a plain name: a `meta.properties` saying `cluster.id=../../etc` must not make an import write outside
its `--out`. The allow-list is Kafka's own rule for topic names, which also covers its cluster ids (a
base64url Uuid, 22 characters): letters, digits, '.', '_' and '-', 1 to 249 characters, never '.' or
'..'. The simulator's `sim-<seed>`, `unknown-cluster` and every archive file name pass.

`child` is how a name is joined to a directory: it checks the name, and checks the joined path after
resolving it (a directory of that name that is a symbolic link leading elsewhere is refused too).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from schemas.errors import ContractError

MAX_NAME = 249  # Kafka's longest topic name (Topic.MAX_NAME_LENGTH)
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
ALLOWED = "allowed: letters, digits, '.', '_', '-'"


class UnsafeName(ContractError):
    """A name from input that cannot be used as a path (one line naming the value and where it came from)."""


def shown(value: str, limit: int = 60) -> str:
    """The value quoted for one line of error: control characters escaped, a long one cut."""
    text = repr(value[:limit])
    return text + f"... ({len(value)} characters)" if len(value) > limit else text


def checked(value: object, what: str, where: str = "", kind: str = "Kafka name") -> str:
    """`value` when it is a legal name; UnsafeName naming `what` (e.g. "cluster.id", "--cluster-id") and
    `where` (the file it was read from) otherwise."""
    if not isinstance(value, str):
        reason = f"is not a string ({type(value).__name__})"
    elif not value:
        reason = f"is empty: not a {kind}"
    elif len(value) > MAX_NAME:
        reason = f"is longer than {MAX_NAME} characters: not a {kind}"
    elif value in (".", ".."):
        reason = f"is not a {kind} ('.' and '..' name directories)"
    elif not _LEGAL.fullmatch(value):
        reason = f"is not a {kind} ({ALLOWED})"
    else:
        return value
    said = f"{what} {shown(value) if isinstance(value, str) else repr(value)[:60]} {reason}"
    raise UnsafeName(f"{where}: {said}" if where else said)


def cluster_id(value: object, what: str = "cluster id", where: str = "") -> str:
    """A cluster id that may name a directory (see the module doc)."""
    return checked(value, what, where, kind="Kafka cluster id")


def file_name(value: object, what: str = "file", where: str = "") -> str:
    """A file name read from input (a manifest, a listing) that must be a plain name inside its directory."""
    return checked(value, what, where, kind="plain file name")


def child(root: str | Path, name: str, what: str = "cluster id", where: str = "",
          kind: str = "Kafka cluster id") -> Path:
    """`root / name` for an untrusted `name`, never a path outside `root`, also after resolving links."""
    checked(name, what, where, kind)
    root = Path(root)
    path = root / name
    inside = Path(os.path.realpath(root))
    resolved = Path(os.path.realpath(path))
    if resolved.parent != inside:
        raise UnsafeName(f"{path}: resolves to {resolved}, outside {root}; refusing to use it "
                         "(a symbolic link where a directory was expected)")
    return path


def below(root: str | Path, relative: str, what: str = "file", where: str = "") -> Path:
    """`root / relative` for a relative path from a listing (an archive on HDFS or S3): each of its parts a
    plain name, and the joined path inside `root` after resolving links."""
    parts = relative.split("/")
    for part in parts:
        checked(part, what, where, kind="plain file name")
    path = Path(root).joinpath(*parts)
    inside = Path(os.path.realpath(root))
    if not Path(os.path.realpath(path)).is_relative_to(inside):
        raise UnsafeName(f"{path}: resolves outside {root}; refusing to use it")
    return path
