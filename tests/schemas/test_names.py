"""schemas/names.py: the one allow-list for untrusted names that become paths (Kafka's legal name characters,
1 to 249 of them, never '.' or '..'), and every reader of a cluster id that goes through it: meta.properties,
ZooKeeper's /cluster/id, broker logs, and an event's cluster_id at the archiver."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from schemas import codec, names
from schemas.errors import ContractError
from tests.schemas.samples import sample_event

LEGAL = ["sim-7", "unknown-cluster", "MkU3OEVBNTcwNTJENDM2Qk", "q1w2e3r4t5y6u7i8o9p0aA", "a", "...", "a..b",
         "_-.", "x" * 249, "events-20250101T00-000000000000.avro"]
HOSTILE = ["", ".", "..", "../x", "../../etc", "/", "/etc/passwd", "a/b", "a\\b", "a\x00b", "a\nb", "a b", "x" * 250,
           "clüster", "\uff0e\uff0e", "\u202ecod.exe", "C:x", "~", "$HOME", "*", "a:b"]


@pytest.mark.parametrize("value", LEGAL)
def test_kafkas_legal_names_pass(value):
    assert names.cluster_id(value) == value and names.file_name(value) == value


@pytest.mark.parametrize("value", HOSTILE, ids=[repr(v)[:30] for v in HOSTILE])
def test_anything_else_is_one_line_naming_the_value_and_where(value):
    with pytest.raises(names.UnsafeName) as err:
        names.cluster_id(value, "cluster.id", "/x/meta.properties")
    line = str(err.value)
    assert isinstance(err.value, ContractError) and "\n" not in line and "\x00" not in line
    assert line.startswith(f"/x/meta.properties: cluster.id {names.shown(value)} ")
    assert len(line) < 300


@pytest.mark.parametrize("value", [None, 7, ["a"], {"id": "x"}])
def test_a_cluster_id_that_is_not_a_string(value):
    with pytest.raises(names.UnsafeName, match="is not a string"):
        names.cluster_id(value, "the /cluster/id znode's id", "log.1")


def test_child_is_inside_its_root_also_after_resolving(tmp_path):
    assert names.child(tmp_path, "c1") == tmp_path / "c1"
    (tmp_path / "elsewhere").mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "c1").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(names.UnsafeName, match="outside"):
        names.child(root, "c1")
    link = tmp_path / "link-to-root"
    link.symlink_to(root)  # a root that is itself a link is fine: its children are inside it
    assert names.child(link, "c2") == link / "c2"


@pytest.mark.parametrize("relative", ["../x", "a/../../x", "/abs", "a//b", "a/./b", "a/\x00"])
def test_below_refuses_a_listing_that_leaves_its_root(tmp_path, relative):
    with pytest.raises(names.UnsafeName):
        names.below(tmp_path, relative)
    assert names.below(tmp_path, "c1/events-1.avro") == tmp_path / "c1" / "events-1.avro"


def test_meta_properties_cluster_id_is_checked(tmp_path):
    from services.kraft.offline import cluster_id_of

    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    meta = tmp_path / "meta.properties"
    meta.write_text("cluster.id=q1w2e3r4t5y6u7i8o9p0aA\n")
    assert cluster_id_of([d]) == "q1w2e3r4t5y6u7i8o9p0aA"
    meta.write_bytes(b"cluster.id=../\x00../etc\n")
    with pytest.raises(names.UnsafeName, match=f"^{meta}: cluster.id "):
        cluster_id_of([d])


def test_zookeepers_cluster_id_znode_is_checked(monkeypatch):
    from services.zookeeper import offline as zk_offline
    from services.zookeeper import Op, Txn

    def log_with(data: bytes):
        op = Op(kind="create", path="/cluster/id", data=data)
        return lambda f, on_error: [Txn(session=0, cxid=0, zxid=1, time=0, type=1, ops=(op,))]

    monkeypatch.setattr(zk_offline, "snapshots_zk", lambda paths: [])
    monkeypatch.setattr(zk_offline, "plan_zk", lambda paths: [Path("/copy/log.1")])
    monkeypatch.setattr(zk_offline, "TxnLogReader", log_with(json.dumps({"version": "1", "id": "ok-1"}).encode()))
    assert zk_offline.cluster_id_of_zk([Path("/copy")]) == "ok-1"
    for hostile in ("../../etc", "/"):
        monkeypatch.setattr(zk_offline, "TxnLogReader", log_with(json.dumps({"id": hostile}).encode()))
        with pytest.raises(names.UnsafeName, match="^/copy/log.1, zxid 0x1: the /cluster/id znode's id "):
            zk_offline.cluster_id_of_zk([Path("/copy")])
    monkeypatch.setattr(zk_offline, "TxnLogReader", log_with(json.dumps({"id": 5}).encode()))
    with pytest.raises(ContractError, match="^/copy/log.1, zxid 0x1: /cluster/id: id is a JSON int, not a string"):
        zk_offline.cluster_id_of_zk([Path("/copy")])


def test_broker_logs_cluster_id_is_checked(tmp_path):
    from services.brokerlogs.offline import cluster_id_of_logs

    log = tmp_path / "controller.log"
    # the line's pattern takes [\w-]: \w is unicode, so a non-ASCII letter, or a very long id, reaches the list
    log.write_text("[2024-01-01 00:00:00,000] INFO Creating new QuorumController with clusterId clüster (x)\n")
    with pytest.raises(names.UnsafeName, match=f"^{log}: cluster id 'clüster' is not a Kafka cluster id"):
        cluster_id_of_logs([tmp_path])
    log.write_text(f"[2024-01-01 00:00:00,000] INFO Creating new QuorumController with clusterId {'x' * 300} (x)\n")
    with pytest.raises(names.UnsafeName, match="longer than 249"):
        cluster_id_of_logs([tmp_path])


def test_the_archiver_never_writes_an_events_cluster_id_as_a_path(tmp_path):
    from services.capture.archiver import Archive

    root = tmp_path / "archive"
    archive = Archive(root, fsync=False)
    event = dataclasses.replace(sample_event("PartitionChange"), cluster_id="../escaped")
    with pytest.raises(names.UnsafeName, match="events topic: event seq 0: cluster_id '../escaped'"):
        archive.add(codec.encode(event))
    assert not (tmp_path / "escaped").exists() and not root.exists()


def test_the_writer_never_writes_through_a_link_planted_in_the_archive(tmp_path):
    """An import continuing a copied archive: a `.part` or manifest `.tmp` there that is a link to a file
    elsewhere is removed, never written through."""
    from schemas.archive.writer import ArchiveWriter, file_name

    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    event = sample_event("PartitionChange")
    d = tmp_path / "archive" / event.cluster_id
    d.mkdir(parents=True)
    name = file_name(event.event_time_ms, 0)
    with ArchiveWriter(tmp_path / "archive", event.cluster_id, fsync=False) as w:
        (d / f"{name}.part").symlink_to(victim)  # after the writer's start, before its file is opened
        (d / f"{name}.manifest.json.tmp").symlink_to(victim)
        w.append(event)
    assert victim.read_text() == "mine\n"
    assert sorted(p.name for p in d.iterdir()) == [name, f"{name}.manifest.json"]
