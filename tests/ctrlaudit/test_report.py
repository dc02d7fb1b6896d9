"""`ctrlaudit report`: the counts it draws against the store's own queries, and the page in a real
headless Chromium (Debian's package, driven by playwright): every plot is drawn with those counts,
the page makes no network request, and a screenshot is saved under test-output/."""
from __future__ import annotations

import contextlib
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from replay import incident, queries
from replay.store import Store
from tests.ctrlaudit.conftest import run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-output"
PLOTS = ("health", "leaders", "brokers", "isr", "reassignments", "elections")
DRAWN = f"document.querySelectorAll('figure.plot .main-svg').length >= {2 * len(PLOTS)}"  # plotly: two per plot


@contextlib.contextmanager
def chromium_page():
    """A page of Debian's headless chromium, driven by playwright; closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 900})
        finally:
            browser.close()


@pytest.fixture(scope="module")
def incident_history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A simulated history with an injected breach, its store and its check report."""
    root = tmp_path_factory.mktemp("report")
    archive, store, checks = root / "archive", root / "s.duckdb", root / "check.json"
    assert run("simulate", "--out", str(archive), "--seed", "3", "--events", "3000", "--topics", "3",
               "--partitions", "4", "--inject", "leader_in_isr@2000").exit_code == 0
    assert run("load", str(archive), "--store", str(store), "--workers", "1").exit_code == 0
    assert run("check", str(store), "--json", str(checks)).exit_code == 1  # the injected breach
    return {"store": store, "checks": checks, "root": root}


def _counts(s: Store, point) -> dict[str, int]:
    """The health counts as the state command computes them (replay/queries.py), as of one point."""
    state = queries.state_as_of(s, point)
    at_min = sum(1 for p in state.partitions
                 if len(p.state.isr) == queries.min_isr(state.effective[p.topic][queries.MIN_ISR]))
    return {"offline": len(queries.offline(s, point).partitions),
            "under_replicated": len(queries.under_replicated(s, point).partitions),
            "under_min_isr": len(queries.under_min_isr(s, point).partitions), "at_min_isr": at_min}


@pytest.mark.parametrize("window", [(None, None), (400, 2600)])
def test_series_agree_with_the_state_queries(incident_history, window):
    """At the window's end the counts equal the queries'; at any point inside, the bucket holding it
    is at least the count there (a bucket keeps its maximum); leaders per broker likewise."""
    with Store(incident_history["store"], read_only=True) as s:
        a = s.point(seq=window[0] or 0)
        b = s.point(seq=window[1]) if window[1] else s.point()
        inc = incident.build(s, a, b)
        assert inc.health.at_end == _counts(s, b)
        state = queries.state_as_of(s, b)
        assert {k: n for k, n in inc.leaders.at_end.items() if n} == {str(k): n for k, n in Counter(p.state.leader for p in state.partitions).items()
                                      if k >= 0}
        width = inc.health.times[1] - inc.health.times[0]
        seqs = s.con.execute("SELECT seq FROM events WHERE kind = 'PartitionChange' AND seq > ? AND seq <= ? "
                             "ORDER BY seq", [a.seq, b.seq]).fetchall()
        assert seqs
        for (seq,) in seqs[:: max(1, len(seqs) // 40)]:
            p = s.point(seq=seq)
            bucket = min((p.event_time_ms - a.event_time_ms) // width, incident.BUCKETS - 1)
            for name, n in _counts(s, p).items():
                assert inc.health.values[name][bucket] >= n, (name, seq)
        n_elections = s.con.execute(
            "SELECT count(*) FROM events WHERE kind = 'PartitionChange' AND election <> 'NONE' AND seq > ? AND seq <= ?",
            [a.seq, b.seq]).fetchone()[0]
        assert sum(inc.elections["totals"].values()) == n_elections


def test_report_cli_refuses_bad_windows_and_topics(incident_history, tmp_path):
    store = str(incident_history["store"])
    out = tmp_path / "r.html"
    done = run("report", "--store", store, "--topic", "no-such-topic", "--out", str(out))
    assert done.exit_code == 2 and "no-such-topic" in done.output and not out.exists()
    done = run("report", "--store", store, "--check-json", str(incident_history["store"]), "--out", str(out))
    assert done.exit_code == 2 and "not a `ctrlaudit check --json` report" in done.output


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (.ci/run installs Debian's package)")
@pytest.mark.slow
def test_report_in_headless_chromium(incident_history):
    out = incident_history["root"] / "incident.html"
    done = run("report", "--store", str(incident_history["store"]), "--check-json", str(incident_history["checks"]),
               "--out", str(out))
    assert done.exit_code == 0, done.output
    assert out.stat().st_size < 10_000_000
    with Store(incident_history["store"], read_only=True) as s:
        end = _counts(s, s.point())
        elections = dict(s.con.execute("SELECT election, count(*) FROM events WHERE kind = 'PartitionChange' "
                                       "AND election <> 'NONE' AND seq > 0 GROUP BY ALL").fetchall())
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium_page() as page:
        requests: list[str] = []
        console: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: console.append(m.text))
        page.goto(out.as_uri())
        page.wait_for_function(DRAWN, timeout=30_000)
        drawn = page.evaluate("""Object.fromEntries([...document.querySelectorAll('figure.plot')].map(f => {
            const gd = f.querySelector('.js-plotly-plot');
            return [f.id, gd.data.map(t => ({name: t.name, x: t.x, y: t.y, z: t.z}))]; }))""")
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        summary = page.inner_text("#summary")
    assert requests == [out.as_uri()]  # the file itself, nothing from the network
    assert not [m for m in console if "Content Security Policy" in m], console  # the page's policy lets it draw
    assert set(drawn) == set(PLOTS)
    health = {t["name"].replace(" ", "_"): t["y"] for t in drawn["health"]}
    for name, n in end.items():
        assert health[name][-1] == n, name
    # the injected leader_in_isr breach is marked on the time axis
    assert health["invariant_violation"] == [0]
    assert {t["name"]: sum(t["y"]) for t in drawn["elections"]} == elections
    assert len(drawn["leaders"]) >= 1 and all(len(t["y"]) == incident.BUCKETS for t in drawn["leaders"])
    assert re.search(rf"{end['offline']:,} offline, {end['under_replicated']:,} under-replicated", summary)
    assert "violated: leader_in_isr" in summary
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_export_writes_every_event_in_seq_order(incident_history, tmp_path, fmt):
    import duckdb

    out = tmp_path / f"events.{fmt}"
    done = run("export", "--store", str(incident_history["store"]), "--format", fmt, "--out", str(out))
    assert done.exit_code == 0, done.output
    reader = {"parquet": "read_parquet", "csv": "read_csv_auto", "json": "read_json_auto"}[fmt]
    with Store(incident_history["store"], read_only=True) as s:
        want = s.con.execute("SELECT seq, hash FROM events ORDER BY seq").fetchall()
    got = duckdb.connect().execute(f"SELECT seq, hash FROM {reader}('{out}')").fetchall()
    assert got == want
    again = run("export", "--store", str(incident_history["store"]), "--out", str(out))
    assert again.exit_code == 2 and "exists" in again.output


def test_reassignment_json_is_the_assignment_as_of_the_point(incident_history):
    import json

    with Store(incident_history["store"], read_only=True) as s:
        point = s.point(seq=1500)
        state = queries.state_as_of(s, point)
    done = run("state", "--store", str(incident_history["store"]), "--seq", "1500", "--reassignment-json")
    assert done.exit_code == 0, done.output
    plan = json.loads(done.stdout)
    assert plan["version"] == 1
    assert {(p["topic"], p["partition"]): p["replicas"] for p in plan["partitions"]} == {
        (p.topic, p.partition): [r for r in p.state.replicas if r not in p.state.adding_replicas]
        for p in state.partitions}


def test_csv_exports_hold_the_same_rows_as_json(incident_history):
    import csv
    import io
    import json

    store = str(incident_history["store"])
    for args, key in ((["state", "--seq", "1500"], "partitions"), (["diff", "--from-seq", "1000", "--to-seq", "2000"],
                                                                     "partitions")):
        as_json = json.loads(run(*args, "--store", store, "--format", "json").stdout)[key]
        done = run(*args, "--store", store, "--format", "csv")
        assert done.exit_code == 0, done.output
        rows = list(csv.DictReader(io.StringIO(done.stdout)))
        assert [(r["topic"], int(r["partition"])) for r in rows] == [(p["topic"], p["partition"]) for p in as_json]
    timeline = json.loads(run("timeline", "--store", store, "--topic", "topic-00000", "--partition", "1",
                              "--format", "json").stdout)["changes"]
    rows = list(csv.DictReader(io.StringIO(run("timeline", "--store", store, "--topic", "topic-00000",
                                               "--partition", "1", "--format", "csv").stdout)))
    assert [int(r["seq"]) for r in rows] == [c["seq"] for c in timeline]
    assert [r["isr"] for r in rows] == [",".join(map(str, c["after"]["isr"])) if c["after"] else "" for c in timeline]


def test_report_shows_committed_data_lost_in_unclean_elections(tmp_path):
    """Committed data at elections: an unclean election whose new leader was behind the sampled HW is allowed, and the
    report shows how many committed records it lost: in the summary, in a table and on the time axis."""
    from tests.checks.cases import unclean_election_with_measured_loss

    archive, store, checks = tmp_path / "archive", tmp_path / "s.duckdb", tmp_path / "check.json"
    h = unclean_election_with_measured_loss("loss")
    h.write(archive)
    assert run("load", str(archive), "--store", str(store), "--workers", "1").exit_code == 0
    assert run("check", str(store), "--json", str(checks)).exit_code == 0  # allowed is not a failure
    out = tmp_path / "incident.html"
    r = run("report", "--store", str(store), "--check-json", str(checks), "--out", str(out))
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert "Unclean elections lost committed records, as the offset samples show: 1 election, 30 records" in page
    table = re.search(r'<table id="data-loss">(.*?)</table>', page, re.S)
    assert table is not None and "<td>u-0</td><td>30</td>" in table.group(1), table
    assert "u-0: 30 committed records lost" in page  # the marker's hover text on the health plot


def _gapped_store(tmp_path: Path) -> tuple[Path, list[tuple[int, int]]]:
    """A history with a stretch of every partition nobody read and one of partition t-0's state only; its
    store and the stretches' (from, to) event times."""
    from schemas.gap_reasons import partition_reason
    from schemas.events import CaptureGap
    from tests.checks.histories import K, baseline

    h = baseline("gapped")
    h.topic("u")
    h.create("u", 0, (1, 2, 3))
    h.gap()
    cur = h.parts[("t", 1)]
    h.change("t", 1, (K.ISR,), isr=cur.isr)
    h._emit(CaptureGap(-1, -1, partition_reason("t", 0, "3..4 before epoch 5 are stated whole in no log given")))
    h.change("t", 1, (K.ISR,), isr=cur.isr)
    h.change("t", 0, (K.ISR,), isr=h.parts[("t", 0)].isr)
    h.change("t", 1, (K.ISR,), isr=cur.isr)
    archive, store = tmp_path / "archive", tmp_path / "s.duckdb"
    h.write(archive)
    assert run("load", str(archive), "--store", str(store), "--workers", "1").exit_code == 0
    with Store(store, read_only=True) as s:
        from replay.gaps import stretches

        spans = [(x.from_time_ms, x.to_time_ms) for x in stretches(s.con, "gapped")]
    assert len(spans) == 2
    return store, spans


@pytest.mark.slow
def test_report_shades_the_stretches_nobody_read(tmp_path):
    """Every plot shades each stretch nobody read (drawn by plotly in the browser, at the stretch's times),
    names it in its caption and in the page's window data; a report of another topic leaves out a stretch of
    one partition's state that is not its topic's."""
    import json

    from schemas import times

    store, spans = _gapped_store(tmp_path)
    out = tmp_path / "incident.html"
    assert run("report", "--store", str(store), "--out", str(out)).exit_code == 0
    page = out.read_text()
    window = json.loads(re.search(r'<script type="application/json" id="report-window">(.*?)</script>', page).group(1))
    assert [(w["partitions"]) for w in window["not_read"]] == ["every partition", "t-0"]
    assert page.count('data-unknown-stretches="2"') == len(PLOTS)
    with chromium_page() as page_:
        page_.goto(out.as_uri())
        page_.wait_for_function(DRAWN, timeout=30_000)
        shapes = page_.evaluate("""Object.fromEntries([...document.querySelectorAll('figure.plot')].map(f => {
            const gd = f.querySelector('.js-plotly-plot');
            return [f.id, {rects: (gd.layout.shapes || []).filter(s => s.type === 'rect').map(s => [s.x0, s.x1]),
                           drawn: f.querySelectorAll('.shapelayer path').length}]; }))""")
    want = [[times.iso(a), times.iso(b)] for a, b in spans]
    for plot in PLOTS:
        assert shapes[plot]["rects"] == want and shapes[plot]["drawn"] >= 2, (plot, shapes[plot], want)

    other = tmp_path / "other.html"
    assert run("report", "--store", str(store), "--topic", "u", "--out", str(other)).exit_code == 0
    window = json.loads(re.search(r'id="report-window">(.*?)</script>', other.read_text()).group(1))
    assert [w["partitions"] for w in window["not_read"]] == ["every partition"]
