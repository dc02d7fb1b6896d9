"""The incident report: one HTML file that opens with no network.

Plots are plotly figures (plotly.js is embedded once in the page's head, every figure is a div that
uses it); the numbers come from replay/incident.py, the drill-down text from replay/changes.py and
replay/formats.py (the same timeline and explanation the CLI prints). Each plot's figure element
carries its headline counts as data-* attributes and in its caption, which the browser test reads.
"""
from __future__ import annotations

import html
import json
from typing import Any

from replay import changes, formats
from schemas import times
from replay.incident import HEALTH, Incident
from replay.store import Store

DRILL_DOWN = 10  # affected partitions with a timeline and explanations
DRILL_DOWN_CHANGES = 40  # newest changes per partition in its timeline
EXPLAINED_MOVES = 5  # newest leader changes explained per partition

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
figure { margin: 1em 0; } figcaption { color: #444; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
.verdict-fail { color: #b00; font-weight: bold; } .verdict-pass { color: #070; }
"""


def _ms(ms: int) -> str:
    return times.iso(ms)


def _duration(ms: int) -> str:
    s = ms / 1000
    return f"{s:.1f} s" if s < 120 else (f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h")


def _axis(times: tuple[int, ...]) -> list[str]:
    return [_ms(t) for t in times]


def summary(inc: Incident, checks: dict[str, Any] | None) -> list[str]:
    """The summary in words, one sentence per line."""
    a, b, h = inc.a, inc.b, inc.health
    scope = f"topic {inc.topic}" if inc.topic else "all topics"
    lines = [f"Between {_ms(a.event_time_ms)} (seq {a.seq}) and {_ms(b.event_time_ms)} (seq {b.seq}), {scope}: "
             f"{inc.events:,} events ({', '.join(f'{n:,} {k}' for k, n in inc.kinds.items()) or 'none'})."]
    if inc.affected_count:
        worst = inc.affected[0]
        lines.append(
            f"{inc.affected_count:,} partitions were offline, under-replicated or under min ISR at some time; "
            f"peaks: {max(h.values['offline']):,} offline, {max(h.values['under_replicated']):,} under-replicated, "
            f"{max(h.values['under_min_isr']):,} under min ISR. The worst, {worst['topic']}-{worst['partition']}, "
            f"was offline for {_duration(worst['offline_ms'])} and under min ISR for "
            f"{_duration(worst['under_min_isr_ms'])}.")
    else:
        lines.append("No partition was offline, under-replicated or under min ISR.")
    lines.append(f"At the end: {h.at_end['offline']:,} offline, {h.at_end['under_replicated']:,} under-replicated, "
                 f"{h.at_end['under_min_isr']:,} under min ISR, {h.at_end['at_min_isr']:,} at min ISR.")
    if inc.controllers:
        moves = ", ".join(f"{c['leader']} (epoch {c['epoch']}) at {_ms(c['time'])}" for c in inc.controllers[:5])
        more = f" and {len(inc.controllers) - 5} more" if len(inc.controllers) > 5 else ""
        lines.append(f"The active controller changed {len(inc.controllers)} times: to {moves}{more}.")
    else:
        lines.append("The active controller did not change.")
    if inc.elections["totals"]:
        lines.append("Leader elections: " + ", ".join(f"{n:,} {k.lower()}" for k, n in inc.elections["totals"].items())
                     + ".")
    if inc.reassignment_count:
        outcomes = {o: sum(1 for r in inc.reassignments if r["outcome"] == o) for o in ("completed", "cancelled", "in flight")}
        lines.append(f"{inc.reassignment_count:,} reassignments ran in the window (of the {len(inc.reassignments)} "
                     f"longest: " + ", ".join(f"{n} {o}" for o, n in outcomes.items()) + ").")
    if checks is None:
        lines.append("Invariants: not checked (give --check-json from `ctrlaudit check --json` or --run-checks).")
    else:
        failed = [i["name"] for i in checks["invariants"] if i["status"] == "fail"]
        lines.append(f"Invariants: {len(checks['invariants']) - len(failed)} of {len(checks['invariants'])} hold"
                     + (f"; violated: {', '.join(failed)}." if failed else "."))
    if checks is not None:
        n, total = data_loss_totals(checks)
        if n:
            lines.append(f"Unclean elections lost committed records, as the offset samples show: {n:,} election(s), "
                         f"{total:,} records in all (whole checked history; the worst in the window are listed "
                         f"under Invariants).")
    lines.append(b.describe().capitalize() + ".")
    return lines


DATA_LOSS_RULE = "unclean_election_data_loss"


def data_loss_totals(checks: dict[str, Any]) -> tuple[int, int]:
    """(unclean elections with measured loss, records lost in all) of a check report."""
    for inv in checks.get("invariants", []):
        if inv["name"] == "high_watermark_monotonic":
            return inv["rules"].get(DATA_LOSS_RULE, 0), inv.get("magnitude_by_rule", {}).get(DATA_LOSS_RULE, 0)
    return 0, 0


def data_loss_in_window(inc: Incident, checks: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The check report's measured data losses (its worst few) whose election lies in the window."""
    out = []
    for inv in (checks or {}).get("invariants", []):
        for x in inv.get("allowed_examples", []):
            ev = x.get("event") or {}
            if x.get("rule") == DATA_LOSS_RULE and inc.a.seq < x["seq"] <= inc.b.seq \
                    and ev.get("event_time_ms") is not None:
                out.append({"seq": x["seq"], "time": ev["event_time_ms"], "records": x.get("magnitude") or 0,
                            "partition": ev.get("partition", ""), "actual": x.get("actual", "")})
    return out


def _vlines(times: list[int], color: str, dash: str) -> list[dict[str, Any]]:
    """Vertical lines as one shapes list (fig.add_vline re-validates every shape on each call:
    quadratic, 29 s for 250 lines)."""
    return [{"type": "line", "xref": "x", "yref": "paper", "x0": _ms(t), "x1": _ms(t), "y0": 0, "y1": 1,
             "line": {"color": color, "dash": dash, "width": 1}} for t in times]


def _figure(fig_id: str, title: str, fig, caption: str, counts: dict[str, Any]) -> str:
    attrs = " ".join(f'data-{k.replace("_", "-")}="{html.escape(str(v))}"' for k, v in counts.items())
    fig.update_layout(title=title, height=fig.layout.height or 360, margin={"l": 60, "r": 20, "t": 50, "b": 40},
                      template="plotly_white", legend={"orientation": "h"})
    div = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"{fig_id}-plot",
                      config={"displaylogo": False, "responsive": True})
    return (f'<figure id="{fig_id}" class="plot" {attrs}>{div}'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def violations_in_window(inc: Incident, checks: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The check report's examples whose event lies in the window."""
    out = []
    for inv in (checks or {}).get("invariants", []):
        for x in inv.get("examples", []):
            ev = x.get("event") or {}
            if inc.a.seq < x["seq"] <= inc.b.seq and ev.get("event_time_ms") is not None:
                out.append({"invariant": inv["name"], "seq": x["seq"], "time": ev["event_time_ms"],
                            "evidence": f"{inv['name']} at seq {x['seq']}: {x.get('rule')}: expected {x.get('expected')}, "
                                        f"actual {x.get('actual')} {ev.get('partition', '')} {ev.get('change', '')}"})
    return out


def render(store: Store, inc: Incident, checks: dict[str, Any] | None = None) -> str:
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs

    x = _axis(inc.health.times)
    h = inc.health
    parts = []
    fig = go.Figure([go.Scatter(x=x, y=h.values[n], name=n.replace("_", " "), mode="lines", line_shape="hv")
                     for n in HEALTH])
    bad = violations_in_window(inc, checks)
    fig.update_layout(shapes=_vlines([v["time"] for v in bad], "red", "dot"))
    if bad:
        fig.add_trace(go.Scatter(x=[_ms(v["time"]) for v in bad], y=[0] * len(bad), mode="markers",
                                 marker={"color": "red", "symbol": "x", "size": 10}, name="invariant violation",
                                 text=[v["evidence"] for v in bad], hoverinfo="text"))
    lost = data_loss_in_window(inc, checks)
    if lost:
        fig.add_trace(go.Scatter(x=[_ms(v["time"]) for v in lost], y=[0] * len(lost), mode="markers",
                                 marker={"color": "darkorange", "symbol": "diamond", "size": 11},
                                 name="committed records lost (unclean election)",
                                 text=[f"{v['partition']}: {v['records']:,} committed records lost" for v in lost],
                                 hoverinfo="text"))
    peaks = {f"peak_{n}": max(h.values[n]) for n in HEALTH} | {f"end_{n}": h.at_end[n] for n in HEALTH}
    parts.append(_figure("health", "Partition health (maximum per time bucket)", fig,
                         "Peaks: " + ", ".join(f"{n.replace('_', ' ')} {peaks['peak_' + n]}" for n in HEALTH)
                         + ". At the end: " + ", ".join(f"{n.replace('_', ' ')} {h.at_end[n]}" for n in HEALTH)
                         + f". Invariant violations marked: {len(bad)}.", peaks | {"violations": len(bad)}))

    fig = go.Figure([go.Scatter(x=x, y=v, name=f"broker {k}", mode="lines", line_shape="hv")
                     for k, v in inc.leaders.values.items()])
    parts.append(_figure("leaders", "Leaders per broker", fig,
                         "Leaders at the end: " + ", ".join(f"broker {k}: {n}" for k, n in inc.leaders.at_end.items()),
                         {"brokers": len(inc.leaders.values), "leaders_at_end": sum(inc.leaders.at_end.values())}))

    colors = {"unfenced": "#2a9d8f", "fenced": "#e76f51", "controlled shutdown": "#e9c46a"}
    fig = go.Figure()
    for state, color in colors.items():
        segs = [s for s in inc.brokers if s["state"] == state]
        fig.add_trace(go.Bar(y=[f"broker {s['broker']}" for s in segs], x=[max(s["end"] - s["start"], 1) for s in segs],
                             base=[_ms(s["start"]) for s in segs], orientation="h", name=state,
                             marker_color=color))
    fig.update_layout(shapes=_vlines([c["time"] for c in inc.controllers], "#555", "dash"))
    fig.update_xaxes(type="date")
    fenced = sum(1 for s in inc.brokers if s["state"] == "fenced")
    parts.append(_figure("brokers", "Broker registration and fencing (dashed: controller changes)", fig,
                         f"{len({s['broker'] for s in inc.brokers})} brokers, {fenced} fenced stretches, "
                         f"{len(inc.controllers)} controller changes.",
                         {"fenced_stretches": fenced, "controller_changes": len(inc.controllers)}))

    hm = inc.isr_heatmap
    fig = go.Figure(go.Heatmap(z=hm["z"], x=_axis(hm["times"]), y=hm["rows"], colorscale="RdYlGn",
                               colorbar={"title": "ISR size"}))
    fig.update_layout(height=max(300, 24 * len(hm["rows"]) + 120))
    fig.update_yaxes(type="category", dtick=1)
    parts.append(_figure("isr", "ISR size of the most affected partitions (smallest per bucket)", fig,
                         f"{len(hm['rows'])} partitions of {inc.affected_count} affected.",
                         {"rows": len(hm["rows"]), "affected": inc.affected_count}))

    outcome_colors = {"completed": "#2a9d8f", "cancelled": "#e76f51", "in flight": "#264653", "ended": "#999"}
    fig = go.Figure()
    for outcome, color in outcome_colors.items():
        bars = [r for r in inc.reassignments if r["outcome"] == outcome]
        fig.add_trace(go.Bar(y=[r["partition"] for r in bars], x=[max(r["end"] - r["start"], 1) for r in bars],
                             base=[_ms(r["start"]) for r in bars], orientation="h", name=outcome, marker_color=color))
    fig.update_xaxes(type="date")
    fig.update_yaxes(type="category", dtick=1)
    fig.update_layout(height=max(300, 18 * len(inc.reassignments) + 140))
    parts.append(_figure("reassignments", "Reassignments, start to completion or cancellation", fig,
                         f"{inc.reassignment_count} reassignments"
                         + (f" (the {len(inc.reassignments)} longest drawn)" if inc.reassignment_count > len(inc.reassignments) else "")
                         + ".", {"reassignments": inc.reassignment_count}))

    ex = _axis(inc.elections["times"])
    fig = go.Figure([go.Bar(x=ex, y=v, name=k) for k, v in inc.elections["counts"].items()])
    fig.update_layout(barmode="stack")
    totals = inc.elections["totals"]
    parts.append(_figure("elections", "Leader elections by type", fig,
                         ", ".join(f"{k}: {n}" for k, n in totals.items()) or "No elections.",
                         {"elections": sum(totals.values())} | {f"election_{k.lower()}": n for k, n in totals.items()}))

    return _page(inc, checks, parts, bad, lost, _drill_down(store, inc), get_plotlyjs())


def _drill_down(store: Store, inc: Incident) -> str:
    out = []
    for x in inc.affected[:DRILL_DOWN]:
        t, p = x["topic"], x["partition"]
        tl = changes.timeline(store, inc.b, t, p, since_seq=inc.a.seq + 1)
        shown = type(tl)(tl.point, tl.topic, tl.partition, tl.changes[-DRILL_DOWN_CHANGES:])
        moves = [c for c in tl.changes if "LEADER" in c.changes][-EXPLAINED_MOVES:]
        explained = "".join(f"<pre>{html.escape(formats.explain_text(changes.explain(store, seq=c.seq, cluster_id=inc.a.cluster_id)))}</pre>"
                            for c in moves)
        out.append(f'<details class="partition" data-partition="{html.escape(t)}-{p}"><summary>{html.escape(t)}-{p}: '
                   f"offline {_duration(x['offline_ms'])}, under min ISR {_duration(x['under_min_isr_ms'])}, "
                   f"under-replicated {_duration(x['under_replicated_ms'])}, {len(tl.changes)} changes</summary>"
                   f"<pre>{html.escape(formats.timeline_text(shown))}</pre>"
                   f"<h4>Leader changes explained ({len(moves)} newest)</h4>{explained}</details>")
    return "".join(out) or "<p>No affected partitions.</p>"


def _page(inc: Incident, checks, parts: list[str], bad: list[dict[str, Any]], lost: list[dict[str, Any]], drill: str,
          plotlyjs: str) -> str:
    verdicts = ""
    if checks is not None:
        rows = "".join(f'<tr><td>{html.escape(i["name"])}</td><td class="verdict-{"fail" if i["status"] == "fail" else "pass"}">'
                       f'{html.escape(i["status"])}</td><td>{i["violations"]}</td><td>{i["allowed"]}</td></tr>'
                       for i in checks["invariants"])
        evidence = "".join(f"<li>{_ms(v['time'])}: {html.escape(v['evidence'])}</li>" for v in bad)
        verdicts = (f'<h2>Invariants</h2><table id="verdicts"><tr><th>invariant</th><th>verdict</th><th>violations</th>'
                    f"<th>allowed</th></tr>{rows}</table><ul id=\"evidence\">{evidence}</ul>")
        if lost:
            loss_rows = "".join(f'<tr><td>{_ms(v["time"])}</td><td>{html.escape(str(v["partition"]))}</td>'
                                f'<td>{v["records"]:,}</td><td>{html.escape(str(v["actual"]))}</td></tr>' for v in lost)
            verdicts += ('<h3>Committed records lost in unclean elections (allowed: the topic allows them)</h3>'
                         '<table id="data-loss"><tr><th>time</th><th>partition</th><th>records lost</th>'
                         f"<th>evidence</th></tr>{loss_rows}</table>")
    title = f"ctrlaudit incident report: {_ms(inc.a.event_time_ms)} to {_ms(inc.b.event_time_ms)}"
    words = "".join(f"<li>{html.escape(s)}</li>" for s in summary(inc, checks))
    meta = json.dumps({"cluster": inc.a.cluster_id, "from_seq": inc.a.seq, "to_seq": inc.b.seq})
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_STYLE}</style><script>{plotlyjs}</script></head><body>"
            f'<h1>{html.escape(title)}</h1><p>cluster {html.escape(inc.a.cluster_id)}</p>'
            f'<script type="application/json" id="report-window">{meta}</script>'
            f'<h2>Summary</h2><ul id="summary">{words}</ul><h2>Over time</h2>{"".join(parts)}{verdicts}'
            f'<h2>Affected partitions (the {min(DRILL_DOWN, inc.affected_count)} worst)</h2>'
            f'<div id="drill-down">{drill}</div></body></html>')
