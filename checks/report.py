"""Jepsen-style results: per invariant valid?/count, the worst few examples with evidence, the
allowances that applied; rendered for the terminal (rich), as JSON and as JUnit XML.
"""
from __future__ import annotations

import sys

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from checks.anchor_table import as_json
from checks.catalog import BY_NAME, Deadlines, Invariant, deadline_ms
from checks.deadlines import show_duration
from checks.findings import Counts, Findings
from replay.gaps import CaptureStretch
from schemas import times
from schemas.archive.verified import Gap

WORST = 5  # examples per invariant (Jepsen keeps 8-32; the JSON keeps the same few)

PASS, FAIL, ALLOWED, NO_DATA = "pass", "fail", "allowed", "no data"
# a bounded-liveness check (severity warning) with obligations met late: the exit code counts it only with
# `--fail-on warning` (FAIL_ON: the least severity that fails the check)
WARN = "warning"
FAIL_ON = ("error", "warning")


@dataclass
class InvariantResult:
    invariant: Invariant
    status: str
    violations: int
    allowed: int
    rules: dict[str, int]
    allowances: dict[str, int]
    examples: list[dict[str, Any]]
    allowed_examples: list[dict[str, Any]]
    missing_data: list[str] = field(default_factory=list)
    in_gaps: int = 0  # findings left without evidence by a gap: "no data", never violations
    magnitudes: dict[str, int] = field(default_factory=dict)  # rule -> sum of its findings' magnitudes
    # bounded liveness: obligations open at the end of the history (never violations), the worst few, and the
    # deadline in force (ms)
    pending: int = 0
    pending_examples: list[dict[str, Any]] = field(default_factory=list)
    deadline_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        inv = self.invariant
        return {
            "name": inv.name, "anchor": inv.anchor, "tla": inv.tla, "anchors": as_json(inv),
            "statement": inv.statement,
            "data": inv.data, "severity": inv.severity, "status": self.status, "valid": self.status != FAIL,
            "violations": self.violations, "allowed": self.allowed, "rules": self.rules,
            "allowances_applied": self.allowances, "missing_data": self.missing_data,
            "no_data_in_gaps": self.in_gaps, "magnitude_by_rule": self.magnitudes,
            "examples": self.examples, "allowed_examples": self.allowed_examples,
            **({"deadline_ms": self.deadline_ms, "pending": self.pending, "pending_examples": self.pending_examples}
               if self.deadline_ms is not None else {}),
        }


@dataclass
class Report:
    engine: str
    inputs: list[str]
    events: int
    clusters: list[str]
    allow: list[str]
    results: list[InvariantResult]
    seconds: float = 0.0
    # per cluster (checks.inputs.chain_summary): the seq range judged and the chain's hash at its end (what
    # binds the verdict to this history), what the chain was verified to, the stretches not verified data
    chains: list[dict[str, Any]] = field(default_factory=list)
    fail_on: str = "error"  # FAIL_ON: "warning" makes the bounded-liveness checks' late obligations fail it

    @property
    def valid(self) -> bool:
        failing = (FAIL, WARN) if self.fail_on == "warning" else (FAIL,)
        return all(r.status not in failing for r in self.results)

    @property
    def warnings(self) -> int:
        """Obligations met later than their deadline (the bounded-liveness checks' violations)."""
        return sum(r.violations for r in self.results if r.status == WARN)

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid, "engine": self.engine, "inputs": self.inputs, "events": self.events,
            "clusters": self.clusters, "allowed_by_flag": self.allow, "seconds": round(self.seconds, 3),
            "fail_on": self.fail_on, "warnings": self.warnings,
            "summary": {r.invariant.name: r.status for r in self.results},
            "chains": self.chains,
            "invariants": [r.to_json() for r in self.results],
        }


def build(
    engine_name: str,
    inputs: list[str],
    kind_counts: dict[str, int],
    clusters: list[str],
    names: Sequence[str],
    found: Findings,
    allow: Sequence[str],
    fetch: Callable[[Iterable[tuple[str, int]]], dict[tuple[str, int], dict[str, Any]]],
    gaps: Sequence[Gap] = (),
    chains: Sequence[dict[str, Any]] = (),
    stretches: Sequence[tuple[str, CaptureStretch]] = (),
    first_changes: Callable[[Iterable[tuple[str, str, int, int]]], dict[tuple[str, str, int, int], int]] | None = None,
    deadlines: Deadlines = (),
    fail_on: str = "error",
) -> Report:
    """Condense the findings into a Report; `fetch` gives the evidence events by (cluster, seq).
    A finding of an invariant that judges history, whose evidence spans a gap in the chain, is "no data"; so
    is any finding whose evidence rests on one of `stretches` (cluster id, a stretch nobody read)."""
    found.judge(allow, gaps, [n for n in BY_NAME if BY_NAME[n].history], _resting_on(found, stretches, fetch, first_changes))
    chains = [dict(c, not_read=[s.describe() for cluster, s in stretches if cluster == c.get("cluster_id")])
              if any(cluster == c.get("cluster_id") for cluster, _ in stretches) else c for c in chains]
    counts, worst = found.counts(), found.worst(WORST)
    keys: set[tuple[str, int]] = set()
    for picked in worst.values():
        for v in picked:
            keys.add((v["cluster_id"], v["seq"]))
            if v["related_seq"] is not None:
                keys.add((v["cluster_id"], v["related_seq"]))
    evidence = fetch(keys)

    results = []
    for name in names:
        inv, c = BY_NAME[name], counts.get(name) or Counts()
        missing = [k for k in inv.needs if not kind_counts.get(k)]
        if c.in_gaps:
            missing.append(f"{c.in_gaps} finding(s) rest on a gap in the history")
        missing.extend(f"{rule} ({n})" for rule, n in c.no_data.items())
        breached = FAIL if inv.severity == "error" else WARN
        status = breached if c.violations else ALLOWED if c.allowed else NO_DATA if missing else PASS
        results.append(InvariantResult(
            invariant=inv, status=status, violations=c.violations, allowed=c.allowed,
            rules=c.rules, allowances=c.allowances,
            examples=[_example(v, evidence) for v in worst.get((name, "violated"), [])],
            allowed_examples=[_example(v, evidence) for v in worst.get((name, "allowed"), [])],
            missing_data=missing, in_gaps=c.in_gaps, magnitudes=c.magnitudes, pending=c.pending,
            pending_examples=[_example(v, evidence) for v in worst.get((name, "pending"), [])],
            deadline_ms=deadline_ms(name, deadlines) if inv.deadline else None,
        ))
    return Report(engine_name, inputs, sum(kind_counts.values()), clusters, list(allow), results,
                  chains=list(chains), fail_on=fail_on)


def _resting_on(found: Findings, stretches: Sequence[tuple[str, CaptureStretch]],
                fetch: Callable[[Iterable[tuple[str, int]]], dict[tuple[str, int], dict[str, Any]]],
                first_changes: Callable[[Iterable[tuple[str, str, int, int]]], dict[tuple[str, str, int, int], int]]
                | None) -> list[tuple[str, int, int | None]]:
    """The violations whose evidence rests on a stretch nobody read that holds the finding's partition (a
    stretch of one partition's state holds no other's): a finding inside it, one that compares an event
    before it with one after it (related_seq), and one about its partition's first change after it, whose
    state before is the one last known before the stretch (every source's `before` is its normalizer's)."""
    if not stretches:
        return []
    found_in = found.overlapping([(c, s.from_seq, -1) for c, s in stretches])
    about = fetch({(c, seq) for c, seq, _ in found_in})
    held = [(cluster, seq, related, about.get((cluster, seq)) or {}, s) for cluster, seq, related in found_in
            for c, s in stretches if c == cluster and max(seq, related if related is not None else seq) > s.from_seq]
    held = [h for h in held if not h[4].partitions or (h[3].get("topic"), h[3].get("partition")) in h[4].partitions]
    # a whole stretch ends at the next event read, of any partition: each partition's first change after it
    wanted = {(h[0], h[3]["topic"], h[3]["partition"], h[4].gap_seq) for h in held
              if not h[4].partitions and h[3].get("kind") == "PartitionChange" and h[4].to_seq >= 0}
    first = first_changes(wanted) if first_changes is not None and wanted else {}
    out: dict[tuple[str, int, int | None], None] = {}
    for cluster, seq, related, event, s in held:
        lo = min(seq, seq if related is None else related)
        ends = s.to_seq if s.partitions or s.to_seq < 0 else first.get(
            (cluster, str(event.get("topic")), int(event.get("partition") or 0), s.gap_seq), s.to_seq)
        if s.to_seq < 0 or lo < s.to_seq or seq <= ends:
            out[(cluster, seq, related)] = None
    return list(out)


def _example(v: dict[str, Any], evidence: dict[tuple[str, int], dict[str, Any]]) -> dict[str, Any]:
    out = {k: v[k] for k in ("cluster_id", "seq", "related_seq", "rule", "expected", "actual", "magnitude")}
    if v["allowance"]:
        out["allowance"] = v["allowance"]
    out["event"] = _describe(evidence.get((v["cluster_id"], v["seq"])))
    if v["related_seq"] is not None:
        out["related_event"] = _describe(evidence.get((v["cluster_id"], v["related_seq"])))
    return out


_STATE = ("leader", "isr", "replicas", "adding", "removing", "elr", "leader_epoch", "partition_epoch", "recovery")


def _state(e: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    if not e.get(f"has_{'before' if prefix == 'b_' else 'after'}"):
        return None
    return {k: (list(e[prefix + k]) if isinstance(e[prefix + k], (list, tuple)) else e[prefix + k]) for k in _STATE}


def _describe(e: dict[str, Any] | None) -> dict[str, Any] | None:
    """The evidence for one event: identity, source position, and what it changed."""
    if e is None:
        return None
    out: dict[str, Any] = {
        "event_id": e["event_id"], "seq": e["seq"], "kind": e["kind"],
        "source": {"kind": e["source_kind"], "offset": e["source_offset"], "index": e["source_index"],
                   "node": e["source_node"], "file": e["source_file"]},
        "event_time_ms": e["event_time_ms"], "event_time": times.show(e["event_time_ms"]),
        "controller": e["controller_id"],
        "controller_epoch": e["controller_epoch"], "metadata_version": e["metadata_version"],
        "bootstrap": e["bootstrap"],
    }
    if e["kind"] in ("PartitionChange", "OffsetSample"):
        out["partition"] = f"{e['topic']}-{e['partition']}"
    if e["kind"] == "PartitionChange":
        before, after = _state(e, "b_"), _state(e, "a_")
        out["before"], out["after"] = before, after
        out["change"] = _diff(before, after)
        out["changes"] = list(e["changes"] or [])
        out["election"] = e["election"]
    elif e["kind"] == "BrokerChange":
        out["broker"] = {"id": e["broker_id"], "change": e["broker_change"]}
    elif e["kind"] == "ControllerChange":
        out["controller_change"] = {"leader": e["cc_leader"], "epoch": e["cc_epoch"]}
    elif e["kind"] == "ConfigChange":
        out["config"] = {"type": e["config_type"], "resource": e["config_resource"], "name": e["config_name"],
                         "value": e["config_value"]}
    elif e["kind"] == "OffsetSample":
        out["sample"] = {"hw": e["s_hw"], "leader": e["s_leader"]}
    return out


def _diff(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    if before is None and after is None:
        return ""
    if before is None:
        assert after is not None
        return "created " + ", ".join(f"{k}={after[k]}" for k in _STATE)
    if after is None:
        return "deleted"
    parts = [f"{k}: {before[k]} -> {after[k]}" for k in _STATE if before[k] != after[k]]
    return ", ".join(parts) or "no change"


# --- output ---------------------------------------------------------------------------------------

def junit_xml(report: Report) -> ET.ElementTree:
    """One <testcase> per invariant: <failure> on violations, <skipped> when the data is missing;
    allowed breaches are listed in <system-out> of a passing case."""
    failing = (FAIL, WARN) if report.fail_on == "warning" else (FAIL,)
    failures = sum(1 for r in report.results if r.status in failing)
    skipped = sum(1 for r in report.results if r.status == NO_DATA)
    suites = ET.Element("testsuites", name="ctrlaudit check", tests=str(len(report.results)),
                        failures=str(failures), errors="0", time=f"{report.seconds:.3f}")
    suite = ET.SubElement(suites, "testsuite", name=f"ctrlaudit.checks.{report.engine}",
                          tests=str(len(report.results)), failures=str(failures), errors="0",
                          skipped=str(skipped), time=f"{report.seconds:.3f}")
    props = ET.SubElement(suite, "properties")
    for k, v in (("engine", report.engine), ("events", report.events), ("inputs", " ".join(report.inputs)),
                 ("allow", " ".join(report.allow)), ("fail_on", report.fail_on), ("warnings", report.warnings)):
        ET.SubElement(props, "property", name=k, value=str(v))
    for r in report.results:
        case = ET.SubElement(suite, "testcase", classname=f"ctrlaudit.checks.{report.engine}",
                             name=r.invariant.name, time="0")
        if r.status == FAIL:
            fail = ET.SubElement(case, "failure", type="InvariantViolation",
                                 message=f"{r.violations} violation(s) of {r.invariant.name}: {r.invariant.statement}")
            fail.text = "\n".join(_example_line(x) for x in r.examples)
        elif r.status == WARN:
            # a warning: a failure only with --fail-on warning; otherwise said in the case's output, which a
            # CI's JUnit view shows beside a passing case
            text = (f"WARNING: {r.violations} obligation(s) of {r.invariant.name} met later than its deadline "
                    f"({_deadline(r)}): {r.invariant.statement}")
            if report.fail_on == "warning":
                fail = ET.SubElement(case, "failure", type="LivenessWarning", message=text)
                fail.text = "\n".join(_example_line(x) for x in r.examples)
            else:
                ET.SubElement(case, "system-err").text = text + "\n" + "\n".join(_example_line(x) for x in r.examples)
        elif r.status == NO_DATA:
            ET.SubElement(case, "skipped", message=f"no {', '.join(r.missing_data)} events in the history")
        if r.allowed or r.pending:
            out = ET.SubElement(case, "system-out")
            lines = []
            if r.allowed:
                lines.append(f"{r.allowed} allowed: " + "; ".join(f"{k} ({n})" for k, n in r.allowances.items()))
                lines.extend(_example_line(x) for x in r.allowed_examples)
            if r.pending:
                lines.append(f"{r.pending} pending (open at the end of the history, deadline {_deadline(r)})")
                lines.extend(_example_line(x) for x in r.pending_examples)
            out.text = "\n".join(lines)
    ET.indent(suites)
    return ET.ElementTree(suites)


def _deadline(r: InvariantResult) -> str:
    return show_duration(r.deadline_ms) if r.deadline_ms is not None else "none"


def _example_line(x: dict[str, Any]) -> str:
    ev = x.get("event") or {}
    src = ev.get("source") or {}
    where = f"{x['cluster_id']} seq {x['seq']}"
    if ev:
        where += (f" (event {ev['event_id'][:12]}, {times.show(ev.get('event_time_ms'))}, {src.get('kind')} offset "
                  f"{src.get('offset')}#{src.get('index')})")
    line = f"{where}: {x['rule']}: expected {x['expected']}; actual {x['actual']}"
    if ev.get("change"):
        line += f" [{ev['change']}]"
    if x.get("related_seq") is not None:
        line += f" (related seq {x['related_seq']})"
    return line


def print_report(report: Report, console: Any = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 120)  # not 80 in CI logs
    table = Table(title=f"ctrlaudit check — {report.events} events, {len(report.clusters)} cluster(s), "
                        f"engine {report.engine}", title_justify="left")
    for col in ("invariant", "status", "violations", "allowed", "statement"):
        table.add_column(col, overflow="fold")
    style = {PASS: "green", FAIL: "bold red", ALLOWED: "yellow", NO_DATA: "dim", WARN: "bold magenta"}
    for r in report.results:
        table.add_row(r.invariant.name, f"[{style[r.status]}]{r.status}[/]", str(r.violations), str(r.allowed),
                      r.invariant.statement)
    for c in report.chains:
        line = f"cluster {c['cluster_id']}: " + (
            f"chain verified to seq {c['verified_to']}" if c["verified_to"] == c["last_seq"]
            else f"chain verified only to seq {c['verified_to']} of {c['last_seq']}")
        console.print(line, markup=False, highlight=False)
        for g in c["gaps"]:
            console.print(f"  WARNING seq {g['from_seq']}..{g['to_seq']} not verified ({g['reason']}): "
                          "findings resting on it are reported as no data", markup=False, highlight=False)
    console.print(table)
    for r in report.results:
        if r.examples and r.status == WARN:
            console.print(f"[bold magenta]{r.invariant.name}[/]: WARNING {r.violations} obligation(s) met later "
                          f"than the deadline ({_deadline(r)}); worst:", highlight=False)
            for x in r.examples:
                console.print("  • " + _example_line(x), markup=False, highlight=False)
        elif r.examples:
            console.print(f"[bold red]{r.invariant.name}[/]: {r.violations} violation(s) "
                          f"({', '.join(f'{k} {n}' for k, n in r.rules.items())}); worst:")
            for x in r.examples:
                console.print("  • " + _example_line(x), markup=False, highlight=False)
        if r.pending:
            console.print(f"{r.invariant.name}: {r.pending} pending at the end of the history (deadline "
                          f"{_deadline(r)}; not violations)", markup=False, highlight=False)
        if r.allowances:
            console.print(f"[yellow]{r.invariant.name}[/]: allowed: "
                          + "; ".join(f"{k} ({n})" for k, n in r.allowances.items()), highlight=False)
    verdict = "[bold green]valid[/]" if report.valid else "[bold red]INVALID[/]"
    if report.warnings:
        verdict += (f", [bold magenta]{report.warnings} warning(s)[/]"
                    + (" (--fail-on warning)" if report.fail_on == "warning" else ""))
    console.print(f"{verdict} in {report.seconds:.2f} s")
