"""The incident report: one HTML file that opens with no network.

Plots are plotly figures (plotly.js is embedded once in the page's head; each figure is a JSON data block
that one fixed script draws into its div); the numbers come from replay/incident.py, the drill-down text
from replay/changes.py and replay/formats.py (the same timeline and explanation the CLI prints). Each
plot's figure element carries its headline counts as data-* attributes and in its caption, which the
browser test reads.

Every value on the page may come from a hostile source (a cluster id or topic name from copied files, a
crafted --check-json), so each is escaped for the context it lands in: `html.escape` in text and
attribute values, `_json_in_script` inside a <script> data block, `_plot_text` for what plotly draws (its
labels read a subset of HTML), `_attr_name` where a value becomes part of an attribute's name. A
Content-Security-Policy meta tag lets only the page's own two inline scripts run (by their sha256,
computed as the page is made), with no network source at all.
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import plotly.graph_objects as go
from plotly.io.json import to_json_plotly
from plotly.offline import get_plotlyjs

from checks.anchor_table import html_cell
from replay import changes, formats, who_asked
from schemas import times
from replay.incident import HEALTH, Incident
from replay.store import Store

from ctrlaudit.verdict import UNBOUND, CheckReport, Example, ExampleEvent, Invariant, Scalar

if TYPE_CHECKING:
    # plotly ships no type information: to mypy these are Any
    from plotly.basedatatypes import BaseTraceType
    from plotly.graph_objects import Figure

    from ctrlaudit.verdict import Verdict

DRILL_DOWN = 10  # affected partitions with a timeline and explanations
DRILL_DOWN_CHANGES = 40  # newest changes per partition in its timeline
EXPLAINED_MOVES = 5  # newest leader changes explained per partition

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
ul.anchors { margin: 0; padding-left: 1.1em; font-size: 0.9em; } .anchor-name { font-family: monospace; } .anchor-source, .anchor-note { color: #555; }
figure { margin: 1em 0; } figcaption { color: #444; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
.verdict-fail { color: #b00; font-weight: bold; } .verdict-pass { color: #070; }
.verdict-warning { color: #a0a; font-weight: bold; }
.verdict-note { border: 2px solid #b00; background: #fff3f3; padding: .5em 1em; font-weight: bold; }
"""

# Draws every figure's JSON data block into its div: the page's one script besides plotly.js, so the
# policy names exactly these two (plotly's own HTML export writes a script per figure, data inline).
_DRAW = """for (const block of document.querySelectorAll("script.plot-figure")) {
  const f = JSON.parse(block.textContent);
  Plotly.newPlot(block.dataset.plot, f.data, f.layout, f.config);
}"""


# A stretch nobody read (`not_read`): from, to (epoch ms), the partitions it holds, why
NotRead = TypedDict("NotRead", {"from": int, "to": int, "partitions": str, "reason": str})


class Violation(TypedDict):
    """A check report's example of a violation in the window (`violations_in_window`)."""

    invariant: str
    seq: int
    time: int  # the store's time of the event
    evidence: str


class DataLoss(TypedDict):
    """A measured loss of committed records in the window (`data_loss_in_window`)."""

    seq: int
    time: int  # the store's time of the election
    records: int
    partition: str
    actual: Scalar


def _json_in_script(text: str) -> str:
    """JSON text made safe inside a <script> element: `<`, `>`, `&` (only ever inside strings in JSON)
    and the line separators U+2028/U+2029 as \\u escapes, so no value can close the element
    (`</script>`), open a comment, or end a line of script."""
    for ch in "<>&\u2028\u2029":
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


def _plot_text(value: object) -> str:
    """A value plotly draws as a label, legend or hover text: plotly reads a subset of HTML there (<b>,
    <a href>, entities), so the value's own `<`, `>` and `&` are given as entities and shown as written."""
    return html.escape(str(value), quote=False)


def _attr_name(value: object) -> str:
    """A value as part of an attribute's name (data-election-<type>): letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9]+", "-", str(value).lower()).strip("-") or "x"


def _sha256(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def content_security_policy(*scripts: str) -> str:
    """Nothing from the network; only these inline scripts (by hash: no 'unsafe-inline', no 'unsafe-eval',
    which plotly's SVG plots do not need); images only made in the page, as data: URIs (a heatmap is drawn as
    one) or blob: URLs (a plot saved as PNG); inline styles, which plotly sets as it draws (its own style
    rules are refused under a stricter policy, and its modebar loses its layout)."""
    return ("default-src 'none'; script-src " + " ".join(_sha256(s) for s in scripts)
            + "; style-src 'unsafe-inline'; img-src data: blob:; base-uri 'none'; form-action 'none'")


def _ms(ms: int) -> str:
    return times.iso(ms)


def _duration(ms: int) -> str:
    s = ms / 1000
    return f"{s:.1f} s" if s < 120 else (f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h")


def _axis(times: tuple[int, ...]) -> list[str]:
    return [_ms(t) for t in times]


def _count(n: int, word: str, plural: str | None = None) -> str:
    """`n` and the word, singular for one: "1 reassignment", "2 reassignments"."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n:,} times"


def _controller_change(c: dict[str, Any]) -> str:
    return f"{c['leader']} (epoch {c['epoch']}, seq {c['seq']}) at {_ms(c['time'])}"


def _some(items: Sequence[dict[str, Any]], shown: int = 5) -> str:
    listed = ", ".join(_controller_change(c) for c in items[:shown])
    return listed + (f" and {len(items) - shown} more" if len(items) > shown else "")


def summary(inc: Incident, checks: CheckReport | None, notes: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """The summary in words, one sentence per line. `notes`: what the check's verdict is not (see
    ctrlaudit.verdict): said with it."""
    a, b, h = inc.a, inc.b, inc.health
    scope = f"topic {inc.topic}" if inc.topic else "all topics"
    lines = [f"From {_ms(a.event_time_ms)} to {_ms(b.event_time_ms)}, {scope}: the window holds seq "
             f"{inc.first_seq}..{b.seq}, {_count(inc.events, 'event')}"
             + (f" ({', '.join(f'{n:,} {k}' for k, n in inc.kinds.items())})." if inc.kinds else ".")]
    if inc.affected_count:
        worst = inc.affected[0]
        lines.append(
            f"{_count(inc.affected_count, 'partition')} {'was' if inc.affected_count == 1 else 'were'} offline, "
            "under-replicated or under min ISR at some time; "
            f"peaks: {max(h.values['offline']):,} offline, {max(h.values['under_replicated']):,} under-replicated, "
            f"{max(h.values['under_min_isr']):,} under min ISR. The worst, {worst['topic']}-{worst['partition']}, "
            f"was offline for {_duration(worst['offline_ms'])} and under min ISR for "
            f"{_duration(worst['under_min_isr_ms'])}.")
    else:
        lines.append("No partition was offline, under-replicated or under min ISR.")
    lines.append(f"At the end: {h.at_end['offline']:,} offline, {h.at_end['under_replicated']:,} under-replicated, "
                 f"{h.at_end['under_min_isr']:,} under min ISR, {h.at_end['at_min_isr']:,} at min ISR.")
    if inc.controllers:
        lines.append(f"The active controller changed {_times(len(inc.controllers))}: to {_some(inc.controllers)}.")
    else:
        lines.append("The active controller did not change in the window.")
    if inc.controllers_outside:
        n = len(inc.controllers_outside)
        lines.append(f"{_count(n, 'controller change')} among the window's events {'is' if n == 1 else 'are'} dated "
                     f"outside it (another node's clock, or a snapshot's time), not drawn: to "
                     f"{_some(inc.controllers_outside)}.")
    if inc.elections["totals"]:
        lines.append("Leader elections: " + ", ".join(f"{n:,} {k}" for k, n in inc.elections["totals"].items()) + ".")
    if inc.reassignment_count:
        outcomes = [f"{n:,} {o}" for o in ("completed", "cancelled", "ended", "in flight")
                    if (n := sum(1 for r in inc.reassignments if r["outcome"] == o))]
        shown = len(inc.reassignments)
        lines.append(f"{_count(inc.reassignment_count, 'reassignment')} in the window"
                     + (f": {', '.join(outcomes)}." if shown == inc.reassignment_count
                        else f"; the {shown:,} longest: {', '.join(outcomes)}."))
    if checks is None:
        lines.append("Invariants: not checked (give --check-json from `ctrlaudit check --json` or --run-checks).")
    else:
        failed = [i["name"] for i in checks["invariants"] if i["status"] == "fail"]
        warned = [i["name"] for i in checks["invariants"] if i["status"] == "warning"]
        label = f" ({'; '.join(n.upper() if n == UNBOUND else n for n, _ in notes)})" if notes else ""
        lines.append(f"Invariants{label}: {len(checks['invariants']) - len(failed) - len(warned)} of "
                     f"{len(checks['invariants'])} hold" + (f"; violated: {', '.join(failed)}" if failed else "")
                     + (f"; warnings (bounded liveness, deadline passed): {', '.join(warned)}" if warned else "")
                     + ".")
    if checks is not None:
        n, total = data_loss_totals(checks)
        if n:
            lines.append(f"Unclean elections lost committed records, as the offset samples show: {_count(n, 'election')}, "
                         f"{_count(total, 'record')} in all (whole checked history; the worst in the window are listed "
                         f"under Invariants).")
    said = b.describe()
    lines.append(said[:1].upper() + said[1:] + ".")  # not str.capitalize: it lowercases times and names
    return lines


DATA_LOSS_RULE = "unclean_election_data_loss"


def data_loss_totals(checks: CheckReport) -> tuple[int, int]:
    """(unclean elections with measured loss, records lost in all) of a check report."""
    for inv in checks.get("invariants", []):
        if inv["name"] == "high_watermark_monotonic":
            return inv["rules"].get(DATA_LOSS_RULE, 0), inv.get("magnitude_by_rule", {}).get(DATA_LOSS_RULE, 0)
    return 0, 0


def _invariants(checks: CheckReport | None) -> list[Invariant]:
    return checks.get("invariants", []) if checks else []


def _in_window(inc: Incident, x: Example) -> bool:
    """An example of a check report is about an event of this window (of this cluster: a report of
    several clusters has examples of each; one without cluster ids is of an older ctrlaudit)."""
    return x.get("cluster_id") in (None, inc.a.cluster_id) and inc.a.seq < x["seq"] <= inc.b.seq and bool(x.get("event"))


def event_times(store: Store, inc: Incident, checks: CheckReport | None) -> dict[int, int]:
    """seq -> the store's own time of each event a check report's example in the window names: a mark is
    drawn where this history puts its event, whatever time the file gives (an example at a seq the store
    does not hold is not drawn)."""
    seqs = sorted({x["seq"] for inv in _invariants(checks)
                   for x in inv.get("examples", []) + inv.get("allowed_examples", []) if _in_window(inc, x)})
    if not seqs:
        return {}
    return dict(store.con.execute("SELECT seq, event_time_ms FROM events WHERE cluster_id = ? AND list_contains(?, seq)",
                                  [inc.a.cluster_id, seqs]).fetchall())


def data_loss_in_window(inc: Incident, checks: CheckReport | None, at: dict[int, int]) -> list[DataLoss]:
    """The check report's measured data losses (its worst few) whose election lies in the window; `at`:
    event_times."""
    out: list[DataLoss] = []
    for inv in _invariants(checks):
        for x in inv.get("allowed_examples", []):
            ev: ExampleEvent | dict[str, str] = x.get("event") or {}
            if x.get("rule") == DATA_LOSS_RULE and _in_window(inc, x) and x["seq"] in at:
                out.append({"seq": x["seq"], "time": at[x["seq"]], "records": x.get("magnitude") or 0,
                            "partition": ev.get("partition", ""), "actual": x.get("actual", "")})
    return out


def _vlines(times: list[int], color: str, dash: str) -> list[dict[str, object]]:
    """Vertical lines as one shapes list (fig.add_vline re-validates every shape on each call:
    quadratic, 29 s for 250 lines)."""
    return [{"type": "line", "xref": "x", "yref": "paper", "x0": _ms(t), "x1": _ms(t), "y0": 0, "y1": 1,
             "line": {"color": color, "dash": dash, "width": 1}} for t in times]


def not_read(inc: Incident) -> list[NotRead]:
    """The stretches nobody read that the window holds (of its topic's partitions, or of every partition),
    clipped to the window: from, to (epoch ms), the partitions they hold and why."""
    lo, hi = inc.a.event_time_ms, inc.b.event_time_ms
    out: list[NotRead] = []
    for s in dict.fromkeys((*inc.a.uncertain, *inc.b.uncertain)):
        if inc.topic is not None and s.partitions and all(t != inc.topic for t, _ in s.partitions):
            continue
        start = max(lo, s.from_time_ms if s.from_time_ms >= 0 else lo)
        end = min(hi, s.to_time_ms if s.to_time_ms >= 0 else hi)
        out.append({"from": start, "to": max(start, end), "partitions": s.names(), "reason": s.describe()})
    return out


def _shade(fig: Figure, stretches: list[NotRead]) -> None:
    """Shade the stretches nobody read on a plot's time axis, beneath its data; outlined, so that a stretch
    between two events of the same millisecond still shows."""
    if stretches:
        fig.update_layout(shapes=[*fig.layout.shapes, *(
            {"type": "rect", "xref": "x", "yref": "paper", "x0": _ms(s["from"]), "x1": _ms(s["to"]), "y0": 0, "y1": 1,
             "fillcolor": "#888", "opacity": 0.25, "layer": "below", "line": {"color": "#555", "width": 1}}
            for s in stretches)])


def _span(inc: Incident) -> tuple[str, str]:
    """The window's time range, the x axis of every plot (a window of one millisecond: one second)."""
    lo, hi = inc.a.event_time_ms, inc.b.event_time_ms
    return _ms(lo), _ms(max(hi, lo + 1000) if hi <= lo else hi)


def _has_points(trace: BaseTraceType) -> bool:
    values = getattr(trace, "z", None) if trace.type == "heatmap" else trace.x
    return bool(values is not None and len(values))


def _figure(fig_id: str, title: str, fig: Figure, caption: str, counts: dict[str, int],
            shaded: Sequence[NotRead] = (), *, span: tuple[str, str]) -> str:
    """The figure element: its counts as data-* attributes, the plot's div, its figure as a JSON data
    block (drawn by _DRAW), its caption. Its time axis is the window's (`span`), also with nothing on it,
    which then says so (plotly's own range of an empty date axis is the year 2000)."""
    fig.update_xaxes(type="date", range=list(span))
    if not any(_has_points(t) for t in fig.data):
        fig.add_annotation(text="nothing to plot in this window", xref="paper", yref="paper", x=0.5, y=0.5,
                           showarrow=False, font={"size": 16, "color": "#666"})
    _shade(fig, list(shaded))
    if shaded:
        counts = counts | {"unknown_stretches": len(shaded)}
        caption += (f" Shaded: {_count(len(shaded), 'stretch', 'stretches')} nobody read, where the state shown may be incomplete ("
                    + "; ".join(s["partitions"] for s in shaded) + ").")
    attrs = " ".join(f'data-{_attr_name(k)}="{html.escape(str(v))}"' for k, v in counts.items())
    fig.update_layout(title=title, height=fig.layout.height or 360, margin={"l": 60, "r": 20, "t": 50, "b": 40},
                      template="plotly_white", legend={"orientation": "h"})
    # showSendToCloud: plotly.js would offer a button that uploads the figure's data to Plotly's cloud
    figure = fig.to_plotly_json() | {"config": {"displaylogo": False, "responsive": True, "showSendToCloud": False}}
    return (f'<figure id="{fig_id}" class="plot" {attrs}><div id="{fig_id}-plot" class="plotly-graph-div"></div>'
            f'<script type="application/json" class="plot-figure" data-plot="{fig_id}-plot">'
            f"{_json_in_script(to_json_plotly(figure))}</script>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def violations_in_window(inc: Incident, checks: CheckReport | None, at: dict[int, int]) -> list[Violation]:
    """The check report's examples whose event lies in the window; `at`: event_times."""
    out: list[Violation] = []
    for inv in _invariants(checks):
        for x in inv.get("examples", []):
            ev: ExampleEvent | dict[str, str] = x.get("event") or {}
            if _in_window(inc, x) and x["seq"] in at:
                out.append({"invariant": inv["name"], "seq": x["seq"], "time": at[x["seq"]],
                            "evidence": f"{inv['name']} at seq {x['seq']}: {x.get('rule')}: expected {x.get('expected')}, "
                                        f"actual {x.get('actual')} {ev.get('partition', '')} {ev.get('change', '')}"})
    return out


def render(store: Store, inc: Incident, judged: Verdict | None = None) -> str:
    """The page. `judged`: a check report's verdict and how it relates to this history (ctrlaudit.verdict)."""
    checks = judged.checks if judged is not None else None
    unknown = not_read(inc)
    span = _span(inc)
    x = _axis(inc.health.times)
    h = inc.health
    parts = []
    fig = go.Figure([go.Scatter(x=x, y=h.values[n], name=n.replace("_", " "), mode="lines", line_shape="hv")
                     for n in HEALTH])
    at = event_times(store, inc, checks)
    bad = violations_in_window(inc, checks, at)
    fig.update_layout(shapes=_vlines([v["time"] for v in bad], "red", "dot"))
    if bad:
        fig.add_trace(go.Scatter(x=[_ms(v["time"]) for v in bad], y=[0] * len(bad), mode="markers",
                                 marker={"color": "red", "symbol": "x", "size": 10}, name="invariant violation",
                                 text=[_plot_text(v["evidence"]) for v in bad], hoverinfo="text"))
    lost = data_loss_in_window(inc, checks, at)
    if lost:
        fig.add_trace(go.Scatter(x=[_ms(v["time"]) for v in lost], y=[0] * len(lost), mode="markers",
                                 marker={"color": "darkorange", "symbol": "diamond", "size": 11},
                                 name="committed records lost (unclean election)",
                                 text=[_plot_text(f"{v['partition']}: {v['records']:,} committed records lost")
                                       for v in lost],
                                 hoverinfo="text"))
    peaks = {f"peak_{n}": max(h.values[n]) for n in HEALTH} | {f"end_{n}": h.at_end[n] for n in HEALTH}
    parts.append(_figure("health", "Partition health (maximum per time bucket)", fig,
                         "Peaks: " + ", ".join(f"{n.replace('_', ' ')} {peaks['peak_' + n]}" for n in HEALTH)
                         + ". At the end: " + ", ".join(f"{n.replace('_', ' ')} {h.at_end[n]}" for n in HEALTH)
                         + f". Invariant violations marked: {len(bad)}.", peaks | {"violations": len(bad)}, shaded=unknown, span=span))

    fig = go.Figure([go.Scatter(x=x, y=v, name=_plot_text(f"broker {k}"), mode="lines", line_shape="hv")
                     for k, v in inc.leaders.values.items()])
    parts.append(_figure("leaders", "Leaders per broker", fig,
                         "Leaders at the end: " + ", ".join(f"broker {k}: {n}" for k, n in inc.leaders.at_end.items()),
                         {"brokers": len(inc.leaders.values), "leaders_at_end": sum(inc.leaders.at_end.values())}, shaded=unknown, span=span))

    colors = {"unfenced": "#2a9d8f", "fenced": "#e76f51", "controlled shutdown": "#e9c46a"}
    fig = go.Figure()
    for state, color in colors.items():
        segs = [s for s in inc.brokers if s["state"] == state]
        fig.add_trace(go.Bar(y=[_plot_text(f"broker {s['broker']}") for s in segs], x=[max(s["end"] - s["start"], 1) for s in segs],
                             base=[_ms(s["start"]) for s in segs], orientation="h", name=state,
                             marker_color=color))
    fig.update_layout(shapes=_vlines([c["time"] for c in inc.controllers], "#555", "dash"))
    fig.update_xaxes(type="date")
    fenced = sum(1 for s in inc.brokers if s["state"] == "fenced")
    parts.append(_figure("brokers", "Broker registration and fencing (dashed: controller changes)", fig,
                         f"{_count(len({s['broker'] for s in inc.brokers}), 'broker')}, "
                         f"{_count(fenced, 'fenced stretch', 'fenced stretches')}, "
                         f"{_count(len(inc.controllers), 'controller change')}.",
                         {"fenced_stretches": fenced, "controller_changes": len(inc.controllers)}, shaded=unknown, span=span))

    hm = inc.isr_heatmap
    fig = go.Figure(go.Heatmap(z=hm["z"], x=_axis(hm["times"]), y=[_plot_text(r) for r in hm["rows"]],
                               colorscale="RdYlGn",
                               colorbar={"title": "ISR size"}))
    fig.update_layout(height=max(300, 24 * len(hm["rows"]) + 120))
    fig.update_yaxes(type="category", dtick=1)
    parts.append(_figure("isr", "ISR size of the most affected partitions (smallest per bucket)", fig,
                         _heatmap_caption(len(hm["rows"]), inc.affected_count),
                         {"rows": len(hm["rows"]), "affected": inc.affected_count}, shaded=unknown, span=span))

    outcome_colors = {"completed": "#2a9d8f", "cancelled": "#e76f51", "in flight": "#264653", "ended": "#999"}
    fig = go.Figure()
    for outcome, color in outcome_colors.items():
        bars = [r for r in inc.reassignments if r["outcome"] == outcome]
        fig.add_trace(go.Bar(y=[_plot_text(r["partition"]) for r in bars], x=[max(r["end"] - r["start"], 1) for r in bars],
                             base=[_ms(r["start"]) for r in bars], orientation="h", name=outcome, marker_color=color))
    fig.update_xaxes(type="date")
    fig.update_yaxes(type="category", dtick=1)
    fig.update_layout(height=max(300, 18 * len(inc.reassignments) + 140))
    parts.append(_figure("reassignments", "Reassignments, start to completion or cancellation", fig,
                         _count(inc.reassignment_count, "reassignment")
                         + (f" (the {len(inc.reassignments)} longest drawn)" if inc.reassignment_count > len(inc.reassignments) else "")
                         + ".", {"reassignments": inc.reassignment_count}, shaded=unknown, span=span))

    ex = _axis(inc.elections["times"])
    fig = go.Figure([go.Bar(x=ex, y=v, name=_plot_text(k)) for k, v in inc.elections["counts"].items()])
    fig.update_layout(barmode="stack")
    totals = inc.elections["totals"]
    parts.append(_figure("elections", "Leader elections by type", fig,
                         ", ".join(f"{k}: {n}" for k, n in totals.items()) or "No elections.",
                         {"elections": sum(totals.values())} | {f"election_{k}": n for k, n in totals.items()}, shaded=unknown, span=span))

    return _page(inc, judged, parts, bad, lost, _drill_down(store, inc), get_plotlyjs(), unknown, _who(store, inc))


WHO_ROWS = 500  # the newest rows of who changed what shown; export --table attributions writes them all


def _who(store: Store, inc: Incident) -> str:
    """Who changed what in the window: each change a request may have made, with who asked, and each denied
    attempt; or that the archive keeps no requests to tell."""
    if not who_asked.has_requests(store.con, inc.a.cluster_id):
        return ('<p id="who-not-kept">Who asked is not known: the archive keeps no request logs '
                "(ctrlaudit import requests adds them).</p>")
    cols, rows = who_asked.table(store.con, inc.a.cluster_id, inc.a.seq, inc.b.seq)
    shown = rows[-WHO_ROWS:]
    keep = ("seq", "time", "change", "topic", "partition", "resource", "cause", "principal", "host", "client_id",
            "software", "why")
    at = [cols.index(c) for c in keep]
    body = "".join("<tr>" + "".join(f"<td>{html.escape('' if r[i] is None else str(r[i]))}</td>" for i in at)
                   + "</tr>" for r in shown)
    said = _part_of(len(shown), len(rows), "<p>No change a request makes, and no denied attempt, in the window.</p>",
                    "", "", "<p>The {shown:,} newest of {total:,} rows (export --table attributions has them all).</p>")
    if not rows:
        return said
    head = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in keep)
    return f'{said}<table id="who-changed-what"><tr>{head}</tr>{body}</table>'


def _drill_down(store: Store, inc: Incident) -> str:
    out = []
    for x in inc.affected[:DRILL_DOWN]:
        t, p = x["topic"], x["partition"]
        tl = changes.timeline(store, inc.b, t, p, since_seq=inc.a.seq + 1)
        shown = type(tl)(tl.point, tl.topic, tl.partition, tl.changes[-DRILL_DOWN_CHANGES:])
        every = [c for c in tl.changes if "LEADER" in c.changes]
        moves = every[-EXPLAINED_MOVES:]
        explained = "".join(f"<pre>{html.escape(formats.explain_text(changes.explain(store, seq=c.seq, cluster_id=inc.a.cluster_id)))}</pre>"
                            for c in moves)
        out.append(f'<details class="partition" data-partition="{html.escape(t)}-{p}"><summary>{html.escape(t)}-{p}: '
                   f"offline {_duration(x['offline_ms'])}, under min ISR {_duration(x['under_min_isr_ms'])}, "
                   f"under-replicated {_duration(x['under_replicated_ms'])}, {_count(len(tl.changes), 'change')}</summary>"
                   f"<pre>{html.escape(formats.timeline_text(shown))}</pre>"
                   f"{_moves_heading(len(moves), len(every))}{explained}</details>")
    return "".join(out) or "<p>No partition was affected.</p>"


def _part_of(shown: int, total: int, none: str, one: str, every: str, part: str) -> str:
    """The words for `shown` of `total` things: `none` (no thing), `one` (the one, shown), `every` (all shown)
    or `part` (some); the last two are formatted with shown= and total=."""
    if total == 0:
        return none
    if shown == total:
        return one if total == 1 else every.format(shown=shown, total=total)
    return part.format(shown=shown, total=total)


def _moves_heading(shown: int, total: int) -> str:
    return _part_of(shown, total, "<h4>No leader change in the window.</h4>", "<h4>The leader change, explained</h4>",
                    "<h4>The {total} leader changes, explained</h4>",
                    "<h4>The {shown} newest of {total} leader changes, explained</h4>")


def _heatmap_caption(rows: int, affected: int) -> str:
    return _part_of(rows, affected, "No partition was affected.", "The one affected partition.",
                    "All {total:,} affected partitions.", "The {shown:,} most affected of {total:,} affected partitions.")


def _verdict_class(status: str) -> str:
    """A verdict's style: a bounded-liveness warning apart from a failure and a pass."""
    return status if status in ("fail", "warning") else "pass"


def _verdict_text(i: Invariant) -> str:
    """The verdict cell: the status, with a bounded-liveness check's pending obligations (never violations)."""
    pending = i.get("pending", 0)
    return i["status"] + (f" ({pending:,} pending)" if pending else "")


def _affected_heading(affected: int) -> str:
    return _part_of(min(affected, DRILL_DOWN), affected, "Affected partitions: none", "The affected partition",
                    "The {total} affected partitions", "Affected partitions: the {shown} worst of {total:,}")


def _page(inc: Incident, judged: Verdict | None, parts: list[str], bad: list[Violation],
          lost: list[DataLoss], drill: str, plotlyjs: str, unknown: list[NotRead], who: str) -> str:
    checks = judged.checks if judged is not None else None
    notes = judged.notes if judged is not None else ()
    labels = "".join(f'<p class="verdict-note" role="note">{html.escape(n)}: {html.escape(detail)}</p>'
                     for n, detail in notes)
    verdicts = ""
    if checks is not None:
        rows = "".join(f'<tr><td>{html.escape(i["name"])}</td><td class="verdict-{_verdict_class(i["status"])}">'
                       f'{html.escape(_verdict_text(i))}</td><td>{html.escape(str(i["violations"]))}</td>'
                       f'<td>{html.escape(str(i["allowed"]))}</td><td>{html_cell(i["name"])}</td></tr>'
                       for i in checks["invariants"])
        evidence = "".join(f"<li>{_ms(v['time'])}: {html.escape(v['evidence'])}</li>" for v in bad)
        verdicts = (f'<h2>Invariants</h2><div id="verdict-notes">{labels}</div>'
                    '<table id="verdicts"><tr><th>invariant</th><th>verdict</th><th>violations</th>'
                    f"<th>allowed</th><th>where it comes from</th></tr>{rows}</table><ul id=\"evidence\">{evidence}</ul>")
        if lost:
            loss_rows = "".join(f'<tr><td>{_ms(v["time"])}</td><td>{html.escape(str(v["partition"]))}</td>'
                                f'<td>{v["records"]:,}</td><td>{html.escape(str(v["actual"]))}</td></tr>' for v in lost)
            verdicts += ('<h3>Committed records lost in unclean elections (allowed: the topic allows them)</h3>'
                         '<table id="data-loss"><tr><th>time</th><th>partition</th><th>records lost</th>'
                         f"<th>evidence</th></tr>{loss_rows}</table>")
    title = f"ctrlaudit incident report: {_ms(inc.a.event_time_ms)} to {_ms(inc.b.event_time_ms)}"
    words = "".join(f"<li>{html.escape(s)}</li>" for s in summary(inc, checks, notes))
    window = {"cluster": inc.a.cluster_id, "from_seq": inc.a.seq, "to_seq": inc.b.seq,
              "verdict": None if judged is None else {"bound": judged.bound, "notes": [n for n, _ in notes]},
              "not_read": [{"from": _ms(u["from"]), "to": _ms(u["to"]), "partitions": u["partitions"],
                            "reason": u["reason"]} for u in unknown]}
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{html.escape(content_security_policy(plotlyjs, _DRAW))}">'
            f"<title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style><script>{plotlyjs}</script></head><body>"
            f'<h1>{html.escape(title)}</h1><p>cluster <span id="cluster">{html.escape(inc.a.cluster_id)}</span></p>'
            f'{labels}<script type="application/json" id="report-window">{_json_in_script(json.dumps(window))}</script>'
            f'<h2>Summary</h2><ul id="summary">{words}</ul><h2>Over time</h2>{"".join(parts)}{verdicts}'
            f'<h2>Who changed what</h2><div id="who">{who}</div>'
            f'<h2>{_affected_heading(inc.affected_count)}</h2>'
            f'<div id="drill-down">{drill}</div><script>{_DRAW}</script></body></html>')
