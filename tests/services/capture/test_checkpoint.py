"""Image checkpoints (services.capture.checkpoint): a loaded normalizer continues exactly as the one that was
dumped, a checkpoint is refused mid-transaction or mid-snapshot, and damaged bytes are refused, never used."""
from __future__ import annotations

import importlib.util
import json
import zlib
from pathlib import Path

import pytest

from schemas.events import BrokerState, ConfigResourceType, LeaderRecoveryState, PartitionState
from services.capture import logic
from services.capture.checkpoint import MAGIC, CheckpointError, digest, dump, join, load, quiet, split
from services.kraft import LogReader
from services.kraft.normalizer import KRaftNormalizer
from tests.services.normalize.logs import T1, T2, LogBuilder, broker, change, partition

ROOT = Path(__file__).resolve().parents[3]
CLOCK = lambda: 42  # noqa: E731  capture_time_ms must match between the two normalizers


def synthetic_raw(partitions: int, per_topic: int) -> list[bytes]:
    spec = importlib.util.spec_from_file_location("ctrlaudit_bench_capture", ROOT / "bench/capture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.synthetic_raw(partitions, per_topic)


@pytest.fixture(scope="module")
def raws() -> list[bytes]:
    return synthetic_raw(3000, 400)  # 3 brokers, 8 topics, then a mass election in 3 batches


def capture(values, state: logic.CaptureState | None = None) -> tuple[logic.CaptureState, list]:
    out = []
    for v in values:
        r = logic.parse_raw(v)
        state = state or logic.CaptureState(r.cluster_id, r.node_id, clock=CLOCK)
        out.extend(state.process(r))
    return state, out


def rich_log(tmp_path: Path) -> list:
    """Every image field: controller epochs, features, brokers (one in controlled shutdown), configs, ELR,
    a reassignment in flight, an unclean election (RECOVERING), a committed and an aborted transaction."""
    b = LogBuilder()
    b.leader_change(leader=2, epoch=1)
    b.record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=21)
    for bid in (1, 2, 3, 4):
        broker(b, bid)
    for bid in (1, 2, 3, 4):
        b.record("BrokerRegistrationChangeRecord", 0, brokerId=bid, brokerEpoch=2 + bid - 1, fenced=-1)
    b.record("TopicRecord", 0, name="orders", topicId=T1)
    b.record("TopicRecord", 0, name="audit", topicId=T2)
    partition(b, T1, 0, [1, 2, 3], [1, 2, 3], leader=1)
    partition(b, T1, 1, [2, 3, 1], [2, 3, 1], leader=2)
    b.record("PartitionRecord", 2, partitionId=0, topicId=T2, replicas=[1, 2, 3], isr=[1], removingReplicas=[],
             addingReplicas=[], leader=1, leaderEpoch=3, partitionEpoch=7, directories=[], eligibleLeaderReplicas=[2],
             lastKnownElr=[3])
    b.record("ConfigRecord", 0, resourceType=2, resourceName="orders", name="min.insync.replicas", value="2")
    b.record("ConfigRecord", 0, resourceType=4, resourceName="1", name="listener.name.sasl.jaas.config", value="s")
    b.leader_change(leader=3, epoch=2)
    quiet_at = b.offset  # records before this index form a prefix that ends outside any transaction
    change(b, T1, 0, isr=[1])
    change(b, T1, 0, leader=3, isr=[3], leaderRecoveryState=1)  # unclean: RECOVERING
    b.record("BeginTransactionRecord", 0, name="t1")
    change(b, T1, 1, replicas=[2, 3, 4, 1], addingReplicas=[4], removingReplicas=[1])
    b.record("EndTransactionRecord", 0)
    b.record("BeginTransactionRecord", 0, name="t2")
    change(b, T1, 1, isr=[2])
    b.record("AbortTransactionRecord", 0, reason="test")
    b.record("BrokerRegistrationChangeRecord", 1, brokerId=4, brokerEpoch=5, inControlledShutdown=1)
    b.record("FeatureLevelRecord", 0, name="kraft.version", featureLevel=1)
    records = list(LogReader(b.write(tmp_path / "00000000000000000000.log")))
    return records, quiet_at


def assert_same_state(a: KRaftNormalizer, b: KRaftNormalizer) -> None:
    assert (b.cluster_id, b.node_id, b.last_offset) == (a.cluster_id, a.node_id, a.last_offset)
    assert b.image == a.image
    for k, s in b.image.partitions.items():
        assert type(k) is tuple and type(s) is PartitionState and type(s.leader_recovery_state) is LeaderRecoveryState
        assert all(type(getattr(s, f)) is tuple for f in ("replicas", "isr", "adding_replicas", "removing_replicas",
                                                          "elr", "last_known_elr"))
    assert all(type(v) is BrokerState and type(v.endpoints) is tuple for v in b.image.brokers.values())
    assert all(type(k) is tuple and len(k) == 2 and type(k[0]) is ConfigResourceType for k in b.image.configs)
    assert all(type(k) is int and type(v) is int for k, v in b.leaders_by_epoch.items())
    assert b.leaders_by_epoch == a.leaders_by_epoch and b.secrets.digests == a.secrets.digests


# --- round trip ----------------------------------------------------------------------------------

def test_round_trip_of_a_synthetic_burst(raws) -> None:
    st, events = capture(raws)
    n = st.normalizer
    assert len(n.image.partitions) == 3000 and len(events) > 6000 and len(raws) == 12
    assert_same_state(n, load(dump(n)))


def assert_rich_image(n: KRaftNormalizer) -> None:
    """The states rich_log's records reach: an unclean election's recovery, a reassignment, ELR, two
    controllers, features, configs (a secret one redacted: never the secret), a broker shutting down."""
    im = n.image
    assert im.partitions[(T1, 0)].leader_recovery_state is LeaderRecoveryState.RECOVERING
    assert im.partitions[(T1, 1)].adding_replicas == (4,) and im.partitions[(T1, 1)].isr == (2, 3, 1)
    assert im.partitions[(T2, 0)].elr == (2,) and im.partitions[(T2, 0)].last_known_elr == (3,)
    assert n.leaders_by_epoch == {1: 2, 2: 3} and (im.controller.leader_id, im.controller.epoch) == (3, 2)
    assert dict(im.features) == {"metadata.version": 21, "kraft.version": 1}
    assert im.topic_configs("orders")["min.insync.replicas"] == "2" and im.brokers[4].in_controlled_shutdown
    assert im.broker_configs(1)["listener.name.sasl.jaas.config"] == "[redacted]"


def test_round_trip_keeps_every_field_and_type(tmp_path: Path) -> None:
    records, _ = rich_log(tmp_path)
    n = KRaftNormalizer("c1", node_id=7, clock=CLOCK)
    n.feed_all(records)
    # the log really reached the states worth checking (else the equality below proves little)
    assert_rich_image(n)
    assert b"[redacted]" in zlib.decompress(dump(n)[len(MAGIC) + 65:]) and b'"s"' not in dump(n)
    m = load(dump(n))
    assert_same_state(n, m)
    assert m.image.partitions[(T1, 0)].leader_recovery_state is LeaderRecoveryState.RECOVERING
    assert list(m.image.partitions) == list(n.image.partitions) and list(m.image.topic_names) == list(n.image.topic_names)


def test_the_loaded_normalizer_skips_what_it_has_already_applied(tmp_path: Path) -> None:
    records, _ = rich_log(tmp_path)
    n = KRaftNormalizer("c1")
    n.feed_all(records)
    assert load(dump(n)).feed_all(records) == []


def test_load_uses_the_given_clock(tmp_path: Path) -> None:
    records, _ = rich_log(tmp_path)
    n = KRaftNormalizer("c1")
    n.feed_all(records[:3])
    assert load(dump(n), clock=lambda: 7).clock() == 7


# --- continuation --------------------------------------------------------------------------------

@pytest.mark.parametrize("cut", [1, 5, 9, 10, 11])  # 12 raw batches: brokers, 8 topics, 3 of the election
def test_capture_continues_identically_from_a_checkpoint(raws, cut) -> None:
    a, a_out = capture(raws)
    first, first_out = capture(raws[:cut])
    assert quiet(first.normalizer)
    progress = logic.Progress.from_header(first_out[-1][1])
    b = logic.CaptureState(first.cluster_id, first.normalizer.node_id, progress=progress, clock=CLOCK)
    b.normalizer = load(dump(first.normalizer), clock=CLOCK)
    _, b_out = capture(raws[cut:], b)
    assert b_out and b_out == a_out[len(first_out):]  # events, progress headers and chained values (hashes)
    assert_same_state(a.normalizer, b.normalizer)


def continue_at(records, cut: int) -> None:
    a = KRaftNormalizer("c1", node_id=1, clock=CLOCK)
    a_first, a_rest = a.feed_all(records[:cut]), a.feed_all(records[cut:])
    b = KRaftNormalizer("c1", node_id=1, clock=CLOCK)
    assert b.feed_all(records[:cut]) == a_first
    b = load(dump(b), clock=CLOCK)
    assert b.feed_all(records[cut:]) == a_rest
    assert_same_state(a, b)


def test_normalizer_continues_identically_at_every_quiet_point(tmp_path: Path) -> None:
    records, quiet_at = rich_log(tmp_path)
    cuts = []
    probe = KRaftNormalizer("c1")
    for i, r in enumerate(records):
        if quiet(probe):
            cuts.append(i)
        probe.feed(r)
    assert quiet_at in cuts and len(cuts) < len(records)  # the transactions' insides are not quiet
    for cut in cuts:
        continue_at(records, cut)


# --- not quiet -----------------------------------------------------------------------------------

def test_no_checkpoint_inside_a_metadata_transaction(tmp_path: Path) -> None:
    records, _ = rich_log(tmp_path)
    begin = next(i for i, r in enumerate(records) if getattr(r, "name", "") == "BeginTransactionRecord")
    n = KRaftNormalizer("c1")
    n.feed_all(records[:begin + 1])
    assert not quiet(n)
    with pytest.raises(CheckpointError, match="not quiet"):
        dump(n)
    n.feed_all(records[begin + 1:begin + 3])  # the change and the EndTransactionRecord
    assert quiet(n) and load(dump(n)).image == n.image


def test_no_checkpoint_inside_a_snapshot(tmp_path: Path) -> None:
    records, _ = rich_log(tmp_path)
    n = KRaftNormalizer("c1")
    n.feed_all(records[:5])
    n.begin_snapshot(100)
    with pytest.raises(CheckpointError, match="not quiet"):
        dump(n)
    n.end_snapshot(0)
    assert quiet(n) and load(dump(n)).last_offset == 99


# --- damage --------------------------------------------------------------------------------------

@pytest.fixture
def blob(tmp_path: Path) -> bytes:
    records, _ = rich_log(tmp_path)
    n = KRaftNormalizer("c1")
    n.feed_all(records)
    return dump(n)


def reseal(payload: dict) -> bytes:
    """A well-formed blob (right sha) around an arbitrary payload: what a buggy or hostile writer could send."""
    raw = json.dumps(payload).encode()
    return MAGIC + digest(raw).encode() + b"\n" + zlib.compress(raw)


def payload_of(blob: bytes) -> dict:
    return json.loads(zlib.decompress(blob[len(MAGIC) + 65:]))


def test_the_format_is_versioned_json_not_pickle(blob) -> None:
    assert blob.startswith(b"CAIMG1\n") and b"\x80\x04" not in blob[:2]
    d = payload_of(blob)
    assert (d["format"], d["version"]) == ("ctrlaudit.kraft-image", 2)
    assert digest(zlib.decompress(blob[len(MAGIC) + 65:])).encode() == blob[len(MAGIC):len(MAGIC) + 64]


@pytest.mark.parametrize("where", [0.1, 0.5, 0.9, -1])
def test_a_flipped_byte_in_the_body_is_refused(blob, where) -> None:
    bad = bytearray(blob)
    i = len(blob) - 1 if where == -1 else len(MAGIC) + 65 + int((len(blob) - len(MAGIC) - 65) * where)
    bad[i] ^= 0x01
    with pytest.raises(CheckpointError, match="corrupt or truncated|sha256 mismatch"):
        load(bytes(bad))


def test_an_altered_payload_with_a_valid_stream_fails_the_sha(blob) -> None:
    raw = zlib.decompress(blob[len(MAGIC) + 65:]).replace(b'"orders"', b'"ordErs"')
    with pytest.raises(CheckpointError, match="sha256 mismatch"):
        load(blob[:len(MAGIC) + 65] + zlib.compress(raw))


@pytest.mark.parametrize("keep", [0, 3, len(MAGIC) + 10, len(MAGIC) + 65, -40, -1])
def test_a_truncated_blob_is_refused(blob, keep) -> None:
    with pytest.raises(CheckpointError):
        load(blob[:keep])


@pytest.mark.parametrize("head,reason", [(b"\x80\x04\x95", "bad magic"), (b"CAIMG2\n", "unsupported format version"),
                                          (b"{\"format", "bad magic")])
def test_wrong_magic_or_version_is_refused(blob, head, reason) -> None:
    with pytest.raises(CheckpointError, match=reason):
        load(head + blob[len(MAGIC):])


@pytest.mark.parametrize("damage", [
    lambda d: d.update(version=1),  # v1 (before the image was replay's): refused, the raw topic rebuilds
    lambda d: d.update(version=3),
    lambda d: d["partitions"].update(p=d["partitions"]["p"][:-1]),        # columns of different length
    lambda d: d["partitions"]["s"].__setitem__(0, -1),                     # negative index
    lambda d: d["partitions"]["s"].__setitem__(0, 10**6),                  # index out of range
    lambda d: d["states"]["leader"].__setitem__(0, 1.5),                   # float where an int belongs
    lambda d: d["states"]["leader_recovery_state"].__setitem__(0, "MAYBE"),
    lambda d: d["brokers"][0].__setitem__(2, 1),                           # fenced must be a bool
    lambda d: d.pop("configs"),
    lambda d: d["configs"][0].__setitem__(0, "NOT_A_TYPE"),
    lambda d: d["topic_names"].pop(),                                          # a partition of an unnamed topic
])
def test_a_malformed_payload_under_a_valid_sha_is_refused(blob, damage) -> None:
    d = payload_of(blob)
    load(reseal(d))  # the reseal itself is fine
    damage(d)
    with pytest.raises(CheckpointError, match="malformed payload|expected"):
        load(reseal(d))


# --- chunks --------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [1, 100, 4096, 10**9])
def test_split_and_join_round_trip(blob, size) -> None:
    chunks = split(blob, size)
    assert all(0 < len(c) <= size for c in chunks) and len(chunks) == -(-len(blob) // size)
    assert join(chunks, digest(blob)) == blob
    assert join(split(b"", 10), digest(b"")) == b""


def test_join_refuses_missing_altered_or_reordered_chunks(blob) -> None:
    chunks, sha = split(blob, 200), digest(blob)
    assert len(chunks) >= 3
    with pytest.raises(CheckpointError, match=r"chunk\(s\) \[1\] of"):
        join([chunks[0], None, *chunks[2:]], sha)
    with pytest.raises(CheckpointError, match="do not match sha256"):
        join(chunks[:-1], sha)
    with pytest.raises(CheckpointError, match="do not match sha256"):
        join([chunks[0][:-1] + bytes([chunks[0][-1] ^ 1]), *chunks[1:]], sha)
    with pytest.raises(CheckpointError, match="do not match sha256"):
        join([chunks[1], chunks[0], *chunks[2:]], sha)
    with pytest.raises(ValueError):
        split(blob, 0)


# --- golden bytes ----------------------------------------------------------------------------------

GOLDEN = Path(__file__).parent / "data" / "checkpoint-v2.bin"  # dump() of rich_log's normalizer, format v2


def test_a_checkpoint_written_before_loads_to_the_image_it_holds() -> None:
    """A worker restarted on a newer release finds the checkpoints an older one wrote: they load, to the
    image they hold (a change that refuses this file is a format change: a new VERSION, the old one refused
    as v1 is). The bytes themselves are not stable across processes: a Map's order follows str hashes."""
    n = load(GOLDEN.read_bytes(), clock=CLOCK)
    assert (n.cluster_id, n.node_id) == ("c1", 7)
    assert_rich_image(n)
    assert list(payload_of(dump(n))) == list(payload_of(GOLDEN.read_bytes()))  # the same fields, in order


def test_the_golden_checkpoint_holds_what_the_rich_log_makes_today(tmp_path: Path) -> None:
    records, _ = rich_log(tmp_path)
    n = KRaftNormalizer("c1", node_id=7, clock=CLOCK)
    n.feed_all(records)
    assert_same_state(n, load(GOLDEN.read_bytes(), clock=CLOCK))
