"""The flat `events` table: one row per ControllerEvent, one column per field a query needs.

The replay store (DuckDB) and both check engines (DuckDB, Spark) work on this one layout, so an
invariant's SQL is written once. Columns of payload kinds an event does not have are NULL.
`FLAT_COLUMNS` is the contract; `flatten` turns an Avro record (as schemas.archive.container reads it)
into a row, `to_arrow` turns rows into a pyarrow Table with exactly these types.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

INTS = pa.list_(pa.int32())

# The layout version of a DuckDB store holding this table (its store_meta row), read by the replay store
# and by `check STORE`. 2: chain_status and chain_gaps (what the load verified). 3: the ClientRequest columns
# (rq_*). 4: a request's log, correlation id and line, and the attributions table (replay/who_asked.py).
# A store of an older layout is a cache of its archive files: load them into a new store
# (`ctrlaudit load ARCHIVE --store NEW`).
STORE_LAYOUT_VERSION = 4

# (name, arrow type, meaning). Order is the row order of `flatten`.
ENVELOPE = [
    ("seq", pa.int64(), "position in the cluster's chain"),
    ("event_id", pa.string(), ""),
    ("cluster_id", pa.string(), ""),
    ("kind", pa.string(), "payload type: PartitionChange, ControllerChange, ..."),
    ("source_kind", pa.string(), ""),
    ("source_offset", pa.int64(), "metadata log offset (or sim offset); -1 if none"),
    ("source_index", pa.int32(), ""),
    ("source_node", pa.int32(), ""),
    ("source_file", pa.string(), ""),
    ("event_time_ms", pa.int64(), ""),
    ("capture_time_ms", pa.int64(), ""),
    ("controller_id", pa.int32(), ""),
    ("controller_epoch", pa.int32(), ""),
    ("metadata_version", pa.int32(), ""),
    ("bootstrap", pa.bool_(), ""),
    ("prev_hash", pa.string(), ""),
    ("hash", pa.string(), ""),
]
TOPIC = [
    ("topic", pa.string(), "PartitionChange, TopicChange, OffsetSample"),
    ("topic_id", pa.string(), "PartitionChange, TopicChange"),
    ("partition", pa.int32(), "PartitionChange, OffsetSample"),
    ("topic_change", pa.string(), "TopicChange: CREATED/DELETED"),
]
_STATE = [
    ("replicas", INTS), ("isr", INTS), ("adding", INTS), ("removing", INTS), ("elr", INTS),
    ("last_known_elr", INTS), ("leader", pa.int32()), ("leader_epoch", pa.int32()),
    ("partition_epoch", pa.int32()), ("recovery", pa.string()),
]
PARTITION = (
    [("has_before", pa.bool_(), "PartitionChange: before is not null")]
    + [(f"b_{n}", t, "PartitionChange before") for n, t in _STATE]
    + [("has_after", pa.bool_(), "PartitionChange: after is not null")]
    + [(f"a_{n}", t, "PartitionChange after") for n, t in _STATE]
    + [
        ("changes", pa.list_(pa.string()), "PartitionChange kinds"),
        ("election", pa.string(), "PartitionChange election type"),
    ]
)
CONTROLLER = [
    ("cc_leader", pa.int32(), "ControllerChange"),
    ("cc_epoch", pa.int32(), ""),
    ("cc_prev_leader", pa.int32(), ""),
    ("cc_prev_epoch", pa.int32(), ""),
    ("cc_voters", INTS, ""),
]
BROKER = [
    ("broker_id", pa.int32(), "BrokerChange"),
    ("broker_change", pa.string(), "REGISTERED/FENCED/..."),
    ("broker_epoch", pa.int64(), "after (before when unregistered)"),
    ("broker_fenced", pa.bool_(), "after; null when unregistered"),
    ("broker_shutdown", pa.bool_(), "after: in controlled shutdown"),
    ("broker_rack", pa.string(), ""),
    ("broker_prev_epoch", pa.int64(), "before; null when not registered before"),
    ("broker_prev_fenced", pa.bool_(), ""),
]
CONFIG = [
    ("config_type", pa.string(), "ConfigChange resource type"),
    ("config_resource", pa.string(), ""),
    ("config_name", pa.string(), ""),
    ("config_value", pa.string(), "null = deleted"),
    ("config_prev_value", pa.string(), ""),
]
FEATURE = [
    ("feature", pa.string(), "FeatureLevelChange"),
    ("feature_level", pa.int32(), ""),
    ("feature_prev_level", pa.int32(), ""),
]
SAMPLE = [
    ("s_leader", pa.int32(), "OffsetSample"),
    ("s_leader_epoch", pa.int32(), ""),
    ("s_hw", pa.int64(), "high watermark"),
    ("s_hw_time_ms", pa.int64(), ""),
    ("s_replicas", INTS, "broker ids, parallel to s_leos"),
    ("s_leos", pa.list_(pa.int64()), "log end offsets; -1 = no answer"),
]
OTHER = [
    ("gap_from", pa.int64(), "CaptureGap"),
    ("gap_to", pa.int64(), "CaptureGap"),
    ("unknown_api_key", pa.int32(), "UnknownRecord"),
    ("unknown_version", pa.int32(), "UnknownRecord"),
    ("reason", pa.string(), "PartitionChange reason, CaptureGap/UnknownRecord reason"),
]
REQUEST = [
    ("rq_principal", pa.string(), "ClientRequest: who asked (User:alice)"),
    ("rq_api", pa.string(), "Kafka's API name"),
    ("rq_client_id", pa.string(), ""),
    ("rq_host", pa.string(), "the client's address"),
    ("rq_listener", pa.string(), ""),
    ("rq_software_name", pa.string(), ""),
    ("rq_software_version", pa.string(), ""),
    ("rq_forwarded", pa.bool_(), "a controller's line of a request a broker forwarded"),
    ("rq_outcome", pa.string(), "allowed/denied (the authorizer's); null on a request log line"),
    ("rq_operation", pa.string(), "the ACL operation decided"),
    ("rq_resources", pa.list_(pa.string()), "<Type>:<PATTERN>:<name>"),
    ("rq_error_codes", INTS, "the response's non-zero error codes"),
    ("rq_body", pa.string(), "the body's fields that change controller state, JSON"),
    ("rq_log", pa.string(), "the logger: kafka.request.logger or kafka.authorizer.logger"),
    ("rq_correlation_id", pa.int32(), "the client's correlation id (pairs a forwarded request's two lines)"),
    ("rq_line", pa.int32(), "the line of source_file the request was read from"),
]

FLAT_COLUMNS: list[tuple[str, pa.DataType, str]] = (
    ENVELOPE + TOPIC + PARTITION + CONTROLLER + BROKER + CONFIG + FEATURE + SAMPLE + OTHER + REQUEST
)
ARROW_SCHEMA = pa.schema([(n, t) for n, t, _ in FLAT_COLUMNS])
COLUMN_NAMES = [n for n, _, _ in FLAT_COLUMNS]

_N_STATE = len(_STATE)
_NO_STATE = (None,) * _N_STATE
_NO_TOPIC = (None,) * len(TOPIC)
_NO_PARTITION = (None,) * len(PARTITION)
_NO_CONTROLLER = (None,) * len(CONTROLLER)
_NO_BROKER = (None,) * len(BROKER)
_NO_CONFIG = (None,) * len(CONFIG)
_NO_FEATURE = (None,) * len(FEATURE)
_NO_SAMPLE = (None,) * len(SAMPLE)
_NO_OTHER = (None,) * len(OTHER)
_NO_REQUEST = (None,) * len(REQUEST)


def _state(s: dict[str, Any] | None) -> tuple[Any, ...]:
    if s is None:
        return (False,) + _NO_STATE
    return (
        True, s["replicas"], s["isr"], s["adding_replicas"], s["removing_replicas"], s["elr"],
        s["last_known_elr"], s["leader"], s["leader_epoch"], s["partition_epoch"], s["leader_recovery_state"],
    )


def _line(line: int | None) -> int | None:
    """A source line as rq_line holds it: a line number beyond int32 (no log has one) is not known."""
    return line if line is not None and 0 <= line <= 2**31 - 1 else None


def flatten(r: dict[str, Any]) -> tuple[Any, ...]:
    """One row of FLAT_COLUMNS from an Avro record read with return_record_name=True."""
    s = r["source"]
    name, p = r["payload"]
    kind = name.rpartition(".")[2]
    env = (
        r["seq"], r["event_id"], r["cluster_id"], kind, s["kind"], s["offset"], s["index"], s["node_id"],
        s["file"], r["event_time_ms"], r["capture_time_ms"], r["controller_id"], r["controller_epoch"],
        r["metadata_version"], r["bootstrap"], r["prev_hash"], r["hash"],
    )
    if kind == "PartitionChange":
        return (
            env + (p["topic"], p["topic_id"], p["partition"], None)
            + _state(p["before"]) + _state(p["after"]) + (p["changes"], p["election"])
            + _NO_CONTROLLER + _NO_BROKER + _NO_CONFIG + _NO_FEATURE + _NO_SAMPLE
            + (None, None, None, None, p["reason"]) + _NO_REQUEST
        )
    if kind == "OffsetSample":
        reps = p["replicas"]
        return (
            env + (p["topic"], None, p["partition"], None) + _NO_PARTITION + _NO_CONTROLLER + _NO_BROKER
            + _NO_CONFIG + _NO_FEATURE
            + (p["leader"], p["leader_epoch"], p["high_watermark"], p["hw_time_ms"],
               [x["broker_id"] for x in reps], [x["log_end_offset"] for x in reps])
            + _NO_OTHER + _NO_REQUEST
        )
    head = env + _NO_TOPIC + _NO_PARTITION
    if kind == "ControllerChange":
        cc = (p["leader_id"], p["epoch"], p["previous_leader_id"], p["previous_epoch"], p["voters"])
        return head + cc + _NO_BROKER + _NO_CONFIG + _NO_FEATURE + _NO_SAMPLE + _NO_OTHER + _NO_REQUEST
    if kind == "BrokerChange":
        b, a = p["before"], p["after"]
        cur = a if a is not None else b
        br = (
            p["broker_id"], p["kind"], cur["epoch"] if cur else None, a["fenced"] if a else None,
            a["in_controlled_shutdown"] if a else None, cur["rack"] if cur else None,
            b["epoch"] if b else None, b["fenced"] if b else None,
        )
        return (env + _NO_TOPIC + _NO_PARTITION + _NO_CONTROLLER + br + _NO_CONFIG + _NO_FEATURE + _NO_SAMPLE
                + _NO_OTHER + _NO_REQUEST)
    if kind == "TopicChange":
        return (
            env + (p["topic"], p["topic_id"], None, p["kind"]) + _NO_PARTITION + _NO_CONTROLLER + _NO_BROKER
            + _NO_CONFIG + _NO_FEATURE + _NO_SAMPLE + _NO_OTHER + _NO_REQUEST
        )
    if kind == "ConfigChange":
        cfg = (p["resource_type"], p["resource_name"], p["name"], p["value"], p["previous_value"])
        return head + _NO_CONTROLLER + _NO_BROKER + cfg + _NO_FEATURE + _NO_SAMPLE + _NO_OTHER + _NO_REQUEST
    if kind == "FeatureLevelChange":
        feat = (p["feature"], p["level"], p["previous_level"])
        return head + _NO_CONTROLLER + _NO_BROKER + _NO_CONFIG + feat + _NO_SAMPLE + _NO_OTHER + _NO_REQUEST
    if kind == "CaptureGap":
        other = (p["from_offset"], p["to_offset"], None, None, p["reason"])
        return head + _NO_CONTROLLER + _NO_BROKER + _NO_CONFIG + _NO_FEATURE + _NO_SAMPLE + other + _NO_REQUEST
    if kind == "UnknownRecord":
        other = (None, None, p["api_key"], p["version"], p["reason"])
        return head + _NO_CONTROLLER + _NO_BROKER + _NO_CONFIG + _NO_FEATURE + _NO_SAMPLE + other + _NO_REQUEST
    if kind == "ClientRequest":
        rq = (p["principal"], p["api"], p["client_id"], p["host"], p["listener"], p["software_name"],
              p["software_version"], p["forwarded"], p["outcome"], p["operation"], p["resources"], p["error_codes"],
              p["body"], p["log"], p["correlation_id"], _line(s["line"]))
        return head + _NO_CONTROLLER + _NO_BROKER + _NO_CONFIG + _NO_FEATURE + _NO_SAMPLE + _NO_OTHER + rq
    raise ValueError(f"unknown payload type {name!r} at seq {r['seq']}")


def to_arrow(rows: Iterable[tuple[Any, ...]]) -> pa.Table:
    """A pyarrow Table with ARROW_SCHEMA from rows made by `flatten`."""
    rows = list(rows)
    if not rows:
        return ARROW_SCHEMA.empty_table()
    columns = list(zip(*rows))
    arrays = [pa.array(col, type=t) for col, (_, t, _) in zip(columns, FLAT_COLUMNS)]
    return pa.Table.from_arrays(arrays, schema=ARROW_SCHEMA)
