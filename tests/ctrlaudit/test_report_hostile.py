"""The incident report of a hostile history: a cluster id and topic names made to break out of HTML, of
an attribute, of the embedded JSON and of plotly's labels, and a check report whose invariant names and
evidence do the same. The store is built from the events themselves (not through the CLI, whose name
checks would refuse some of these names); the report and the check run on the real CLI.

The page is read twice: by html.parser (every hostile string only in text or attribute values, every
script one of the page's own) and by headless Chromium (no script of the attacker runs, no request is
made, the policy does not stop the page's own plots, the hostile text is shown as written)."""
from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from replay.store import Store
from schemas import times
from schemas.events import ElectionType, PartitionChangeKind as K
from tests.checks.histories import baseline
from tests.ctrlaudit.test_bad_inputs import ctrlaudit
from tests.ctrlaudit.test_report import CHROMIUM, DRAWN, PLOTS, chromium_page

PLAIN = "plain-cluster"
CLUSTER = "</script><script>window.__pwned=1</script>\u2028\u2029<!--"
TOPICS = (
    '"><img src=x onerror="window.__pwned=2;alert(2)">',
    '<a href="javascript:window.__pwned=3">click</a>',
    "<svg onload=window.__pwned=4>&lt;b&gt;&amp;</svg>",
)
INVARIANT = '</td></tr></table><script>window.__pwned=5</script><img src=x onerror="window.__pwned=6">'
EVIDENCE = {"rule": '"><svg onload="window.__pwned=7">', "expected": "javascript:window.__pwned=8",
            "actual": "</script><script>window.__pwned=9</script>", "partition": TOPICS[0] + "-0",
            "change": "isr: \u2028</SCRIPT >&amp;"}
HOSTILE = (CLUSTER, *TOPICS, INVARIANT, *EVIDENCE.values())
# what the page itself is made of: any other element (an <img>, an <a>, an <svg>) came from the data
PAGE_TAGS = {"html", "head", "meta", "title", "style", "script", "body", "h1", "h2", "h3", "h4", "p", "span", "ul",
             "li", "figure", "div", "figcaption", "table", "tr", "th", "td", "details", "summary", "pre"}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hostile")
    # the archive's own reader refuses this cluster id in a manifest (a name that would become a path): the
    # history is written under a plain id and the store's rows are given the hostile one afterwards, as a store
    # made by a tampered pipeline would hold it
    h = baseline(PLAIN)
    for topic in TOPICS:
        h.topic(topic)
        h.create(topic, 0, (1, 2, 4))
        h.change(topic, 0, (K.ISR,), isr=(1,))  # under min ISR: drawn in the heatmap, in the drill-down
    h.change(TOPICS[1], 0, (K.LEADER,), ElectionType.CLEAN, leader=-1)  # offline
    h.change(TOPICS[2], 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(1, 2, 4, 3), adding_replicas=(3,))
    archive, store = h.write(root / "hostile.avro"), root / "h.duckdb"
    with Store(store) as s:
        s.load([archive], workers=1)
    _rename_cluster(store, PLAIN, CLUSTER)
    checks = root / "check.json"
    done = ctrlaudit("check", str(store), "--json", str(checks))
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(checks.read_text())
    seq = len(h.events) - 3  # an event inside the report's window
    with Store(store, read_only=True) as s:
        time_ms = s.point(seq=seq).event_time_ms
    report["invariants"].append({
        "name": INVARIANT, "status": "fail", "violations": 1, "allowed": 0, "rules": {EVIDENCE["rule"]: 1},
        "examples": [{"cluster_id": CLUSTER, "seq": seq, "related_seq": None, "magnitude": 1,
                      **{k: EVIDENCE[k] for k in ("rule", "expected", "actual")},
                      # a time the history does not give that event: the mark goes where the store puts it
                      "event": {"event_time_ms": 0, "partition": EVIDENCE["partition"],
                                "change": EVIDENCE["change"]}}],
        "allowed_examples": []})
    hostile_checks = root / "hostile-check.json"
    hostile_checks.write_text(json.dumps(report))
    out = root / "incident.html"
    done = ctrlaudit("report", "--store", str(store), "--check-json", str(hostile_checks), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return {"store": store, "page": out, "marked_at": time_ms}


def _rename_cluster(store: Path, old: str, new: str) -> None:
    """Every row of every table of the store that names cluster `old` names `new` instead."""
    import duckdb

    con = duckdb.connect(str(store))
    try:
        tables = con.execute("SELECT DISTINCT table_name FROM information_schema.columns "
                             "WHERE column_name = 'cluster_id' AND table_schema = 'main'").fetchall()
        assert tables
        for (table,) in tables:
            kind = con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?",
                               [table]).fetchone()
            if kind and kind[0] == "BASE TABLE":
                con.execute(f'UPDATE "{table}" SET cluster_id = ? WHERE cluster_id = ?', [new, old])
    finally:
        con.close()


class _Page(HTMLParser):
    """Elements, attributes, text (decoded) and script bodies (raw) of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)
        else:
            self.text.append(data)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


@pytest.mark.slow
def test_hostile_values_are_only_text_and_attribute_values(hostile):
    html_text = hostile["page"].read_text(encoding="utf-8")
    page = _Page()
    page.feed(html_text)
    assert {t for t, _ in page.tags} <= PAGE_TAGS, {t for t, _ in page.tags} - PAGE_TAGS
    for tag, attrs in page.tags:
        assert not [a for a in attrs if a.startswith("on") or not re.fullmatch(r"[a-z-]+", a)], (tag, attrs)
        assert not [v for v in attrs.values() if v and v.strip().lower().startswith("javascript:")], (tag, attrs)
    # scripts: plotly.js and the page's drawing script run; the rest are JSON data, whose raw text holds no
    # '<' (nothing inside can close the element) and reads back as the values given
    code = [body for attrs, body in page.scripts if "type" not in attrs]
    data = [json.loads(body) for attrs, body in page.scripts if attrs.get("type") == "application/json"]
    assert len(code) == 2 and len(code) + len(data) == len(page.scripts)
    assert not [body for attrs, body in page.scripts if "type" in attrs and re.search("[<>&\u2028\u2029]", body)]
    window = next(d for d in data if "from_seq" in d)
    health = next(d for d in data if any(t.get("name") == "invariant violation" for t in d.get("data", [])))
    marks = next(t for t in health["data"] if t["name"] == "invariant violation")
    assert times.iso(hostile["marked_at"]) in marks["x"] and not [x for x in marks["x"] if x.startswith("1970")]
    assert window["cluster"] == CLUSTER and window["verdict"] == {"bound": True, "notes": []}
    figures = json.dumps(data)
    for topic in TOPICS:  # plotly's labels: as entities, which plotly shows as written
        assert json.dumps(topic.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))[1:-1] in figures
    # every hostile string is there as text
    text = "".join(page.text)
    for value in HOSTILE:
        assert value in text, value
    # the policy: nothing from the network, only the page's own two scripts, by their hashes
    policy = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    rules = dict(r.strip().split(" ", 1) for r in policy.split(";"))
    assert rules["default-src"] == "'none'" and rules["img-src"] == "data: blob:"
    assert sorted(rules["script-src"].split()) == sorted(f"'{_sha256(body)}'" for body in code)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (.ci/run installs Debian's package)")
@pytest.mark.slow
def test_no_script_of_the_attacker_runs_in_chromium(hostile):
    uri = hostile["page"].as_uri()
    with chromium_page() as page:
        requests, dialogs, console = [], [], []
        page.on("request", lambda r: requests.append(r.url))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: console.append(m.text))
        page.goto(uri)
        page.wait_for_function(DRAWN, timeout=30_000)
        for link in page.query_selector_all("a"):  # none is expected; a javascript: link would run on click
            link.click()
        # plotly's hover text of the violation marker, shown as it would be under the mouse
        hover = page.evaluate("""() => {
            const gd = document.getElementById('health-plot');
            const i = gd.data.findIndex(t => t.name === 'invariant violation');
            Plotly.Fx.hover(gd, [{curveNumber: i, pointNumber: gd.data[i].text.findIndex(t => t.includes('pwned=5'))}]);
            return gd.querySelector('.hoverlayer').textContent; }""")
        seen = page.evaluate("""() => ({
            pwned: window.__pwned === undefined ? null : window.__pwned,
            cluster: document.getElementById('cluster').textContent,
            partitions: [...document.querySelectorAll('#drill-down details')].map(d => d.dataset.partition),
            invariants: [...document.querySelectorAll('#verdicts td:first-child')].map(td => td.textContent),
            evidence: document.getElementById('evidence').textContent,
            ticks: [...document.querySelectorAll('#isr .ytick text, #reassignments .ytick text')]
                   .map(t => t.textContent),
            elements: [...document.querySelectorAll('img, a, iframe, object, embed, svg')]
                      .filter(e => !e.closest('.js-plotly-plot') && e.id !== 'js-plotly-tester')  // plotly's own
                      .map(e => e.outerHTML.slice(0, 120)),
            plots: [...document.querySelectorAll('figure.plot .main-svg')].length,
            buttons: [...document.querySelectorAll('#health-plot .modebar-btn')].map(b => b.dataset.title),
        })""")
        made = list(requests)
        page.hover("#health-plot")
        with page.expect_download(timeout=20_000) as saved:  # the policy lets plotly save a plot as PNG
            page.click("#health-plot .modebar-btn[data-title*=PNG]")
        png = Path(saved.value.path()).read_bytes()
    assert seen["pwned"] is None and dialogs == []
    assert made == [uri]  # the file itself; saving the PNG then reads the blob: plotly made
    assert [r for r in requests if not r.startswith("blob:null/")] == [uri]
    assert not [m for m in console if "Content Security Policy" in m], console  # nothing blocked: nothing tried
    assert seen["plots"] >= 2 * len(PLOTS)
    assert seen["cluster"] == CLUSTER
    assert {f"{t}-0" for t in TOPICS} <= set(seen["partitions"])
    assert INVARIANT in seen["invariants"]
    assert all(v in seen["evidence"] for v in (EVIDENCE["rule"], EVIDENCE["actual"], EVIDENCE["partition"]))
    assert {f"{t}-0" for t in TOPICS} <= set(seen["ticks"]), seen["ticks"]
    assert seen["elements"] == [], seen["elements"]  # no element of the attacker outside the plots
    assert INVARIANT in hover and EVIDENCE["actual"] in hover, hover
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert "Download plot as a PNG" in seen["buttons"] and not [b for b in seen["buttons"] if "Share" in b]  # no upload


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (.ci/run installs Debian's package)")
@pytest.mark.slow
def test_the_policy_stops_a_script_that_got_into_the_page(hostile, tmp_path):
    """Should an escape ever miss, the policy is the second wall: a script, an event handler and a
    javascript: link put into a copy of the page do not run, and its own plots still draw."""
    injected = tmp_path / "injected.html"
    injected.write_text(hostile["page"].read_text(encoding="utf-8").replace(
        "<h2>Summary</h2>", '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
        '<a id="bait" href="javascript:window.__pwned=3">x</a><h2>Summary</h2>', 1), encoding="utf-8")
    with chromium_page() as page:
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text))
        page.goto(injected.as_uri())
        page.wait_for_function(DRAWN, timeout=30_000)
        page.click("#bait")
        pwned = page.evaluate("window.__pwned === undefined ? null : window.__pwned")
    assert pwned is None
    assert len([m for m in console if "Content Security Policy" in m]) >= 3, console
