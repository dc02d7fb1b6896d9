from services.kraft import ControlRecord, LogReader
from services.kraft.batch import build_batch

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
