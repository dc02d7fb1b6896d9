"""The flat events table."""
from __future__ import annotations

import duckdb

from schemas import codec

from schemas.archive import flat
from tests.schemas.samples import PAYLOADS, chained_history


def test_every_kind_flattens_to_the_full_width() -> None:
    rows = [flat.flatten(codec.to_avro(e)) for e in chained_history()]
    assert {len(r) for r in rows} == {len(flat.FLAT_COLUMNS)}
    table = flat.to_arrow(rows)
    assert table.schema == flat.ARROW_SCHEMA
    assert table.num_rows == len(PAYLOADS)


def test_columns_carry_the_payload_values() -> None:
    events_table = flat.to_arrow(  # noqa: F841 - read by name by DuckDB's replacement scan
        flat.flatten(codec.to_avro(e)) for e in chained_history())
    got = duckdb.sql(
        "SELECT kind, b_isr, a_isr, a_leader, election, s_hw, s_leos, cc_epoch, broker_fenced, config_value, "
        "feature_level, gap_from, unknown_api_key FROM events_table ORDER BY seq"
    ).fetchall()
    by_kind = {row[0]: row[1:] for row in got}
    assert by_kind["PartitionChange"][:4] == ([1, 2, 3], [2, 3], 2, "CLEAN")
    assert by_kind["OffsetSample"][4:6] == (1000, [1010, 1000, -1])
    assert by_kind["ControllerChange"][6] == 7
    assert by_kind["BrokerChange"][7] is True
    assert by_kind["ConfigChange"][8] == "2"
    assert by_kind["FeatureLevelChange"][9] == 21
    assert by_kind["CaptureGap"][10] == 500
    assert by_kind["UnknownRecord"][11] == 99


def test_empty_input_gives_an_empty_table_of_the_right_schema() -> None:
    assert flat.to_arrow([]).schema == flat.ARROW_SCHEMA
