"""The native flat decoder (schemas.archive.fastflat) against the Python path (container.iter_records +
flat.flatten + flat.to_arrow), which is the reference: same schema, same rows, or a CodecError."""
from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.archive_files import reseal, seal
from schemas.archive.chain import record_hash
from schemas import codec, loader
from schemas.archive import container, fastflat, flat
from schemas.errors import CodecError
from tests.schemas.samples import PAYLOADS, chained_history, sample_event

native = pytest.mark.skipif(not fastflat.available(), reason="schemas._flatdecode not built")


def python_table(path: Path) -> pa.Table | Exception:
    try:
        return flat.to_arrow(flat.flatten(r) for r in container.iter_records(path))
    except Exception as exc:  # noqa: BLE001 - the reference may fail in any way; we compare outcomes
        return exc


def native_table(path: Path) -> pa.Table | Exception:
    try:
        table = fastflat.decode_file(path)
    except (CodecError, fastflat.Unsupported) as exc:
        return exc
    table.validate(full=True)
    assert table.schema == flat.ARROW_SCHEMA
    return table


def assert_same(path: Path) -> pa.Table:
    want, got = python_table(path), native_table(path)
    assert isinstance(want, pa.Table), want
    assert isinstance(got, pa.Table), got
    assert got.equals(want), _diff(got, want)
    return got


def assert_consistent(path: Path, exact: bool) -> str:
    """Native gives CodecError (or refuses) or exactly the reference's table, never anything else.
    exact: the native decoder must fail exactly when the reference does."""
    want, got = python_table(path), native_table(path)
    if isinstance(got, fastflat.Unsupported):
        return "unsupported"
    if isinstance(got, CodecError):
        assert str(path) in str(got)
        if exact:
            assert isinstance(want, Exception), f"native failed ({got}) but the Python path read {want.num_rows} rows"
        return "error"
    assert isinstance(want, pa.Table), f"native read {got.num_rows} rows but the Python path failed: {want!r}"
    assert got.equals(want), _diff(got, want)
    return "equal"


def _diff(got: pa.Table, want: pa.Table) -> str:
    if got.num_rows != want.num_rows:
        return f"{got.num_rows} rows != {want.num_rows}"
    for name in want.column_names:
        a, b = got[name].to_pylist(), want[name].to_pylist()
        if a != b:
            i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
            return f"column {name} row {i}: {a[i]!r} != {b[i]!r}"
    return "tables differ"


# --- the decoder matches the schema and the layout ----------------------------------------------

def test_available_when_built() -> None:
    # The extension is optional, but in this repository's venv it is built by `pip install -e .`.
    try:
        from schemas import _flatdecode  # noqa: F401
    except ImportError:
        pytest.skip("extension not built")
    assert fastflat.available()


@native
def test_columns_and_symbols_are_the_schema_s() -> None:
    from schemas import _flatdecode as N

    assert [name for name, _ in N.COLUMNS] == flat.COLUMN_NAMES
    enums: dict[str, list[str]] = {}
    branches: list[str] = []

    def walk(t: Any) -> None:
        if isinstance(t, list):
            for x in t:
                walk(x)
        elif isinstance(t, dict):
            if t["type"] == "enum":
                enums[t["name"]] = t["symbols"]
            for f in t.get("fields", []):
                walk(f["type"])
                if f["name"] == "payload":
                    branches.extend(x["name"] for x in f["type"])
            if t["type"] == "array":
                walk(t["items"])

    walk(loader.current().json)
    symbols = dict(N.SYMBOLS)
    assert list(symbols.pop("payload")) == branches
    assert {k: list(v) for k, v in symbols.items()} == enums


def test_without_the_extension_decode_file_refuses(monkeypatch) -> None:
    monkeypatch.setenv("CTRLAUDIT_NATIVE", "0")
    assert not fastflat.available()
    with pytest.raises(fastflat.Unsupported):
        fastflat.decode_file("/nonexistent.avro")


# --- equality with the Python path -------------------------------------------------------------

@native
@pytest.mark.parametrize("codec_name", ["null", "deflate"])
def test_every_payload_kind(tmp_path: Path, codec_name: str) -> None:
    path = tmp_path / "all.avro"
    container.write_events(path, chained_history(), codec=codec_name)
    table = assert_same(path)
    assert sorted(table.column("kind").to_pylist()) == sorted(PAYLOADS)


@native
@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_one_kind_alone(tmp_path: Path, kind: str) -> None:
    # a file with a single kind: every column of the other kinds is all-NULL (no child values)
    path = tmp_path / f"{kind}.avro"
    container.write_events(path, [sample_event(kind, offset=i) for i in range(3)])
    assert_same(path)


@native
def test_nulls_and_edges(tmp_path: Path) -> None:
    """Nullable fields both ways, empty lists, an unregistered broker, a created/deleted partition."""
    from schemas import BrokerChange, BrokerChangeKind, BrokerState, SourcePosition, SourceKind
    from dataclasses import replace

    base = sample_event("PartitionChange")
    pc = base.payload
    events = [
        replace(base, payload=replace(pc, before=None, reason=None, changes=())),
        replace(base, payload=replace(pc, after=None), metadata_version=None,
                source=SourcePosition(SourceKind.ZOOKEEPER, offset=-1, zxid=77, file=None, line=3)),
        replace(base, payload=BrokerChange(broker_id=4, kind=BrokerChangeKind.REGISTERED, before=None,
                                           after=BrokerState(4, 9, fenced=True, rack=None))),
        replace(base, payload=BrokerChange(broker_id=4, kind=BrokerChangeKind.UNREGISTERED,
                                           before=BrokerState(4, 9, fenced=False, rack="r2"), after=None)),
        replace(base, payload=BrokerChange(broker_id=5, kind=BrokerChangeKind.UNKNOWN, before=None, after=None)),
        replace(base, cluster_id="ü-\U0001f600-cluster", payload=replace(pc, topic="tøpic-\u4e2d")),
        # a request's correlation id and its log line (the envelope's), kept; a line beyond int32 is not known
        replace(base, payload=replace(PAYLOADS["ClientRequest"], correlation_id=42),
                source=SourcePosition(SourceKind.REQUEST_LOG, offset=5, file="kafka-request.log", line=7)),
        replace(base, payload=replace(PAYLOADS["ClientRequest"], correlation_id=None),
                source=SourcePosition(SourceKind.REQUEST_LOG, offset=5, file="kafka-request.log", line=2**40)),
    ]
    path = tmp_path / "edges.avro"
    container.write_events(path, events)
    table = assert_same(path)
    assert table.column("rq_correlation_id").to_pylist()[-2:] == [42, None]
    assert table.column("rq_line").to_pylist()[-2:] == [7, None]
    assert table.column("rq_log").to_pylist()[-1] == "kafka.authorizer.logger"


@native
def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.avro"
    container.write_events(path, [])
    assert assert_same(path).num_rows == 0


@native
@pytest.mark.parametrize("codec_name", ["null", "deflate"])
def test_many_blocks(tmp_path: Path, codec_name: str) -> None:
    from services.simulator import simulate
    from services.simulator.config import SimConfig

    events = list(simulate(SimConfig(seed=3, events=3000)))
    path = tmp_path / "blocks.avro"
    container.write_events(path, events, codec=codec_name, sync_interval=700)  # a few records a block
    assert assert_same(path).num_rows == 3000


@pytest.mark.slow
@native
@pytest.mark.parametrize("seed,elr", [(1, False), (7, True)])
def test_simulator_histories(tmp_path: Path, seed: int, elr: bool) -> None:
    from services.simulator import simulate_to_archive
    from services.simulator.config import SimConfig

    config = SimConfig(seed=seed, events=20000, elr=elr, metadata_version=23 if elr else 21)
    simulate_to_archive(tmp_path, config)
    files = sorted(tmp_path.rglob("*.avro"))
    assert files
    assert sum(assert_same(f).num_rows for f in files) == 20000


# --- hypothesis: events straight from the schema ------------------------------------------------

def _strategy(schema: Any, named: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Avro values of `schema` as fastavro writes them (payload branches as (name, record))."""
    if isinstance(schema, str):
        prim = {
            "int": st.integers(-(2**31), 2**31 - 1), "long": st.integers(-(2**63), 2**63 - 1),
            "boolean": st.booleans(), "string": st.text(max_size=6), "bytes": st.binary(max_size=6),
            "null": st.none(),
        }
        return prim[schema] if schema in prim else st.deferred(lambda: named[schema])
    if isinstance(schema, list):
        options = []
        for branch in schema:
            s = _strategy(branch, named)
            if isinstance(branch, dict) and branch.get("type") == "record":
                s = st.tuples(st.just(f"ctrlaudit.{branch['name']}"), s)
            options.append(s)
        return st.one_of(options)
    t = schema["type"]
    if t == "record":
        s = st.fixed_dictionaries({f["name"]: _strategy(f["type"], named) for f in schema["fields"]})
        named[schema["name"]] = s
        return s
    if t == "enum":
        s = st.sampled_from(schema["symbols"])
        named[schema["name"]] = s
        return s
    if t == "array":
        return st.lists(_strategy(schema["items"], named), max_size=4)
    return _strategy(t, named)


EVENT_RECORDS = _strategy(loader.by_version(1).json, {})


@native
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                  HealthCheck.function_scoped_fixture])
@given(records=st.lists(EVENT_RECORDS, min_size=0, max_size=12), deflate=st.booleans(),
       interval=st.sampled_from([1, 300, 64 * 1024]))
def test_generated_events(tmp_path: Path, records: list[dict[str, Any]], deflate: bool, interval: int) -> None:
    path = tmp_path / "gen.avro"
    with open(path, "wb") as fo:
        fastavro.writer(fo, loader.current().parsed, records, codec="deflate" if deflate else "null",
                        sync_interval=interval)
    assert_same(path)


# --- damage: never a crash, never a different table ---------------------------------------------

@pytest.fixture(scope="module")
def small_files(tmp_path_factory) -> dict[str, bytes]:
    d = tmp_path_factory.mktemp("small")
    out = {}
    for codec_name in ("null", "deflate"):
        path = d / f"{codec_name}.avro"
        container.write_events(path, chained_history(), codec=codec_name, sync_interval=900)
        out[codec_name] = path.read_bytes()
    return out


@pytest.mark.slow
@native
@pytest.mark.parametrize("codec_name", ["null", "deflate"])
def test_truncated_at_every_byte(tmp_path: Path, small_files: dict[str, bytes], codec_name: str) -> None:
    data = small_files[codec_name]
    path = tmp_path / "cut.avro"
    outcomes = {"equal": 0, "error": 0, "unsupported": 0}
    header_end = _header_end(data)
    for cut in range(len(data)):
        path.write_bytes(data[:cut])
        if cut < header_end:  # a cut header: the Python path cannot read it either (not re-run: slow)
            with pytest.raises(CodecError, match="not an Avro object container file"):
                fastflat.decode_file(path)
            continue
        outcomes[assert_consistent(path, exact=True)] += 1
    assert outcomes["error"] > 0 and outcomes["equal"] > 0 and outcomes["unsupported"] == 0


def _header_end(data: bytes) -> int:
    from schemas import _flatdecode as N

    return N.read_header(data)[2]


@native
@pytest.mark.parametrize("codec_name", ["null", "deflate"])
def test_flipped_bytes(tmp_path: Path, small_files: dict[str, bytes], codec_name: str) -> None:
    data = small_files[codec_name]
    header_end = _header_end(data)
    rng = random.Random(20240607)
    path = tmp_path / "flip.avro"
    outcomes = {"equal": 0, "error": 0, "unsupported": 0}
    for i in range(400):
        damaged = bytearray(data)
        for _ in range(rng.choice([1, 1, 2, 5])):
            pos = rng.randrange(header_end if i % 4 else 0, len(damaged))
            damaged[pos] = rng.randrange(256) if rng.random() < 0.5 else damaged[pos] ^ (1 << rng.randrange(8))
        path.write_bytes(bytes(damaged))
        outcomes[assert_consistent(path, exact=False)] += 1
    assert outcomes["error"] > 0


def _v1_container(tmp_path: Path, body: bytes, count: int = 1) -> Path:
    """A container file with v1's header and one block holding `body` (raw record bytes)."""
    buf = io.BytesIO()
    fastavro.writer(buf, loader.current().parsed, [])
    header = buf.getvalue()
    sync = header[-16:]
    path = tmp_path / "raw.avro"
    path.write_bytes(header + _zz(count) + _zz(len(body)) + body + sync)
    return path


def _zz(n: int) -> bytes:
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        if u < 0x80:
            out.append(u)
            return bytes(out)
        out.append((u & 0x7F) | 0x80)
        u >>= 7


def _encode(schema_json: dict[str, Any], record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema_json), record)
    return buf.getvalue()


def _variant(edit) -> dict[str, Any]:
    schema = json.loads(json.dumps(loader.by_version(1).json))
    edit(schema)
    return schema


def _partition_change(schema: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in schema["fields"][-1]["type"] if t["name"] == "PartitionChange")


@native
@pytest.mark.parametrize("case", ["enum", "union", "int32", "utf8", "trailing", "count"])
def test_invalid_values_are_codec_errors(tmp_path: Path, case: str) -> None:
    """Bodies that v1 cannot hold, in a v1 container: CodecError naming the file and record 0."""
    record = codec.to_avro(sample_event("PartitionChange"))
    body = _encode(loader.by_version(1).json, record)
    if case == "enum":  # an ElectionType index past the last symbol
        schema = _variant(lambda s: _partition_change(s)["fields"][6]["type"]["symbols"].append("EXTRA"))
        body = _encode(schema, {**record, "payload": ("ctrlaudit.PartitionChange", {**record["payload"][1], "election": "EXTRA"})})
    elif case == "union":  # a tenth payload branch
        schema = _variant(lambda s: s["fields"][-1]["type"].append(
            {"type": "record", "name": "Extra", "fields": [{"name": "x", "type": "int"}]}))
        body = _encode(schema, {**record, "payload": ("ctrlaudit.Extra", {"x": 1})})
    elif case == "int32":  # a partition number beyond int32
        schema = _variant(lambda s: _partition_change(s)["fields"][2].update(type="long"))
        body = _encode(schema, {**record, "payload": ("ctrlaudit.PartitionChange", {**record["payload"][1], "partition": 2**40})})
    elif case == "utf8":
        body = body.replace(b"orders", b"ord\xffrs")
    elif case == "trailing":
        body = body + b"\x00"
    path = _v1_container(tmp_path, body, count=2 if case == "count" else 1)
    with pytest.raises(CodecError) as got:
        fastflat.decode_file(path)
    assert str(path) in str(got.value)
    # a block's count and its bytes are checked after its records: record 1 for those two
    assert f"record {1 if case in ('trailing', 'count') else 0}" in str(got.value)
    assert isinstance(python_table(path), Exception) or case in ("trailing", "int32")


@native
def test_long_varints_and_negative_lengths(tmp_path: Path) -> None:
    record = codec.to_avro(sample_event("CaptureGap"))
    body = _encode(loader.by_version(1).json, record)
    for bad in (b"\xff" * 11 + b"\x01", b"\x01", b"\x7f" + b"x" * 5):  # 11-byte varint, length -1, 63 > left
        path = _v1_container(tmp_path, bad + body[len(_zz(32)):])  # event_id: its length replaced
        with pytest.raises(CodecError):
            fastflat.decode_file(path)


# --- refusals and fallbacks ----------------------------------------------------------------------

@native
def test_another_writer_schema_is_refused(tmp_path: Path) -> None:
    from tests.schemas.test_evolution import make_v2

    v2 = make_v2()
    records = [codec.to_avro(e) for e in chained_history()]
    for r in records:
        r["capture_host"] = "h1"
        p = r["payload"][1]
        for side in ("before", "after"):
            if r["payload"][0].endswith("PartitionChange") and p.get(side):
                p[side]["directories"] = ["d1"]
    # a v2 writer hashes each event's v2 body (schemas.archive.chain): re-chain them as it would
    parsed_v2, prev = fastavro.parse_schema(v2), ""
    for r in records:
        r["prev_hash"] = prev
        r["hash"] = prev = record_hash(r, parsed_v2)
    path = tmp_path / "v2.avro"
    with open(path, "wb") as fo:
        fastavro.writer(fo, fastavro.parse_schema(v2), records)
    assert not fastflat.accepts(path)
    with pytest.raises(fastflat.Unsupported):
        fastflat.decode_file(path)
    # the callers fall back to the Python path (and get the reference's table)
    from checks.inputs import archives_to_arrow

    want = python_table(path)
    assert isinstance(want, pa.Table) and want.num_rows == len(PAYLOADS)
    seal(path)  # every reader (the store's load and the checks) verifies the file against its manifest
    assert archives_to_arrow([path]).equals(want)


@native
@pytest.mark.parametrize("avro_codec", ["bzip2", "xz"])
def test_other_codec_is_refused(tmp_path: Path, avro_codec: str) -> None:
    """The archive writer writes null and deflate blocks only; any other codec inflates without a limit
    in fastavro, so such a file is refused whole (a manifest that matches it makes no difference)."""
    path = tmp_path / "bz.avro"
    container.write_events(path, chained_history())
    seal(path)
    container.write_events(path, chained_history(), codec=avro_codec)
    reseal(path)
    with pytest.raises(fastflat.Unsupported):
        fastflat.decode_file(path)
    from checks.inputs import archives_to_arrow
    from schemas.archive.verified import ArchiveProblem

    with pytest.raises(ArchiveProblem, match=f"bz.avro: unreadable: .*blocks compressed with '{avro_codec}': "
                                             "an archive holds only null or deflate blocks"):
        archives_to_arrow([path])


@native
def test_not_an_avro_file(tmp_path: Path) -> None:
    path = tmp_path / "x.avro"
    path.write_bytes(b"hello world, not avro")
    with pytest.raises(CodecError, match="not an Avro object container file"):
        fastflat.decode_file(path)
    with pytest.raises(CodecError, match="cannot open"):
        fastflat.decode_file(tmp_path / "missing.avro")


@native
def test_callers_use_the_native_path_and_agree(tmp_path: Path, monkeypatch) -> None:
    from checks.inputs import archives_to_arrow
    from services.simulator import simulate_to_archive
    from services.simulator.config import SimConfig

    simulate_to_archive(tmp_path, SimConfig(seed=5, events=4000))
    files = sorted(tmp_path.rglob("*.avro"))
    calls = []
    real = fastflat.decode_verified
    monkeypatch.setattr(fastflat, "decode_verified", lambda p, *a: calls.append(p) or real(p, *a))
    fast = archives_to_arrow(files)  # the one read path: the store's load and both check engines
    assert len(calls) == len(files)
    monkeypatch.setenv("CTRLAUDIT_NATIVE", "0")
    assert archives_to_arrow(files).equals(fast)
    assert len(calls) == len(files)


@native
def test_header_larger_than_the_first_read(tmp_path: Path) -> None:
    path = tmp_path / "big-header.avro"
    container.write_events(path, chained_history(), metadata={"note": "x" * 300_000})
    assert fastflat.accepts(path)
    assert_same(path)
    cut = tmp_path / "cut-header.avro"
    cut.write_bytes(path.read_bytes()[:200_000])
    assert not fastflat.accepts(cut)
    with pytest.raises(CodecError):
        fastflat.decode_file(cut)


@native
@pytest.mark.parametrize("batch_rows", [1, 5, 64])
def test_many_record_batches(tmp_path: Path, batch_rows: int) -> None:
    # small batches (big files get 2**21 rows a batch): rows spread over batches and
    # buffers grown past their first reservation give the same table
    from services.simulator import simulate
    from services.simulator.config import SimConfig

    path = tmp_path / "batches.avro"
    container.write_events(path, list(simulate(SimConfig(seed=4, events=600))), sync_interval=3000)
    want = python_table(path)
    got = fastflat.decode_file(path, batch_rows=batch_rows)
    got.validate(full=True)
    assert got.column(0).num_chunks > 1
    assert got.equals(want), _diff(got, want)
