from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every Spark test (startup costs ~5 s)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from checks.spark_engine import build_session

    session = build_session("local[2]", app_name="ctrlaudit-tests", shuffle_partitions=1)
    yield session
    session.stop()
