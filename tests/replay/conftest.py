from __future__ import annotations

import pytest

from tests.archive_files import write_archive_file as write_events
from replay.store import Store
from tests.replay.fixtures import DELTA1, DELTA2
from tests.replay.histories import generate


@pytest.fixture
def store(tmp_path):
    """DELTA1 + DELTA2 (test_queries) loaded from two files."""
    write_events(tmp_path / "a.avro", DELTA1)
    write_events(tmp_path / "b.avro", DELTA2)
    s = Store(tmp_path / "s.duckdb")
    s.load([tmp_path], workers=1)
    yield s
    s.close()


@pytest.fixture(scope="module")
def history(request):
    """The generated history of the test module: its N events from its SEED, hash-chained."""
    return generate(request.module.N, seed=request.module.SEED, chain=True)


@pytest.fixture(scope="module")
def archive(tmp_path_factory, request, history):
    """The module's history as FILES archive files of equal size, events-0.avro on (events-00.avro on for 10 or more)."""
    d = tmp_path_factory.mktemp("archive")
    files = request.module.FILES
    step = len(history) // files
    for i in range(files):
        write_events(d / f"events-{i:0{len(str(files))}d}.avro", history[i * step:(i + 1) * step])
    return d
