"""What `python -m services.capture worker` loads before it reads a record.

The worker is started again at every restart and every catch-up, and bench/capture.py counts its start in the
CPU per event of a catch-up: the archive's reader and writer (pyarrow.compute), cryptography (signing, client
key stores) and pydantic (which typer imports to run an app) cost each start about a quarter of its CPU and are
never used by the worker, nor are typer (the other commands' parser) and the signing modules (only with a
key). These run the command as the process runs it, with Kafka left out (no topics
declared, Faust not started), and list what it imported.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# ensure_topics and Faust's main are replaced (they need a broker); the agents module is imported as Faust's
# autodiscover imports it at start
DRIVER = """
import json, runpy, sys
import services.capture.settings as settings
settings.ensure_topics = lambda *a, **k: None
import services.capture.app as app
def started():
    import services.capture.agents
    print(json.dumps(sorted(sys.modules)))
    raise SystemExit(0)
app.main = started
sys.argv = ["services.capture", *sys.argv[1:]]
runpy.run_module("services.capture", run_name="__main__")
"""

NOT_AT_START = ("pyarrow.compute", "cryptography", "pydantic", "typer", "services.capture.archiver",
                "schemas.archive.writer", "schemas.archive.verified", "schemas.archive.signed",
                "services.capture.signing")  # the last two: only a worker given a signing key loads them


def modules_at_start(*argv: str) -> set[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_BOOTSTRAP_SERVERS="127.0.0.1:1",
               CTRLAUDIT_ROLES="normalize")
    res = subprocess.run([sys.executable, "-c", DRIVER, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return set(json.loads(res.stdout.splitlines()[-1]))


def test_the_worker_starts_without_what_it_never_uses():
    for argv in (("worker", "-l", "warn", "--without-web"), ("-l", "warn")):  # named, and the default command
        loaded = modules_at_start(*argv)
        assert "services.capture.agents" in loaded and "schemas.archive.chain" in loaded  # it did start
        assert not [m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_AT_START)], argv


def test_the_archive_package_still_gives_its_names():
    import schemas.archive as archive
    from schemas.archive.writer import ArchiveWriter

    assert archive.ArchiveWriter is ArchiveWriter
    assert set(archive.__all__) <= set(dir(archive))
    for name in archive.__all__:
        assert getattr(archive, name) is not None
