from __future__ import annotations

from dataclasses import replace

import duckdb
import fastavro
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from immutables import Map

from tests.archive_files import write_archive_file as write_events
from schemas.archive.flat import FLAT_COLUMNS, STORE_LAYOUT_VERSION
from schemas.state.delta import fold
from replay.errors import LayoutVersionError, StoreError
from replay.queries import image_at
from schemas.errors import ContractError
from replay.store import Store
from schemas.times import TimeError, parse_time

N, SEED, FILES = 1500, 11, 3  # the history and archive fixtures (conftest.py): 500 events a file


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, archive):
    store = Store(tmp_path_factory.mktemp("store") / "ctrlaudit.duckdb")
    store.load([archive], workers=2)
    yield store
    store.close()


def _without_endpoints(image):
    # The flat layout has no broker endpoints/incarnation: compare the rest.
    return replace(image, brokers=Map({k: replace(v, endpoints=(), incarnation_id=None) for k, v in image.brokers.items()}))


def _intervals(store):
    out = {}
    for t in ("partition_intervals", "topic_intervals", "broker_intervals", "controller_intervals",
              "config_intervals", "feature_intervals"):
        out[t] = sorted(map(repr, store.con.execute(f"SELECT * FROM {t}").fetchall()))
    return out


def test_events_table_has_the_flat_layout(loaded):
    cols = loaded.con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'events' "
                              "ORDER BY column_index").fetchall()
    assert [c[0] for c in cols] == [n for n, _, _ in FLAT_COLUMNS]
    assert loaded.con.execute("SELECT count(*), min(seq), max(seq) FROM events").fetchall() == [(N, 0, N - 1)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(0, N - 1))
def test_as_of_seq_equals_fold_of_prefix(loaded, history, k):
    image = image_at(loaded, loaded.point(seq=k))
    assert image == _without_endpoints(fold(history[:k + 1]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(i=st.integers(0, N - 1), delta=st.integers(-3, 3))
def test_offset_and_time_map_to_the_last_event_at_or_before(loaded, history, i, delta):
    offset = history[i].source.offset + delta
    want = max((e.seq for e in history if 0 <= e.source.offset <= offset), default=None)
    if want is None:
        with pytest.raises(StoreError):
            loaded.point(offset=offset)
    else:
        assert loaded.point(offset=offset).seq == want
    t = history[i].event_time_ms + delta
    want_t = max(e.seq for e in history if e.event_time_ms <= t) if t >= history[0].event_time_ms else None
    if want_t is not None:
        assert loaded.point(time=t).seq == want_t
        assert loaded.point(time=str(t)).seq == want_t


def test_iso_time():
    assert parse_time("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert parse_time("2023-11-14T22:13:20") == 1_700_000_000_000
    assert parse_time("2023-11-14T23:13:20.500+01:00") == 1_700_000_000_500
    with pytest.raises(TimeError, match="not a time"):
        parse_time("yesterday")


def test_load_is_idempotent(tmp_path, archive, loaded):
    store = Store(tmp_path / "s.duckdb")
    store.load([archive], workers=1)
    before = _intervals(store)
    report = store.load([archive / "events-1.avro", archive], workers=1)
    # a file named twice is read once (the same events given twice count once)
    assert (report.events_read, report.events_added) == (N, 0)
    assert store.con.execute("SELECT count(*) FROM events").fetchall()[0][0] == N
    assert _intervals(store) == before == _intervals(loaded)


@pytest.mark.parametrize("order", [(0, 1, 2), (0, 2, 1), (2, 1, 0)])
def test_incremental_load_extends_intervals(tmp_path, archive, loaded, order):
    store = Store(tmp_path / "s.duckdb")
    for i in order:  # out of order, the store holds a gap until the missing file comes
        store.load([archive / f"events-{i}.avro"], workers=1, allow_gaps=order != (0, 1, 2))
    assert _intervals(store) == _intervals(loaded)
    assert store.point().verified_to == N - 1 and store.point().gaps == ()


def test_bad_and_foreign_files_are_refused_naming_the_file(tmp_path, archive):
    store = Store(tmp_path / "s.duckdb")
    junk = tmp_path / "junk.avro"
    junk.write_bytes(b"not avro at all")
    with pytest.raises(ContractError, match="junk.avro"):
        store.load([archive / "events-0.avro", junk])
    (tmp_path / "junk.avro.manifest.json").write_text((archive / "events-0.avro.manifest.json").read_text())
    with pytest.raises(ContractError, match="junk.avro"):
        store.load([archive / "events-0.avro", junk])
    foreign = tmp_path / "foreign.avro"
    with open(foreign, "wb") as fo:
        fastavro.writer(fo, {"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]}, [{"x": 1}])
    (tmp_path / "foreign.avro.manifest.json").write_text((archive / "events-0.avro.manifest.json").read_text())
    with pytest.raises(ContractError, match="foreign.avro"):
        store.load([foreign])
    with pytest.raises(ContractError, match="nope.avro"):
        store.load([tmp_path / "nope.avro"])
    assert store.con.execute("SELECT count(*) FROM events").fetchall() == [(0,)]  # all or nothing


def test_truncated_file_is_refused(tmp_path, archive):
    data = (archive / "events-0.avro").read_bytes()
    cut = tmp_path / "cut.avro"
    cut.write_bytes(data[: len(data) // 2])
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises(ContractError, match="cut.avro: manifest: no manifest"):
            store.load([cut], workers=1)
        (tmp_path / "cut.avro.manifest.json").write_text((archive / "events-0.avro.manifest.json").read_text())
        with pytest.raises(ContractError, match="cut.avro: unreadable: corrupt or truncated"):
            store.load([cut], workers=1)


def test_chain_fork_is_refused(tmp_path, history, archive):
    forked = [replace(e, hash="f" * 64, capture_time_ms=e.capture_time_ms + 1) if e.seq == 10 else e
              for e in history[:20]]
    write_events(tmp_path / "fork.avro", forked)
    with Store(tmp_path / "s.duckdb") as store:
        store.load([archive / "events-0.avro"])
        with pytest.raises(StoreError, match="chain fork.*seq 10"):
            store.load([tmp_path / "fork.avro"])


def test_store_of_another_layout_version_is_refused(tmp_path):
    path = tmp_path / "s.duckdb"
    Store(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE store_meta SET value = '99' WHERE key = 'layout_version'")
    con.close()
    with pytest.raises(LayoutVersionError,
                       match=f"layout version 99 but this build reads version {STORE_LAYOUT_VERSION}"):
        Store(path)
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (x INT)")
    con.close()
    with pytest.raises(LayoutVersionError, match="not a ctrlaudit store"):
        Store(other)


def test_points_and_clusters(tmp_path, loaded, history):
    assert loaded.point().seq == N - 1
    assert loaded.point(event_id=history[42].event_id).seq == 42
    with pytest.raises(StoreError, match="give one of"):
        loaded.point(seq=1, offset=2)
    with pytest.raises(StoreError, match="no cluster 'x'"):
        loaded.point(cluster_id="x")
    with pytest.raises(StoreError, match="no such store"):
        Store(tmp_path / "missing.duckdb", read_only=True)


def test_offset_points_skip_offset_samples(tmp_path):
    """An offset sample's source position is its sampling time (epoch millis): `--offset N` must not
    pick it as a log position, and a point at a sample says so instead of printing a huge offset."""
    from dataclasses import replace as dc_replace

    from schemas.events import OffsetSample, SourceKind
    from tests.checks.histories import baseline

    h = baseline("c")
    h.sample("t", 0, 150, {2: 160, 3: 160, 4: 160})  # the newest event: a sample
    events = []
    for e in h.events:
        if isinstance(e.payload, OffsetSample):
            e = dc_replace(e, source=dc_replace(e.source, kind=SourceKind.OFFSET_SAMPLER, offset=1_795_326_118_759))
        events.append(e)
    h.events = events
    path = h.write(tmp_path / "h.avro")
    with Store(tmp_path / "s.duckdb") as s:
        s.load([path])
        newest = s.point()
        assert newest.source_kind == "OFFSET_SAMPLER"
        assert "an offset sample" in newest.describe() and "1795326118759" not in newest.describe()
        at = s.point(offset=10**13)  # beyond every log offset: the last log event, not the sample
        assert at.source_kind != "OFFSET_SAMPLER" and at.seq < newest.seq
        assert f"offset {at.source_offset}" in at.describe()
