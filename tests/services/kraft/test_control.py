import signal
import struct

import pytest

from services.kraft import ControlRecord, CorruptBatchError, LogReader
from services.kraft.batch import build_batch
from services.kraft.crc import crc32c
from services.kraft.wire import write_varint

from .helpers import control_key, control_value


def test_leader_change_is_decoded_at_version_0(tmp_path):
    v = control_value("LeaderChangeMessage", {
        "version": 0, "leaderId": 3, "voters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
        "grantingVoters": [{"voterId": 3}, {"voterId": 2}]})
    assert len(control_value("LeaderChangeMessage", {
        "version": 0, "leaderId": 1, "voters": [{"voterId": 1}],
        "grantingVoters": [{"voterId": 1}]})) == 19  # kafka-formats.md §4
    f = tmp_path / "x.log"
    f.write_bytes(build_batch([(control_key(2), v)], base_offset=0, leader_epoch=7, control=True,
                              timestamp=1234))
    (rec,) = LogReader(f)
    assert isinstance(rec, ControlRecord)
    assert (rec.type, rec.enum_name, rec.leader_epoch, rec.is_control) == (
        "LeaderChange", "LEADER_CHANGE", 7, True)
    assert rec.to_json() == ('{"version":0,"leaderId":3,"voters":[{"voterId":1},{"voterId":2},'
                             '{"voterId":3}],"grantingVoters":[{"voterId":3},{"voterId":2}]}')


def test_kraft_version_and_voters(tmp_path):
    kv = control_value("KRaftVersionRecord", {"version": 0, "kRaftVersion": 1})
    assert len(kv) == 5
    voters = control_value("VotersRecord", {"version": 0, "voters": [{
        "voterId": 1, "voterDirectoryId": "AAECAwQFBgcICQoLDA0ODw",
        "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]})
    f = tmp_path / "x.checkpoint"
    f.write_bytes(build_batch([(control_key(5), kv), (control_key(6), voters)], control=True))
    a, b = LogReader(f)
    assert (a.type, a.to_json()) == ("KRaftVersion", '{"version":0,"kRaftVersion":1}')
    assert b.type == "KRaftVoters"
    assert b.to_json() == ('{"version":0,"voters":[{"voterId":1,"voterDirectoryId":'
                           '"AAECAwQFBgcICQoLDA0ODw","endpoints":[{"name":"CONTROLLER",'
                           '"host":"localhost","port":9093}],"kRaftVersionFeature":'
                           '{"minSupportedVersion":0,"maxSupportedVersion":1}}]}')


def test_unknown_control_type_is_kept(tmp_path):
    f = tmp_path / "x.log"
    f.write_bytes(build_batch([(control_key(42), b"\x01\x02")], control=True))
    (rec,) = LogReader(f)
    assert rec.type == "Unknown" and rec.data is None and rec.value == b"\x01\x02"



def test_a_control_record_whose_headers_loop_is_refused_at_once(tmp_path):
    """A header key of length -2 steps back onto the byte before it, a value length of -1: the next header
    starts where this one did. With 2^31 - 1 headers declared, a reader that trusts the count reads the same
    two bytes for minutes. Control records are framed as every record is: the count is
    bounded by the bytes the record has, and the batch refused naming it."""
    key = control_key(2)
    body = (b"\x00" + write_varint(0) + write_varint(0) + write_varint(len(key)) + key + write_varint(-1)
            + write_varint(2**31 - 1) + write_varint(0) + write_varint(1) + b"\x01" + write_varint(-2))
    # build_batch's batch header (61 bytes: CRC over what follows it) around this one record
    after_crc = build_batch([(key, None)], control=True)[21:61] + write_varint(len(body)) + body
    f = tmp_path / "x.log"
    f.write_bytes(struct.pack(">qiibI", 0, 9 + len(after_crc), 0, 2, crc32c(after_crc)) + after_crc)
    def too_long(*_):
        raise TimeoutError("the reader is still reading the record's headers after 20 s")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(20)
    try:
        with pytest.raises(CorruptBatchError, match="headers in"):
            list(LogReader(f))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
