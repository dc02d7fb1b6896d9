from __future__ import annotations

import pytest

from tests.archive_files import write_archive_file as write_events
from replay.store import Store
from tests.replay.fixtures import DELTA1, DELTA2


@pytest.fixture
def store(tmp_path):
    """DELTA1 + DELTA2 (test_queries) loaded from two files."""
    write_events(tmp_path / "a.avro", DELTA1)
    write_events(tmp_path / "b.avro", DELTA2)
    s = Store(tmp_path / "s.duckdb")
    s.load([tmp_path], workers=1)
    yield s
    s.close()
