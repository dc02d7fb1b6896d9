"""services/requests/event.py: a request log line as a ClientRequest event and back, exactly, through the archive's
encodings (fastavro's and the hand-written one, byte for byte); its identity survives a rolled log."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import codec
from schemas.archive import fastencode
from schemas.events import SourceKind
from schemas.requests.kept import body_json, body_of, line_of
from services.requests.event import request_events, to_event
from schemas.requests.record import (AUTHORIZER_LOGGER, REQUEST_LOGGER, AclChange, Body, ConfigSet, FeatureChange,
                                      QuotaChange, RequestLine, Resource, ScramChange, Target)

text = st.text(max_size=12)
maybe_text = st.none() | text
ints = st.integers(-(1 << 31), (1 << 31) - 1)
maybe_int = st.none() | ints
ids = st.lists(ints, max_size=4).map(tuple)

bodies = st.builds(
    Body,
    topics=st.lists(text, max_size=3).map(tuple),
    topic_ids=st.lists(text, max_size=2).map(tuple),
    counts=st.lists(st.tuples(text, ints), max_size=2).map(tuple),
    replication_factors=st.lists(st.tuples(text, ints), max_size=2).map(tuple),
    targets=st.lists(st.builds(Target, text, maybe_int, st.none() | ids), max_size=3).map(tuple),
    configs=st.lists(st.builds(ConfigSet, ints, text, text, maybe_text, maybe_text, st.booleans()), max_size=3)
    .map(tuple),
    election_type=st.sampled_from([None, "PREFERRED", "UNCLEAN"]),
    elect_all=st.booleans(),
    acls=st.lists(st.builds(AclChange, st.sampled_from(["create", "delete"]), ints, maybe_text, maybe_int, maybe_text,
                            maybe_text, ints, ints), max_size=2).map(tuple),
    scram=st.lists(st.builds(ScramChange, st.sampled_from(["upsert", "delete"]), text, ints, maybe_int, maybe_int),
                   max_size=2).map(tuple),
    quotas=st.lists(st.builds(QuotaChange, st.lists(st.tuples(text, maybe_text), max_size=2).map(tuple), text,
                              st.none() | st.floats(allow_nan=False, allow_infinity=False), st.booleans()),
                    max_size=2).map(tuple),
    features=st.lists(st.builds(FeatureChange, text, ints, maybe_int, st.none() | st.booleans()), max_size=2)
    .map(tuple),
    nodes=ids,
    validate_only=st.none() | st.booleans(),
    withheld_bytes=maybe_int,
)

lines = st.builds(
    RequestLine,
    log=st.sampled_from([AUTHORIZER_LOGGER, REQUEST_LOGGER]), form=text,
    file=st.sampled_from(["/logs/n1/kafka-request.log", "n2/kafka-authorizer.log.2026-11-20-03.gz"]),
    line=st.integers(1, 1 << 40), time_ms=st.integers(0, 1 << 45), level=text, principal=text,
    api=maybe_text, api_key=maybe_int, api_version=maybe_int, correlation_id=maybe_int, client_id=maybe_text,
    host=maybe_text, listener=maybe_text, security_protocol=maybe_text, software_name=maybe_text,
    software_version=maybe_text, connection=maybe_text, forwarded=st.none() | st.booleans(),
    outcome=st.sampled_from([None, "allowed", "denied"]), operation=maybe_text,
    resources=st.lists(st.builds(Resource, st.sampled_from(["Topic", "Cluster", "Group"]),
                                 st.sampled_from(["LITERAL", "PREFIXED"]), text), max_size=3).map(tuple),
    rule=maybe_text, ref_count=maybe_int, error_codes=st.lists(st.integers(-32768, 32767), max_size=3).map(tuple),
    body=st.none() | bodies,
)


@settings(max_examples=300, deadline=None)
@given(lines, st.integers(-1, 5), st.integers(0, 3))
def test_a_line_is_its_event_and_back_through_both_encoders(r, node, place):
    e = to_event("c1", node, r, place, 1_800_000_000_000)
    assert e.source.kind is SourceKind.REQUEST_LOG and e.source.node_id == node
    want = replace(r, file=Path(r.file).name)
    assert line_of(e) == want
    data = codec.encode(e)
    assert line_of(codec.decode(data)) == want
    head, tail = fastencode.parts(e, e.seq, e.prev_hash)
    assert head + fastencode.string(e.hash) + tail == data[codec.HEADER_LEN:]


@settings(max_examples=200, deadline=None)
@given(bodies)
def test_a_body_is_its_json_and_back(b):
    assert body_of(body_json(b)) == b


def test_the_json_leaves_out_what_is_at_its_default():
    assert body_json(Body()) == "{}"
    assert body_json(Body(topics=("a",), validate_only=False)) == '{"topics":["a"],"validate_only":false}'


def _line(file: str, line: int, ms: int, principal: str = "User:a") -> RequestLine:
    log = AUTHORIZER_LOGGER if "authorizer" in file else REQUEST_LOGGER
    return RequestLine(log, "request-json", file, line, ms, "DEBUG", principal, "CreateTopics", 19)


def test_an_id_is_the_node_the_log_the_millisecond_and_the_place_in_it_not_the_file_or_line():
    nodes = {Path("n1"): 1, Path("n2"): 2}
    before = [_line("n1/kafka-request.log", 7, 100), _line("n1/kafka-request.log", 8, 100),
              _line("n2/kafka-request.log", 7, 100), _line("n1/kafka-authorizer.log", 7, 100)]
    rolled = [replace(r, file=r.file.replace(".log", ".log.2026-11-20-03"), line=r.line + 1000) for r in before]
    first = [e.event_id for e in request_events("c1", before, nodes)]
    assert len(set(first)) == 4  # another place in the millisecond, another node, another log: another event
    assert [e.event_id for e in request_events("c1", rolled, nodes)] == first
    assert list(request_events("c1", rolled, nodes, known=set(first[:3]), clock=lambda: 1.0)) == \
        list(request_events("c1", rolled, nodes, clock=lambda: 1.0))[3:]


def test_a_clock_that_stepped_back_meets_a_millisecond_again_and_counts_on():
    nodes = {Path("n1"): 1}
    got = list(request_events("c1", [_line("n1/kafka-request.log", 1, 100), _line("n1/kafka-request.log", 2, 99),
                                     _line("n1/kafka-request.log", 3, 100)], nodes))
    assert [e.source.index for e in got] == [0, 0, 1] and len({e.event_id for e in got}) == 3


def test_a_kept_request_this_build_does_not_read_is_one_error_naming_its_seq():
    import pytest

    from schemas.errors import CodecError

    e = to_event("c1", 1, _line("n1/kafka-request.log", 1, 100), 0, 0)
    for bad_body, resources in (('{"topics": 7}', ()), ("[1]", ()), ('{"nope": 1}', ()), ("{", ()),
                                (None, ("Topic-no-colons",))):
        bad = replace(e, seq=41, payload=replace(e.payload, body=bad_body, resources=resources))
        with pytest.raises(CodecError, match=r"^seq 41: a ClientRequest this build does not read"):
            line_of(bad)
