"""A stretch nobody read (a CaptureGap: bytes skipped with --on-error skip) makes every answer whose point falls in
it, or that depends on it, say WARNING in its header and carry it in JSON; answers outside it do not. On the real
CLI, for ZooKeeper's transaction log and KRaft's metadata log alike."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from services.zookeeper import read_txn_log
from tests.ctrlaudit.test_bad_inputs import ctrlaudit
from tests.ctrlaudit.test_import import metadata_dir

ZK_LOG = Path(__file__).parents[1] / "services" / "zookeeper" / "data" / "log.1"
WARNING = "WARNING state may be incomplete, not read:"


def _loaded(tmp_path: Path, kind: str, source: Path, on_error: str = "skip") -> Path:
    done = ctrlaudit("import", kind, str(source), "--out", str(tmp_path / "archive"), "--on-error", on_error)
    assert done.returncode == 0 and "capture gap:" in done.stdout + done.stderr, done.stderr
    store = tmp_path / "s.duckdb"
    loaded = ctrlaudit("load", str(tmp_path / "archive"), "--store", str(store), "--json", str(tmp_path / "load.json"))
    assert loaded.returncode == 0, loaded.stderr
    # the load says it before any answer does: how many, and what each stretch did not read
    said = re.search(r"cluster \S+: (\d+) capture gap\(s\) in its history", loaded.stdout)
    assert said and "not read:" in loaded.stdout, loaded.stdout
    listed = json.loads((tmp_path / "load.json").read_text())["capture_gaps"]
    assert sum(map(len, listed.values())) == int(said.group(1))
    return store


def test_a_history_without_gaps_loads_without_a_word_of_them(tmp_path):
    (tmp_path / "zk" / "version-2").mkdir(parents=True)
    (tmp_path / "zk" / "version-2" / "log.1").write_bytes(ZK_LOG.read_bytes())
    assert ctrlaudit("import", "zk", str(tmp_path / "zk"), "--out", str(tmp_path / "archive")).returncode == 0
    loaded = ctrlaudit("load", str(tmp_path / "archive"), "--store", str(tmp_path / "s.duckdb"),
                       "--json", str(tmp_path / "load.json"))
    assert loaded.returncode == 0 and "capture gap" not in loaded.stdout, loaded.stdout
    assert json.loads((tmp_path / "load.json").read_text())["capture_gaps"] == {}


def _header(store: Path, *args: str) -> str:
    done = ctrlaudit("state", "--store", str(store), *args)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout.splitlines()[0]


def _as_of(store: Path, *args: str) -> dict:
    done = ctrlaudit("state", "--store", str(store), *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["as_of"]


@pytest.fixture(scope="module")
def zk_store(tmp_path_factory) -> tuple[Path, int]:
    """A store of the real ZooKeeper log with the transaction at zxid 0x40 damaged and skipped; (store, zxid)."""
    tmp = tmp_path_factory.mktemp("zkgap")
    (tmp / "zk" / "version-2").mkdir(parents=True)
    victim = next(t for t in read_txn_log(ZK_LOG) if t.zxid == 0x40)
    raw = bytearray(ZK_LOG.read_bytes())
    raw[victim.position + 25] ^= 0x01
    (tmp / "zk" / "version-2" / "log.1").write_bytes(bytes(raw))
    return _loaded(tmp, "zk", tmp / "zk"), victim.zxid


@pytest.mark.slow
def test_a_log_cut_mid_record_before_the_next_log_is_a_gap_that_warns(tmp_path):
    """log.1 ends inside the record of zxid 0x40 (a copy cut short); log.41 goes on from zxid 0x41."""
    (tmp_path / "zk" / "version-2").mkdir(parents=True)
    txns = read_txn_log(ZK_LOG)
    cut = next(t for t in txns if t.zxid == 0x40)
    after = next(t for t in txns if t.zxid == 0x41)
    raw = ZK_LOG.read_bytes()
    (tmp_path / "zk" / "version-2" / "log.1").write_bytes(raw[:cut.position + 30])
    (tmp_path / "zk" / "version-2" / "log.41").write_bytes(raw[:16] + raw[after.position:])
    store = _loaded(tmp_path, "zk", tmp_path / "zk", "raise")
    gap, before, after_ms = _stretch(store)
    inside = _header(store, "--time", str((before + after_ms) // 2))
    assert WARNING in inside and "zxids 0x40" in inside and "log.41" in inside
    assert "WARNING" not in _header(store, "--time", str(after_ms))
    assert "WARNING" not in _header(store, "--time", str(before - 1))


def _stretch(store: Path, timed: bool = True) -> tuple[int, int, int]:
    """(gap seq, time of the last event read before it, time of the first read after) from the store's events."""
    import duckdb

    con = duckdb.connect(str(store), read_only=True)
    try:
        (gap,), = con.execute("SELECT seq FROM events WHERE kind = 'CaptureGap'").fetchall()
        (before,), = con.execute("SELECT event_time_ms FROM events WHERE seq = ?", [gap - 1]).fetchall()
        (after,), = con.execute("SELECT event_time_ms FROM events WHERE seq = ?", [gap + 1]).fetchall()
    finally:
        con.close()
    assert not timed or before + 2 < after, "the damaged stretch must span time for this test to mean anything"
    return gap, before, after


@pytest.mark.slow
def test_state_inside_a_zookeeper_gap_warns_and_outside_it_does_not(zk_store):
    store, zxid = zk_store
    gap, before, after = _stretch(store)
    inside = _header(store, "--time", str((before + after) // 2))
    assert WARNING in inside and f"zxids {zxid:#x}" in inside and f"gap event seq {gap}" in inside
    assert f"after seq {gap - 1}" in inside and f"before seq {gap + 1}" in inside
    for outside in (before - 1, after, after + 10_000):
        assert "WARNING" not in _header(store, "--time", str(outside)), outside
    assert "WARNING" not in _header(store, "--seq", str(gap - 1))
    assert WARNING in _header(store, "--seq", str(gap))
    assert WARNING in _header(store, "--offset", str(zxid))
    doc = _as_of(store, "--time", str((before + after) // 2))
    (u,) = doc["uncertain"]
    assert (u["gap_seq"], u["from_seq"], u["to_seq"]) == (gap, gap - 1, gap + 1)
    assert (u["from_time_ms"], u["to_time_ms"], u["from_offset"], u["to_offset"]) == (before, after, zxid, zxid)
    assert _as_of(store, "--time", str(after))["uncertain"] == []


@pytest.mark.slow
def test_diff_and_report_over_a_gap_warn(zk_store, tmp_path):
    store, _ = zk_store
    gap, before, after = _stretch(store)
    into = ctrlaudit("diff", "--store", str(store), "--from-seq", "0", "--to-time", str((before + after) // 2))
    assert into.returncode == 0 and WARNING in into.stdout.splitlines()[0], into.stderr
    clear = ctrlaudit("diff", "--store", str(store), "--from-seq", "0", "--to-seq", str(gap - 1))
    assert clear.returncode == 0 and "WARNING" not in clear.stdout, clear.stderr
    page = tmp_path / "r.html"
    done = ctrlaudit("report", "--store", str(store), "--out", str(page), "--from", str(before - 1))
    assert done.returncode == 0, done.stderr
    assert "state may be incomplete" in page.read_text()
    page2 = tmp_path / "r2.html"
    done = ctrlaudit("report", "--store", str(store), "--out", str(page2), "--from", str(after))
    assert done.returncode == 0, done.stderr
    assert "state may be incomplete" not in page2.read_text()


@pytest.mark.slow
def test_kraft_skipped_batch_is_the_same_warning_for_state_timeline_and_explain(tmp_path):
    d = metadata_dir(tmp_path, later=((2, [1, 2]), (3, [2, 3]), (1, [1, 3])))
    seg = next(d.glob("*.log"))
    raw = bytearray(seg.read_bytes())
    import services.kraft as kraft

    batches = [b for b, _ in kraft.LogReader(seg).batches()]
    victim = batches[-2]  # the second-to-last batch: a partition change with good batches on both sides
    raw[victim.position + 70] ^= 0x01
    seg.write_bytes(bytes(raw))
    store = _loaded(tmp_path, "kraft", d)
    gap, _, _ = _stretch(store, timed=False)
    assert WARNING in _header(store, "--seq", str(gap)) and "offsets" in _header(store, "--seq", str(gap))
    assert "WARNING" not in _header(store, "--seq", str(gap - 1))
    assert "WARNING" not in _header(store, "--seq", str(gap + 1))
    timeline = ctrlaudit("timeline", "--store", str(store), "--topic", "orders", "--partition", "0")
    assert timeline.returncode == 0 and WARNING in timeline.stdout.splitlines()[0], timeline.stderr
    explain = ctrlaudit("explain", "--store", str(store), "--seq", str(gap + 1))
    assert explain.returncode == 0, explain.stderr
    assert "the state before this change may be incomplete" in explain.stdout
    first = ctrlaudit("timeline", "--store", str(store), "--topic", "orders", "--partition", "0", "--to-offset", "0")
    assert "WARNING" not in first.stdout


@pytest.mark.slow
def test_no_gap_no_warning(tmp_path):
    d = metadata_dir(tmp_path)
    done = ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "archive"))
    assert done.returncode == 0, done.stderr
    assert ctrlaudit("load", str(tmp_path / "archive"), "--store", str(tmp_path / "s.duckdb")).returncode == 0
    assert "WARNING" not in _header(tmp_path / "s.duckdb")
