"""Merkle tree benchmark (not a test): the RFC 9162 tree of schemas.archive.merkle over N event hashes.

    .venv/bin/python bench/merkle.py --leaves 10000000 --record

Measures, over the same N random 32-byte "event hashes":
  - hashing the N leaves with hashlib alone (SHA-256(0x00 || leaf), the floor any tree over them pays), and the
    N - 1 node hashes of the tree with hashlib alone, inputs already built;
  - the root by CompactTree.extend (in memory, what capture keeps), and building the FileHashStore (every perfect
    subtree's root on disk, ~2N hashes);
  - at size N, from the file store: inclusion and consistency proof generation and verification at random indexes
    and sizes, and proof sizes in hashes.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.results import append, machine  # noqa: E402
from schemas.archive.merkle import (  # noqa: E402
    CompactTree,
    leaf_hashes,
    verify_consistency,
    verify_inclusion,
)
from schemas.archive.merkle_store import FileHashStore  # noqa: E402

CHUNK = 1 << 16


def make_leaves(n: int, seed: int) -> list[list[bytes]]:
    rnd = random.Random(seed)
    chunks = []
    for lo in range(0, n, CHUNK):
        k = min(CHUNK, n - lo)
        blob = rnd.randbytes(32 * k)
        chunks.append(list(map(blob.__getitem__, map(slice, range(0, 32 * k, 32), range(32, 32 * k + 1, 32)))))
    return chunks


def ms(xs: list[float]) -> str:
    xs = sorted(xs)
    return (f"median {statistics.median(xs) * 1e3:.3f} ms, p99 {xs[int(len(xs) * 0.99)] * 1e3:.3f} ms, "
            f"max {xs[-1] * 1e3:.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaves", type=int, default=10_000_000)
    ap.add_argument("--proofs", type=int, default=1000, help="random proofs of each kind")
    ap.add_argument("--dir", default=None, help="where the file store goes (default: a temporary directory)")
    ap.add_argument("--record", action="store_true", help="append the figures to bench/RESULTS.md")
    args = ap.parse_args()
    n = args.leaves
    load0 = os.getloadavg()
    started = datetime.now(timezone.utc)
    out: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        out.append(line)

    chunks = make_leaves(n, 1)
    sha, digest = hashlib.sha256, type(hashlib.sha256()).digest

    t = time.perf_counter()
    hashed = [leaf_hashes(c) for c in chunks]
    t_leaves = time.perf_counter() - t
    t = time.perf_counter()
    for c in chunks:
        [sha(b"\x00" + x).digest() for x in c]
    t_leaves_loop = time.perf_counter() - t
    # the n - 1 node hashes alone: 65-byte inputs built beforehand, one chunk at a time
    t_nodes = 0.0
    for c in hashed:
        inputs = [b"\x01" + c[i] + c[i + 1] for i in range(0, len(c) - 1, 2)]
        t = time.perf_counter()
        list(map(digest, map(sha, inputs)))
        t_nodes += time.perf_counter() - t
    t_nodes *= (n - 1) / max(1, n // 2)
    del hashed
    say(f"hashlib alone, {n:,} leaf hashes: {t_leaves:.2f} s by map(), {t_leaves_loop:.2f} s by a comprehension; "
        f"{n - 1:,} node hashes (inputs prebuilt, scaled from {n // 2:,}): {t_nodes:.2f} s")

    t = time.perf_counter()
    compact = CompactTree()
    for c in chunks:
        compact.extend(leaf_hashes(c))
    root = compact.root()
    t_root = time.perf_counter() - t
    say(f"root over {n:,} leaves (CompactTree.extend by chunks of {CHUNK:,}, leaf hashing included): {t_root:.2f} s "
        f"= {t_root / t_leaves:.2f}x the leaf hashes alone, {t_root / (t_leaves + t_nodes):.2f}x leaf + node hashes "
        f"alone; {n / t_root:,.0f} leaves/s")

    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="merkle-bench-"))
    try:
        t = time.perf_counter()
        with FileHashStore(directory / "tree") as store:
            for c in chunks:
                store.extend(leaf_hashes(c))
            store.sync()
            t_store = time.perf_counter() - t
            on_disk = sum(f.stat().st_size for f in (directory / "tree").iterdir())
            assert store.root() == root
            say(f"file store of {n:,} leaves built and fsynced: {t_store:.2f} s ({on_disk / 2**20:,.0f} MiB, "
                f"{on_disk // 32:,} hashes)")
            leaf_of = {}
            rnd = random.Random(2)
            gen_i, ver_i, size_i, gen_c, ver_c, size_c, gen_r = [], [], [], [], [], [], []
            for _ in range(args.proofs):
                size = n if rnd.random() < 0.5 else rnd.randint(1, n)
                index = rnd.randrange(size)
                leaf = leaf_of.setdefault(index, store.node(0, index))
                t = time.perf_counter()
                r = store.root(size)
                gen_r.append(time.perf_counter() - t)
                t = time.perf_counter()
                proof = store.inclusion_proof(index, size)
                gen_i.append(time.perf_counter() - t)
                t = time.perf_counter()
                verify_inclusion(leaf, index, size, proof, r)
                ver_i.append(time.perf_counter() - t)
                size_i.append(len(proof))
                size1 = rnd.randint(1, size)
                r1 = store.root(size1)
                t = time.perf_counter()
                proof = store.consistency_proof(size1, size)
                gen_c.append(time.perf_counter() - t)
                t = time.perf_counter()
                verify_consistency(size1, size, r1, r, proof)
                ver_c.append(time.perf_counter() - t)
                size_c.append(len(proof))
        say(f"root at a random size from the store: {ms(gen_r)}")
        say(f"inclusion proof, {args.proofs} random (index, size <= {n:,}): generate {ms(gen_i)}; verify {ms(ver_i)}; "
            f"{statistics.mean(size_i):.1f} hashes on average, {max(size_i)} at most")
        say(f"consistency proof, {args.proofs} random (size1 <= size2 <= {n:,}): generate {ms(gen_c)}; "
            f"verify {ms(ver_c)}; {statistics.mean(size_c):.1f} hashes on average, {max(size_c)} at most")
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
    load1 = os.getloadavg()
    say(f"load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end (1-minute)")
    if args.record:
        cmd = "PYTHONPATH=. .venv/bin/python bench/merkle.py " + " ".join(sys.argv[1:])
        body = "\n".join(f"- {line}" for line in out)
        append(f"\n### merkle — {started:%Y-%m-%d %H:%M} UTC — {machine()}\n\n`{cmd}`\n\n{body}\n")


if __name__ == "__main__":
    main()
