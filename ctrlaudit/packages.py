"""The top-level packages ctrlaudit installs beside itself, and the check that they are the ones imported.

The design card fixes the project's top-level folders, and each is installed as a top-level package of
that name: `schemas`, `services`, `replay`, `checks` (ARCHITECTURE.md, "Names", says why they keep those
names). Generic names can be shadowed by another distribution's package earlier on the path; then an
import would silently take the other code, or fail deep inside a command with a traceback. The CLI checks
first that each of them sits beside `ctrlaudit` itself, and otherwise stops with one line naming the
package and where it came from.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SIBLINGS = ("schemas", "services", "replay", "checks")


def foreign_packages() -> list[str]:
    """'name (from where)' for each sibling package that is missing or is not the one beside ctrlaudit."""
    root = Path(__file__).resolve().parent.parent
    out = []
    for name in SIBLINGS:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            out.append(f"{name} (not installed)")
            continue
        origin = spec.origin or next(iter(spec.submodule_search_locations or ()), None)
        if origin is None or spec.origin is None:  # a namespace package: not ours (ours have __init__.py)
            out.append(f"{name} (from {origin or 'a namespace package'})")
        elif Path(origin).resolve().parent.parent != root:
            out.append(f"{name} (from {Path(origin).parent})")
    return out


def refuse_foreign_packages() -> None:
    """Exit 2 with one line when a sibling package is not ctrlaudit's (run before any of them is imported)."""
    foreign = foreign_packages()
    if foreign:
        print(f"ctrlaudit: error: the top-level package(s) {', '.join(foreign)} are not the ones installed with "
              f"ctrlaudit at {Path(__file__).resolve().parent.parent}: another distribution shadows them; "
              "install ctrlaudit in its own virtual environment", file=sys.stderr)
        sys.exit(2)
