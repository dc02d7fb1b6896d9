"""Single-object encoding: round trips, golden bytes, and bad input."""
from __future__ import annotations

import pytest

from schemas import CodecError, codec, loader
from tests.schemas.samples import PAYLOADS, chained_history, sample_event

# Avro bodies (after the 10-byte header) of sample_event(kind). A change here is a wire-format
# change: it needs a new schema version, not a new golden.
GOLDEN_BODIES = {
    "ControllerChange": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a00000000040e020c060204060004040600",
    "BrokerChange": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a0000000206020206f001022c5a6d3976596d4679596d4636635856346358563165410204723100000234504c41494e544558543a2f2f3132372e302e302e313a39333932000206f001022c5a6d3976596d4679596d4636635856346358563165410204723101000234504c41494e544558543a2f2f3132372e302e302e313a3933393200",
    "TopicChange": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a00000004000c6f72646572732c76484a3956743462516532576654336e4431784e3041",
    "PartitionChange": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a000000060c6f72646572732c76484a3956743462516532576654336e4431784e30410e020602040600060204060000000000020812000206020406000404060000000000040a14000404080004021e62726f6b657220312066656e636564",
    "ConfigChange": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a00000008000c6f7264657273266d696e2e696e73796e632e7265706c696361730202320000",
    "FeatureLevelChange": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a0000000a206d657461646174612e76657273696f6e2a0228",
    "OffsetSample": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a0000000c0c6f72646572730e040ad00fc8a1abfef9620604e40fcaa1abfef96206d00fcca1abfef9620201cea1abfef962001648575f5448454e5f4c454f",
    "CaptureGap": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a0000000ee807860e447365676d656e742064656c65746564206265666f7265206974207761732072656164",
    "ClientRequest": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a000000122e6b61666b612e617574686f72697a65722e6c6f67676572267374616e646172642d617574686f72697a657208494e464f18557365723a6d616c6c6f7279021844656c657465546f706963730228000000021031302e302e392e3900000000000201020c64656e696564020c44454c4554450428546f7069633a4c49544552414c3a6f72646572732e546f7069633a4c49544552414c3a7061793a6d656e747300021644656661756c7444656e790202023a00022c7b22746f70696373223a205b226f7264657273225d7d",
    "UnknownRecord": "4031333737313062343566393561363663303430313132613033376539656133342c4d6b55334f4556424e5463774e544a454e444d325167000002a4130000023030303030303030303030303030303030303030302e6c6f670080a0abfef962f4a3abfef962040e022a00000010c601000601630022756e6b6e6f776e206170694b6579203939",
}


@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_every_payload_kind_round_trips(kind: str) -> None:
    event = sample_event(kind)
    assert codec.decode(codec.encode(event)) == event


@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_golden_bytes(kind: str) -> None:
    data = codec.encode(sample_event(kind))
    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == loader.current().fingerprint
    assert data[10:].hex() == GOLDEN_BODIES[kind]


def test_golden_payload_tail_decoded_by_hand() -> None:
    # FeatureLevelChange is union branch 5 (zigzag 0x0a); "metadata.version" is 16 bytes (0x20);
    # level 21 (0x2a); previous_level is branch 1 of ["null","int"] (0x02) holding 20 (0x28).
    body = bytes.fromhex(GOLDEN_BODIES["FeatureLevelChange"])
    assert body.endswith(bytes.fromhex("0a20") + b"metadata.version" + bytes.fromhex("2a0228"))


def test_golden_client_request_tail_decoded_by_hand() -> None:
    # ClientRequest is union branch 9 (zigzag 0x12), then its strings: the logger (23 bytes, 0x2e), ...; forwarded
    # is branch 1 of ["null","boolean"] (0x02) holding true (0x01), after five nulls (listener ... connection)
    body = bytes.fromhex(GOLDEN_BODIES["ClientRequest"])
    assert bytes.fromhex("122e") + b"kafka.authorizer.logger" in body
    assert bytes.fromhex("00000000000201020c") + b"denied" in body


def test_chained_history_round_trips_with_hashes() -> None:
    for event in chained_history():
        assert codec.decode(codec.encode(event)) == event


def test_wrong_magic_is_named() -> None:
    data = bytearray(codec.encode(sample_event("TopicChange")))
    data[0] = 0x00
    with pytest.raises(CodecError, match=r"events\[3\]: not Avro single-object encoding: starts with 00 01"):
        codec.decode(bytes(data), where="events[3]")


def test_unknown_fingerprint_lists_known_ones() -> None:
    data = bytearray(codec.encode(sample_event("TopicChange")))
    data[2:10] = b"\x11" * 8
    with pytest.raises(CodecError, match="unknown writer schema fingerprint 1111111111111111 .known: v1="):
        codec.decode(bytes(data))


@pytest.mark.parametrize("cut", [0, 5, 10, 11, 40, -1])
def test_truncated_input_never_yields_an_event(cut: int) -> None:
    data = codec.encode(sample_event("PartitionChange"))
    with pytest.raises(CodecError):
        codec.decode(data[:cut] if cut >= 0 else data[:-1])


def test_trailing_bytes_are_refused() -> None:
    data = codec.encode(sample_event("CaptureGap")) + b"\x00"
    with pytest.raises(CodecError, match="1 unexpected bytes after the event body"):
        codec.decode(data)


def test_garbage_body_with_valid_header_is_an_error_not_an_event() -> None:
    header = codec.encode(sample_event("CaptureGap"))[:10]
    with pytest.raises(CodecError):
        codec.decode(header + b"\xff" * 64)


def test_from_avro_rejects_unknown_payload_name() -> None:
    record = codec.to_avro(sample_event("CaptureGap"))
    record["payload"] = ("ctrlaudit.Mystery", {})
    with pytest.raises(CodecError, match="unknown payload type 'ctrlaudit.Mystery'"):
        codec.from_avro(record)
