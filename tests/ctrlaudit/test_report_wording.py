"""The incident report's words on a handmade history whose counts are known: the window's events counted as it
holds them (seq first..last, both included), singular and plural said as English says them, times and names
in their own case, a reassignment Kafka completed in one record counted, a controller change dated before the
window not listed in it, and a plot with nothing on it drawn over the window's time range."""
from __future__ import annotations

import html
import json
import re
from dataclasses import replace

import pytest

from schemas import times
from schemas.events import ElectionType
from tests.checks.histories import K, History
from tests.ctrlaudit.conftest import run
from tests.ctrlaudit.test_report import CHROMIUM, DRAWN, chromium_page

BACKDATED_BY = 60_000


@pytest.fixture(scope="module")
def wording(tmp_path_factory) -> dict:
    h = History("wording")
    h.elect_controller(100, 1)  # seq 0: in the window
    h.register(1, 2, 3)
    h.topic("t")
    h.create("t", 0, (1, 2, 3))
    h.topic("u")
    h.create("u", 0, (1, 2, 3))
    h.change("t", 0, (K.ISR,), isr=(1, 2))  # t-0 under-replicated: the one affected partition
    h.change("t", 0, (K.REPLICAS,), replicas=(1, 2))  # 3 removed: a reassignment completed in one record
    backdated = h.elect_controller(101, 2)  # dated a minute before the window's first event
    h.events[backdated] = replace(h.events[backdated], event_time_ms=h.events[0].event_time_ms - BACKDATED_BY)
    h.change("u", 0, (K.LEADER,), ElectionType.PREFERRED, leader=2)
    h.change("u", 0, (K.ISR,), isr=(1, 2, 3))
    root = tmp_path_factory.mktemp("wording")
    store = root / "s.duckdb"
    h.write(root / "archive")
    assert run("load", str(root / "archive"), "--store", str(store), "--workers", "1").exit_code == 0
    return {"store": store, "root": root, "events": h.events, "backdated": backdated}


def report(w: dict, *args: str) -> str:
    out = w["root"] / f"r{len(args)}.html"
    done = run("report", "--store", str(w["store"]), "--out", str(out), "--force", *args)
    assert done.exit_code == 0, done.output
    return out.read_text()


def summary(page: str) -> list[str]:
    body = re.search(r'<ul id="summary">(.*?)</ul>', page, re.S).group(1)
    return [html.unescape(li) for li in re.findall(r"<li>(.*?)</li>", body, re.S)]


def figures(page: str) -> dict[str, dict]:
    return {m[0]: json.loads(m[1]) for m in re.findall(
        r'<script type="application/json" class="plot-figure" data-plot="([a-z]+)-plot">(.*?)</script>', page, re.S)}


def test_the_summary_counts_the_window_as_it_holds_it(wording):
    events = wording["events"]
    page = report(wording)
    said = summary(page)
    start, end = times.iso(events[0].event_time_ms), times.iso(events[-1].event_time_ms)
    last = len(events) - 1
    assert said[0].startswith(f"From {start} to {end}, all topics: the window holds seq 0..{last}, {len(events)} "
                              "events ("), said[0]
    assert said[1].startswith("1 partition was offline, under-replicated or under min ISR at some time;")
    assert said[3] == f"The active controller changed once: to 100 (epoch 1, seq 0) at {start}."
    backdated = times.iso(events[0].event_time_ms - BACKDATED_BY)
    assert said[4].startswith("1 controller change among the window's events is dated outside it")
    assert said[4].endswith(f"not drawn: to 101 (epoch 2, seq {wording['backdated']}) at {backdated}.")
    assert said[5] == "Leader elections: 1 PREFERRED."  # the election type as timeline and explain name it
    assert said[6] == "1 reassignment in the window: 1 completed."
    words = " ".join(said)
    for wrong in ("1 reassignments", "changed 1 times", "(s)", "partitions of"):
        assert wrong not in words
    assert not re.search(r"\d{4}-\d\d-\d\dt\d\d:\d\d", page)  # no time lower-cased, anywhere on the page
    shapes = figures(page)["brokers"]["layout"].get("shapes", [])
    assert [s["x0"] for s in shapes if s["type"] == "line"] == [start]  # the backdated change is not drawn


def test_captions_and_headings_say_one_as_one(wording):
    page = report(wording)
    assert "<figcaption>The one affected partition." in page
    assert "<figcaption>1 reassignment." in page and 'data-reassignments="1"' in page
    assert "1 controller change." in page and "3 brokers," in page
    assert "<h2>The affected partition</h2>" in page
    drill = re.search(r'<div id="drill-down">(.*?)</div>', page, re.S).group(1)
    assert "No leader change in the window." in drill and "(0 newest)" not in drill
    assert re.search(r"under-replicated [\d.]+ s, 3 changes</summary>", drill), drill[:300]


def test_a_window_from_a_time_holds_the_events_at_that_time(wording):
    events = wording["events"]
    first = wording["backdated"] + 1
    page = report(wording, "--from", times.iso(events[first].event_time_ms))
    said = summary(page)
    assert f"the window holds seq {first}..{len(events) - 1}, {len(events) - first} events" in said[0], said[0]
    assert said[3] == "The active controller did not change in the window."


@pytest.mark.slow
def test_an_empty_plot_spans_the_window_and_says_so(wording):
    page = report(wording, "--topic", "u")  # u-0: never reassigned nor affected
    events = wording["events"]
    span = [times.iso(events[0].event_time_ms), times.iso(events[-1].event_time_ms)]
    drawn = figures(page)
    assert set(drawn) == {"health", "leaders", "brokers", "isr", "reassignments", "elections"}
    for name, figure in drawn.items():
        assert figure["layout"]["xaxis"]["range"] == span, name
        said = [a["text"] for a in figure["layout"].get("annotations", [])]
        assert said == (["nothing to plot in this window"] if name in ("isr", "reassignments") else []), name
    assert "2000-01-01" not in json.dumps(drawn)
    if CHROMIUM is None:
        return
    out = wording["root"] / "u.html"
    out.write_text(page)
    with chromium_page() as p:
        p.goto(out.as_uri())
        p.wait_for_function(DRAWN, timeout=30_000)
        ranges = p.evaluate("""Object.fromEntries([...document.querySelectorAll('figure.plot')].map(f =>
            [f.id, f.querySelector('.js-plotly-plot')._fullLayout.xaxis.range]))""")
    for name, (lo, hi) in ranges.items():
        assert lo.startswith(span[0][:10]) and hi.startswith(span[1][:10]), (name, lo, hi)
