import json
import logging
import random

import pytest

from services.kraft import LogReader, MetadataRecord, RecordDecodeError, UnknownRecord
from services.kraft.batch import encode_record
from services.kraft.messages import CATALOGUE, UNKNOWN_TAGS, snake_upper
from services.kraft.records import decode_value
from services.kraft.wire import write_uvarint

from .helpers import TOPIC_ID, data_batch, metadata_value, pcr, random_data

# kafka-formats.md §2: PartitionChangeRecord v0, partition 0, leader 2, ISR [2,3]
GOLDEN_PCR = (bytes.fromhex("010500" "00000000") + bytes(range(16))
              + bytes.fromhex("02" "0009" "03" "00000002" "00000003" "0104" "00000002"))


def test_golden_partition_change_value():
    assert len(GOLDEN_PCR) == 41
    mv, key, ver, data = decode_value(GOLDEN_PCR, 0, len(GOLDEN_PCR))
    assert (key, ver, mv.type_name) == (5, 0, "PARTITION_CHANGE_RECORD")
    assert data == {"partitionId": 0, "topicId": TOPIC_ID, "isr": [2, 3], "leader": 2,
                    "replicas": None, "removingReplicas": None, "addingReplicas": None,
                    "leaderRecoveryState": -1}
    assert mv.render(data) == {"partitionId": 0, "topicId": TOPIC_ID, "isr": [2, 3], "leader": 2}
    assert pcr(isr=[2, 3], leader=2) == GOLDEN_PCR


def test_golden_record_wrapper():
    rec = encode_record(0, None, GOLDEN_PCR)
    assert rec == bytes.fromhex("5e00000001") + b"\x52" + GOLDEN_PCR + b"\x00"
    assert len(rec) == 48


def test_record_json_matches_dumplogsegments_format(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(data_batch([GOLDEN_PCR], base_offset=5, leader_epoch=3, timestamp=1700000000000))
    (rec,) = LogReader(f)
    assert isinstance(rec, MetadataRecord)
    assert rec.to_json() == ('{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,'
                             f'"topicId":"{TOPIC_ID}","isr":[2,3],"leader":2}}}}')
    assert (rec.offset, rec.batch_offset, rec.leader_epoch, rec.append_time, rec.is_control,
            rec.file, rec.position) == (5, 5, 3, 1700000000000, False, str(f), 0)


def test_tagged_fields_are_written_in_tag_order_and_rendered_in_declaration_order():
    v = metadata_value("PartitionChangeRecord", 2, {
        "partitionId": 1, "topicId": TOPIC_ID, "directories": [TOPIC_ID],
        "eligibleLeaderReplicas": [3], "lastKnownElr": [], "leaderRecoveryState": 1})
    mv, _, _, data = decode_value(v, 0, len(v))
    assert list(mv.render(data)) == ["partitionId", "topicId", "leaderRecoveryState", "directories",
                                     "eligibleLeaderReplicas", "lastKnownElr"]


def test_register_broker_v2_has_migrating_flag_between_id_and_incarnation():
    data = {"brokerId": 7, "isMigratingZkBroker": True, "incarnationId": TOPIC_ID, "brokerEpoch": 9,
            "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}],
            "features": [], "rack": None, "fenced": True, "inControlledShutdown": False}
    v = metadata_value("RegisterBrokerRecord", 2, data)
    assert v[3:8] == bytes.fromhex("00000007" "01")
    assert decode_value(v, 0, len(v))[3] == data


@pytest.mark.parametrize("mv", list(CATALOGUE.values()), ids=lambda m: f"{m.name}-v{m.version}")
def test_every_message_version_roundtrips(mv):
    rnd = random.Random(f"{mv.name}{mv.version}")
    for _ in range(20):
        data = random_data(mv.fields, rnd)
        raw = mv.encode(data)
        decoded, pos = mv.decode(raw, 0, len(raw))
        assert pos == len(raw)
        assert decoded == data
        json.dumps(mv.render(decoded))  # always JSON-able


def test_catalogue_covers_every_metadata_record_of_39_to_44():
    names = {mv.type_name for mv in CATALOGUE.values() if mv.api_key is not None}
    # apiKeys 0-29 less 6, 13 and 16, which no release from 3.9 on has (29: 4.4's UnregisterControllerRecord)
    assert len({mv.api_key for mv in CATALOGUE.values() if mv.api_key is not None}) == 27
    assert {"REGISTER_BROKER_RECORD", "CLEAR_ELR_RECORD", "ZK_MIGRATION_STATE_RECORD",
            "NO_OP_RECORD", "BEGIN_TRANSACTION_RECORD", "UNREGISTER_CONTROLLER_RECORD"} <= names
    assert snake_upper("KRaftVersionRecord") == "KRAFT_VERSION_RECORD"
    assert max(v for (n, v) in CATALOGUE if n == "RegisterBrokerRecord") == 4


def test_unknown_tag_is_kept_raw_and_reencoded():
    v = pcr(leader=1)
    # append an unknown tag 20 (2 bytes) to the top-level tag section
    body = bytearray(v)
    assert body[3 + 20] == 1  # one tagged field so far
    body[3 + 20] = 2
    body += bytes([20, 2, 0xAB, 0xCD])
    mv, _, _, data = decode_value(bytes(body), 0, len(body))
    assert data[UNKNOWN_TAGS] == [(20, b"\xab\xcd")]
    assert mv.render(data) == {"partitionId": 0, "topicId": TOPIC_ID, "leader": 1}
    assert b"\x00" + mv.encode(data) == b"\x00" + bytes(body[3:])


def test_tag_not_valid_for_version_is_an_error(tmp_path):
    # Directories (tag 8) exists from v1; a v0 record carrying it is malformed
    v1 = metadata_value("PartitionChangeRecord", 1, {"partitionId": 0, "topicId": TOPIC_ID,
                                                     "directories": [TOPIC_ID]})
    v0 = v1[:2] + b"\x00" + v1[3:]
    f = tmp_path / "x.log"
    f.write_bytes(data_batch([v0], base_offset=10))
    with pytest.raises(RecordDecodeError) as e:
        list(LogReader(f))
    assert "Tag 8 is not valid for version 0" in str(e.value)
    assert e.value.record_offset == 10 and e.value.file == str(f)
    (rec,) = LogReader(f, on_error="skip")
    assert isinstance(rec, UnknownRecord) and rec.api_key == 5


def test_unknown_api_key_and_version_are_kept_with_a_warning(tmp_path, caplog):
    unknown_key = write_uvarint(1) + write_uvarint(99) + b"\x00" + b"\x01\x02"
    unknown_ver = write_uvarint(1) + write_uvarint(5) + write_uvarint(42) + b"\x00"
    f = tmp_path / "x.log"
    f.write_bytes(data_batch([unknown_key, unknown_ver, GOLDEN_PCR]))
    with caplog.at_level(logging.WARNING):
        recs = list(LogReader(f))
    assert [type(r).__name__ for r in recs] == ["UnknownRecord", "UnknownRecord", "MetadataRecord"]
    assert (recs[0].api_key, recs[0].value) == (99, unknown_key)
    assert "PartitionChangeRecord" in recs[1].error and recs[1].version == 42
    assert "apiKey 99" in caplog.text


def test_trailing_garbage_and_frame_version_errors():
    with pytest.raises(ValueError, match="garbage"):
        decode_value(GOLDEN_PCR + b"\x00", 0, 42)
    with pytest.raises(ValueError, match="frame version 0"):
        decode_value(b"\x00" + GOLDEN_PCR[1:], 0, 41)


def test_multibyte_frame_varints_take_the_slow_path(tmp_path):
    # version written as a 2-byte varint (0x80 0x00 == 0) is legal and must still decode
    v = b"\x01\x05\x80\x00" + GOLDEN_PCR[3:]
    f = tmp_path / "x.log"
    f.write_bytes(data_batch([v]))
    (rec,) = LogReader(f)
    assert rec.data["isr"] == [2, 3]
