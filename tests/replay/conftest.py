from __future__ import annotations

import pytest

from schemas.container import write_events
from replay.store import Store
from tests.replay.fixtures import DELTA1


@pytest.fixture
def delta1_store(tmp_path):
    """A store loaded with the DELTA1 fixture (one archive file)."""
    write_events(tmp_path / "delta1.avro", DELTA1)
    store = Store(tmp_path / "s.duckdb")
    store.load([tmp_path / "delta1.avro"], workers=1)
    yield store
    store.close()
