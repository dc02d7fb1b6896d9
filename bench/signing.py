"""Signed archives benchmark (not a test): what signing costs the writer, and what checking signatures costs verify.

    .venv/bin/python bench/signing.py --events 2000000 --rounds 3 --record

Simulates one history of N events twice into a temporary directory, once unsigned and once signed (a checkpoint at
every finished file: the writer's Merkle tree kept on disk, an Ed25519 signature per file), and reads the signed
archive with the one verified read twice per round: `verify` as without a key, and with the log's key (every
checkpoint's root recomputed from the events and its signature checked) — what `ctrlaudit verify [--trusted-key]`
runs. Rounds alternate the two so that the machine's drift falls on both; medians are reported.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.results import append, machine  # noqa: E402
from schemas.archive.note import Signer, Verifier, generate_key  # noqa: E402
from schemas.archive.signatures import Trust  # noqa: E402
from schemas.archive.signed import list_checkpoints  # noqa: E402
from schemas.archive.verified import verify  # noqa: E402
from services.simulator import SimConfig, simulate_to_archive  # noqa: E402


def timed(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    started = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--per-file", type=int, default=100_000, help="events per archive file (a checkpoint each)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append the figures to bench/RESULTS.md")
    args = ap.parse_args()
    skey, vkey = generate_key("bench.example/ctrlaudit")
    signer, trust = Signer.parse(skey), Trust((Verifier.parse(vkey),))
    config = SimConfig(seed=11, events=args.events, cluster_id="bench-signing")
    write = {"unsigned": [], "signed": []}
    read = {"verify": [], "verify --trusted-key": []}
    with tempfile.TemporaryDirectory(prefix="ctrlaudit-bench-signing-") as tmp:
        for r in range(args.rounds):
            for kind in (("unsigned", "signed") if r % 2 == 0 else ("signed", "unsigned")):
                out = Path(tmp) / kind
                shutil.rmtree(out, ignore_errors=True)
                signers = [signer] if kind == "signed" else []
                write[kind].append(timed(simulate_to_archive, out, config, max_events_per_file=args.per_file,
                                         signers=signers))
            archive = Path(tmp) / "signed"
            checkpoints = len(list_checkpoints(archive / config.cluster))
            for kind in (("verify", "verify --trusted-key") if r % 2 == 0 else ("verify --trusted-key", "verify")):
                t = trust if kind != "verify" else None
                read[kind].append(timed(verify, [archive], trust=t))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in {**write, **read}.items()),
                  flush=True)
    med = {k: statistics.median(v) for k, v in {**write, **read}.items()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    lines = [
        f"### signing — {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit}, {machine()}",
        "",
        f"`.venv/bin/python bench/signing.py --events {args.events} --per-file {args.per_file} --rounds "
        f"{args.rounds}` — {args.events:,} simulated events, {checkpoints} checkpoints; medians of {args.rounds} "
        "alternating rounds",
        "",
        "| | seconds | events/s | ratio |",
        "|---|---:|---:|---:|",
        f"| simulate + write, unsigned | {med['unsigned']:.2f} | {args.events / med['unsigned']:,.0f} | 1.00 |",
        f"| simulate + write, signed | {med['signed']:.2f} | {args.events / med['signed']:,.0f} | "
        f"{med['signed'] / med['unsigned']:.3f} |",
        f"| verify | {med['verify']:.2f} | {args.events / med['verify']:,.0f} | 1.00 |",
        f"| verify --trusted-key | {med['verify --trusted-key']:.2f} | "
        f"{args.events / med['verify --trusted-key']:,.0f} | {med['verify --trusted-key'] / med['verify']:.3f} |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.record:
        append("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
