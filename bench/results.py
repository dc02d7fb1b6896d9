"""What every benchmark says about where it ran, and the one place its figures go: bench/RESULTS.md."""
from __future__ import annotations

import os
import platform
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown cpu"


def machine() -> str:
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu_model()}), {mem:.0f} GiB, Python {platform.python_version()}"


def append(text: str) -> Path:
    """Append a section to bench/RESULTS.md (made with its heading when missing)."""
    if not RESULTS.exists():
        RESULTS.write_text("# Benchmark results\n\nMeasured on the project's machines; each section says how.\n")
    with RESULTS.open("a") as fo:
        fo.write(text)
    return RESULTS
