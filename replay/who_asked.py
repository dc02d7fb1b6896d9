"""Who asked for each change, as the store keeps it: the `attributions` table.

An archive that keeps requests (`ctrlaudit import requests`, or capture following the request logs) holds them as
ClientRequest rows of the `events` table. A load matches them to the changes (replay/attribution.py) and
keeps one row per change a request could have made: its cause (request, ambiguous, controller, unattributed) and,
for a request, who asked (principal, host, client, software), when, on which node, and the seqs of the request's
lines and of the authorizer's decisions. A change no request makes (an ISR change, a broker's own lifecycle) is
the controller's: `asked` says so from the change alone. A cluster whose archive keeps no requests has no rows,
and `asked` says that nobody's request is known, never that the controller did it.

`explain`, `timeline`, `report` and `export --table attributions` read this table.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from schemas.times import show
from replay.attribution import (
    BOOTSTRAP, CONTROLLER, NOT_CHANGES, REQUEST, SUBJECT_COLUMNS, Attribution, attribute, controller_reason,
    requested_by, subject_of_row, wanted,
)
from replay.attribution import software as software_of
from schemas.requests.kept import body_of, resource_of
from schemas.requests.record import RequestLine

DDL = """
CREATE TABLE IF NOT EXISTS attributions (
    cluster_id VARCHAR, seq BIGINT, cause VARCHAR, why VARCHAR, api VARCHAR, principal VARCHAR, host VARCHAR,
    client_id VARCHAR, software_name VARCHAR, software_version VARCHAR, listener VARCHAR, request_time_ms BIGINT,
    received_by INTEGER, request_seqs BIGINT[], decision_seqs BIGINT[], principals VARCHAR[]);
"""
# the kinds and partition changes a request may cause (attribute.wanted): the rows a rebuild reads
_MAY_BE_ASKED = """kind IN ('TopicChange', 'ConfigChange', 'FeatureLevelChange')
    OR (kind = 'BrokerChange' AND broker_change = 'UNREGISTERED')
    OR (kind = 'PartitionChange' AND (list_has_any(changes, ['CREATE', 'DELETE', 'REASSIGNMENT_START',
        'REASSIGNMENT_CANCEL']) OR (list_contains(changes, 'LEADER') AND election IN ('PREFERRED', 'UNCLEAN'))))"""
_REQUEST_COLUMNS = ("seq", "source_node", "source_file", "rq_line", "event_time_ms", "rq_log", "rq_principal",
                    "rq_api", "rq_correlation_id", "rq_client_id", "rq_host", "rq_listener", "rq_software_name",
                    "rq_software_version", "rq_forwarded", "rq_outcome", "rq_operation", "rq_resources",
                    "rq_error_codes", "rq_body")


@dataclass(frozen=True, slots=True)
class Asked:
    """Who asked for one change, as a person reads it (`text`) and as its fields."""
    cause: str  # request | ambiguous | controller | unattributed | bootstrap | not kept
    text: str
    principal: str | None = None
    host: str | None = None
    client_id: str | None = None
    software: str | None = None
    api: str | None = None
    request_time_ms: int | None = None
    received_by: int | None = None
    request_seqs: tuple[int, ...] = ()


NOT_KEPT = "not kept"


def has_requests(con: duckdb.DuckDBPyConnection, cluster: str) -> bool:
    return bool(con.execute("SELECT count(*) > 0 FROM events WHERE cluster_id = $c AND kind = 'ClientRequest'",
                            {"c": cluster}).fetchall()[0][0])


def _lines(con: duckdb.DuckDBPyConnection, cluster: str) -> tuple[list[RequestLine], dict[int, tuple[int, int]],
                                                                   list[int]]:
    """The cluster's kept requests as the records they were read from; each line's (seq, node) by its id(); and the
    seqs of requests this build cannot read back (left out of the matching, and said so)."""
    rows = con.execute(f"SELECT {', '.join(_REQUEST_COLUMNS)} FROM events WHERE cluster_id = $c "
                       "AND kind = 'ClientRequest' ORDER BY seq", {"c": cluster}).fetchall()
    lines, where, unread = [], {}, []
    for (seq, node, file, line, at, log, principal, api, correlation, client, host, listener, software, version,
         forwarded, outcome, operation, resources, errors, body) in rows:
        try:
            r = RequestLine(log=log or "", form="", file=file or "", line=line or 0, time_ms=at, level="",
                            principal=principal, api=api, api_key=None, correlation_id=correlation, client_id=client,
                            host=host, listener=listener, software_name=software, software_version=version,
                            forwarded=forwarded, outcome=outcome, operation=operation,
                            resources=tuple(resource_of(x) for x in resources or ()), error_codes=tuple(errors or ()),
                            body=None if body is None else body_of(body))
        except (ValueError, KeyError, TypeError):  # verified bytes, but not a body or resource this build writes
            unread.append(seq)
            continue
        lines.append(r)
        where[id(r)] = (seq, node)
    return lines, where, unread


def rebuild(con: duckdb.DuckDBPyConnection, cluster: str) -> list[int]:
    """The cluster's attributions made again from its events (after a load added some); gives the seqs of requests
    that could not be read back."""
    con.execute("DELETE FROM attributions WHERE cluster_id = $c", {"c": cluster})
    if not has_requests(con, cluster):
        return []
    lines, where, unread = _lines(con, cluster)
    subjects = [subject_of_row(r) for r in con.execute(
        f"SELECT {', '.join(SUBJECT_COLUMNS)} FROM events WHERE cluster_id = $c AND NOT bootstrap AND "
        f"({_MAY_BE_ASKED}) ORDER BY seq", {"c": cluster}).fetchall()]
    # the first activation's batch (attribute.py) is known by metadata.version's first level
    subjects += [subject_of_row(r) for r in con.execute(
        f"SELECT {', '.join(SUBJECT_COLUMNS)} FROM events WHERE cluster_id = $c AND kind = 'FeatureLevelChange' "
        "AND feature = 'metadata.version' AND feature_prev_level IS NULL AND bootstrap", {"c": cluster}).fetchall()]
    # the stretches of the logs not read (gap_events): gaps of attribution
    not_read = [r[0] for r in con.execute("SELECT reason FROM events WHERE cluster_id = $c AND kind = 'CaptureGap' "
                                          "AND source_kind = 'REQUEST_LOG' ORDER BY seq", {"c": cluster}).fetchall()]
    rows = [_row(cluster, a, where) for a in attribute(subjects, lines, unread=not_read) if a.cause != BOOTSTRAP]
    if rows:
        con.executemany("INSERT INTO attributions VALUES (" + ", ".join("?" * 16) + ")", rows)
    return unread


def _row(cluster: str, a: Attribution, where: dict[int, tuple[int, int]]) -> list[Any]:
    first = a.requests[0][0] if a.requests else (a.decisions[-1] if a.decisions else None)
    principals = sorted({g[0].principal for g in a.requests} or {d.principal for d in a.decisions})
    evidence = [[where[id(x)][0] for g in a.requests for x in g], [where[id(d)][0] for d in a.decisions], principals]
    if a.cause != REQUEST or first is None:
        return [cluster, a.seq, a.cause, a.why, *[None] * 9, *evidence]
    # the request log's line may lack the host the authorizer's decision on it names
    host = first.host or next((d.host for d in a.decisions if d.principal == first.principal and d.host), None)
    return [cluster, a.seq, a.cause, a.why, first.api, first.principal, host, first.client_id, first.software_name,
            first.software_version, first.listener, first.time_ms, where[id(first)][1], *evidence]


def _text(r: Sequence[Any]) -> Asked:
    (seq, cause, why, api, principal, host, client, software, version, listener, at, node, request_seqs) = r
    if cause != REQUEST or principal is None:
        return Asked(cause, f"{cause}: {why}", request_seqs=tuple(request_seqs or ()))
    return Asked(cause, requested_by(principal, host, client, software, version, at, node, api, listener), principal,
                 host, client, software_of(software, version), api, at, node, tuple(request_seqs or ()))


def asked(con: duckdb.DuckDBPyConnection, cluster: str, seqs: Iterable[int]) -> dict[int, Asked]:
    """Who asked for each change in `seqs` (changes only: a request, a sample or a gap gets no answer)."""
    seqs = sorted(set(seqs))
    if not seqs:
        return {}
    con.execute("CREATE OR REPLACE TEMP TABLE asked_seqs (seq BIGINT)")
    con.executemany("INSERT INTO asked_seqs VALUES (?)", [[s] for s in seqs])
    found = {r[0]: _text(r) for r in con.execute(
        "SELECT a.seq, cause, why, api, principal, host, client_id, software_name, software_version, listener, "
        "request_time_ms, received_by, request_seqs FROM attributions a SEMI JOIN asked_seqs s ON a.seq = s.seq "
        "WHERE a.cluster_id = $c", {"c": cluster}).fetchall()}
    kept = has_requests(con, cluster)
    rest = con.execute(f"SELECT {', '.join('e.' + c for c in SUBJECT_COLUMNS)} FROM events e SEMI JOIN asked_seqs s "
                       "ON e.seq = s.seq WHERE e.cluster_id = $c", {"c": cluster}).fetchall()
    con.execute("DROP TABLE asked_seqs")
    for r in rest:
        s = subject_of_row(r)
        if s.seq in found or s.kind in NOT_CHANGES:
            continue
        if s.bootstrap:
            found[s.seq] = Asked(BOOTSTRAP, "bootstrap: the state the log or snapshot starts with")
        elif wanted(s) is None:
            found[s.seq] = Asked(CONTROLLER, f"controller: {controller_reason(s)}")
        elif not kept:
            found[s.seq] = Asked(NOT_KEPT, "not known (the archive keeps no request logs; "
                                           "`ctrlaudit import requests` adds them)")
        else:  # a store loaded before this change's requests were matched: never a guess
            found[s.seq] = Asked(NOT_KEPT, "not matched in this store (load the archive into a new store)")
    return found


_S = pa.string()
TABLE_SCHEMA = pa.schema([("seq", pa.int64()), ("time", _S), ("change", _S), ("topic", _S), ("partition", pa.int32()),
                          ("resource", _S), ("cause", _S), ("principal", _S), ("host", _S), ("client_id", _S),
                          ("software", _S), ("api", _S), ("request_time", _S), ("received_by", pa.int32()),
                          ("request_seqs", pa.list_(pa.int64())), ("why", _S)])


def table(con: duckdb.DuckDBPyConnection, cluster: str, after_seq: int | None = None,
          to_seq: int | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Who changed what, the table an auditor reads: every change a request may have made, and every denied
    attempt, in time order (columns, rows); within a window, the changes after `after_seq` up to `to_seq` and the
    denied attempts between those two events' times."""
    cols = TABLE_SCHEMA.names
    rows = con.execute("""
        SELECT e.seq, e.event_time_ms, coalesce(array_to_string(e.changes, ','), e.topic_change, e.broker_change,
               e.config_name, e.feature, e.kind), e.topic, e."partition",
               coalesce(e.config_resource, CAST(e.broker_id AS VARCHAR), e.feature), a.cause, a.principal, a.host,
               a.client_id, a.software_name, a.software_version, a.api,
               a.request_time_ms, a.received_by, a.request_seqs, a.why
        FROM attributions a JOIN events e ON e.cluster_id = a.cluster_id AND e.seq = a.seq
        WHERE a.cluster_id = $c AND ($lo IS NULL OR e.seq > $lo) AND ($hi IS NULL OR e.seq <= $hi)
        UNION ALL
        SELECT seq, event_time_ms, 'denied ' || coalesce(rq_operation, ''), NULL, NULL,
               array_to_string(rq_resources, ','), 'denied', rq_principal, rq_host, rq_client_id, NULL, NULL, rq_api,
               event_time_ms, source_node, [seq], 'the authorizer denied it: nothing changed'
        FROM events WHERE cluster_id = $c AND kind = 'ClientRequest' AND rq_outcome = 'denied'
          -- a window that opens before the first event has no lower bound
          AND event_time_ms >= coalesce((SELECT event_time_ms FROM events WHERE cluster_id = $c AND seq = $lo),
                                        event_time_ms)
          AND event_time_ms <= coalesce((SELECT event_time_ms FROM events WHERE cluster_id = $c AND seq = $hi),
                                        event_time_ms)
        ORDER BY 2, 1""", {"c": cluster, "lo": after_seq, "hi": to_seq}).fetchall()
    return cols, [(r[0], show(r[1]), *r[2:10], software_of(r[10], r[11]), r[12], None if r[13] is None else show(r[13]),
                   *r[14:]) for r in rows]

