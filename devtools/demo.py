"""`make demo`: the whole loop on the embedded default, through the real CLI.

a signing key -> simulate a controller history, signed -> verify it against the public key -> load it into
DuckDB -> state as of a point, a diff, one partition's timeline, one explained change -> the invariant check
-> one event proven to someone who has only the public key. Everything lands in demo-out/sim/, and the demo
ends with the commands to try next on it.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

OUT = Path("demo-out")
CLI = [sys.executable, "-m", "ctrlaudit"]


def step(title: str, *args: str, check: bool = True) -> str:
    print(f"\n\033[1m$ ctrlaudit {' '.join(args)}\033[0m   # {title}", flush=True)
    done = subprocess.run([*CLI, *args], text=True, capture_output=True)
    print(done.stdout, end="")
    if done.stderr:
        print(done.stderr, end="", file=sys.stderr)
    if check and done.returncode != 0:
        raise SystemExit(f"demo step failed with exit code {done.returncode}")
    return done.stdout


def fresh_folder(name: str) -> Path:
    """demo-out/<name>/: each demo writes its own folder, so one demo never deletes another's output; its own
    previous run is replaced, and the demo says so."""
    out = OUT / name
    if out.exists():
        print(f"replacing {out}/ (this demo's previous run)", flush=True)
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out


def _shown(path: Path) -> str:
    """A path as the user would type it from where they ran the demo."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def demo_key(out: Path) -> tuple[Path, Path]:
    """A signing key for the demo's archive (the private key, the public key an auditor is given)."""
    key = out / "demo.key"
    step("a signing key: the private half signs the archive, the public half is all an auditor needs",
         "keygen", "demo.ctrlaudit.example/archive", "--out", str(key))
    return key, key.with_name(key.name + ".pub")


def prove_one(archive: Path, public: Path, out: Path, seq: int) -> Path:
    """One event proven from the archive, and the proof checked with nothing but the public key."""
    proof = out / f"seq-{seq}.proof"
    step(f"prove one event (seq {seq}): the event, its Merkle audit path and the signed checkpoint, about 1 KB",
         "prove", str(archive), "--seq", str(seq), "--trusted-key", str(public), "--out", str(proof))
    step("what an auditor runs on the proof alone", "verify-proof", str(proof), "--trusted-key", str(public))
    return proof


def hand_over(out: Path, store: Path, topic: str, partition: int, offset: int,
              proof: tuple[Path, Path] | None = None) -> list[str]:
    """Print, and return, the commands to try next on this demo's output, ready to paste; `proof`: a proof and the
    public key it is checked with."""
    where = shlex.quote(_shown(store))
    commands = [
        f"export CTRLAUDIT_STORE={where}",
        f"ctrlaudit timeline --topic {topic} --partition {partition}",
        f"ctrlaudit explain --topic {topic} --partition {partition} --last-leader-change",
        f"ctrlaudit state --topic {topic} --offset {offset}",
        f"ctrlaudit check {where} --junit {shlex.quote(_shown(out / 'check.xml'))} --force",
    ]
    if proof is not None:
        commands.append(f"ctrlaudit verify-proof {shlex.quote(_shown(proof[0]))} --trusted-key "
                        f"{shlex.quote(_shown(proof[1]))}")
    venv = "" if os.environ.get("VIRTUAL_ENV") else " (first `. .venv/bin/activate`, or call .venv/bin/ctrlaudit)"
    print(f"\nEverything is in {_shown(out)}/. Try next{venv}:\n")
    print("\n".join(f"  {c}" for c in commands))
    return commands


def _first_topic(store: str) -> str:
    """The first topic alive at the end of the history (the simulator creates and deletes topics)."""
    done = subprocess.run([*CLI, "state", "--store", store, "--format", "json"], text=True, capture_output=True,
                          check=True)
    return json.loads(done.stdout)["partitions"][0]["topic"]


def main() -> None:
    out = fresh_folder("sim")
    store = str(out / "demo.duckdb")
    archive = str(out / "archive")
    key, public = demo_key(out)
    step("a deterministic history: 6 brokers on 3 racks, failures, reassignments, a failover; signed",
         "simulate", "--out", archive, "--seed", "7", "--brokers", "6", "--racks", "3",
         "--topics", "4", "--partitions", "6", "--events", "5000", "--signing-key", str(key))
    step("verify the archive against the public key: hash chain, manifests, every signed checkpoint",
         "verify", archive, "--trusted-key", str(public))
    step("load the archive into the embedded store", "load", archive, "--store", store,
         "--trusted-key", str(public))
    summary = json.loads(step("where the history ends (JSON; the describe layout follows)", "state", "--store", store,
                              "--format", "json", "--partition", "0", "--topic",
                              _first_topic(store)))
    last = summary["as_of"]["source_offset"]
    mid = last // 2
    topic = summary["partitions"][0]["topic"]
    step("the controller's view half-way, as kafka-topics --describe prints it",
         "state", "--store", store, "--offset", str(mid), "--topic", topic)
    step("under-replicated partitions at the end", "state", "--store", store, "--under-replicated")
    step("what changed in the second half", "diff", "--store", store, "--from-offset", str(mid),
         "--to-offset", str(last), "--topic", topic)
    step("one partition's history (newest 12 changes)", "timeline", "--store", store, "--topic", topic,
         "--partition", "0", "--limit", "12")
    step(f"why the leader of {topic}-0 last moved", "explain", "--store", store, "--topic", topic,
         "--partition", "0", "--last-leader-change")
    step("invariants over the whole history", "check", store, "--json", str(out / "check.json"), check=False)
    report = out / "incident.html"
    step("the incident report: summary, plots, drill-down per partition (one HTML file, no network needed)",
         "report", "--store", store, "--check-json", str(out / "check.json"), "--out", str(report))
    print(f"\nThe incident report: {report.resolve()}")
    proof = prove_one(Path(archive), public, out, 2500)
    hand_over(out, Path(store), topic, 0, mid, (proof, public))


if __name__ == "__main__":
    main()
