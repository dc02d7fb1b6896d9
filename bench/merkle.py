"""Merkle tree benchmark (not a test): the RFC 9162 tree of schemas.archive.merkle over N event hashes.

    .venv/bin/python bench/merkle.py --leaves 10000000 --record

Measures, over the same N random 32-byte "event hashes":
  - hashing the N leaves with hashlib alone (SHA-256(0x00 || leaf), the floor any tree over them pays), and the
    N - 1 node hashes of the tree with hashlib alone, inputs already built;
  - the root by CompactTree.extend (in memory; leaves hashed in Python, levels natively where built), and by
    CompactTree.extend_packed from the hashes as hex (packed_event_leaves: what the verified read and capture's
    signer run, natively where built), and building the FileHashStore (every perfect subtree's root on disk, ~2N
    hashes); --root-only stops there;
  - at size N, from the file store: inclusion and consistency proof generation and verification at random indexes
    and sizes, and proof sizes in hashes;
  - `ctrlaudit prove` and `ctrlaudit verify-proof` at size N through the functions the commands call
    (schemas.archive.prover.inclusion/consistency, schemas.archive.proofs.read_proof/verify_proof): the tree's first
    --proof-events leaves are the events of a real signed archive (simulated, one file an hour as the writer
    makes them), the others the random ones, and a checkpoint of all N is signed; a proof is generated from the
    verified archive (the event read from its file, the path from the store, the checkpoint opened, the proof
    checked before it is handed on, its JSON) and verified from its file, as the commands do;
  - with --archive DIR (a signed archive, e.g. `ctrlaudit simulate --events 10000000 --signing-key K`) and
    --trusted-key, `prove` end to end on it: the verified read of the whole archive, then the proof.
"""
from __future__ import annotations

import argparse
import gc
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
from schemas.archive.checkpoint import Checkpoint  # noqa: E402
from schemas.archive import merkle  # noqa: E402
from schemas.archive.merkle import (  # noqa: E402
    CompactTree,
    leaf_hashes,
    packed_event_leaves,
    verify_consistency,
    verify_inclusion,
)
from schemas.archive.merkle_store import FileHashStore  # noqa: E402
from schemas.archive.note import Signer, generate_key, sign_note  # noqa: E402
from schemas.archive.proofs import read_proof, verify_proof  # noqa: E402
from schemas.archive.prover import Found, VerifiedLog, consistency, inclusion, prove  # noqa: E402
from schemas.archive.signatures import SignedStatus, Trust  # noqa: E402
from schemas.archive.signed import load_verifiers, origin_of, write_checkpoint  # noqa: E402
from schemas.archive.verified import VerifiedRead  # noqa: E402
from services.simulator import SimConfig, simulate_to_archive  # noqa: E402

CHUNK = 1 << 16


class Clock:
    """Wall time and this process's CPU time: on a shared machine the CPU time is the figure that does not move with
    the other processes' load (the work is single-threaded), the wall time what a user would wait."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> Clock:
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c

    def __str__(self) -> str:
        return f"{self.cpu:.2f} s CPU ({self.wall:.2f} s wall)"


def make_leaves(n: int, seed: int) -> list[list[bytes]]:
    rnd = random.Random(seed)
    chunks = []
    for lo in range(0, n, CHUNK):
        k = min(CHUNK, n - lo)
        blob = rnd.randbytes(32 * k)
        chunks.append(list(map(blob.__getitem__, map(slice, range(0, 32 * k, 32), range(32, 32 * k + 1, 32)))))
    return chunks


def timed(fn, *args):  # type: ignore[no-untyped-def]
    """fn(*args) and the (wall, CPU) seconds it took."""
    w, c = time.perf_counter(), time.process_time()
    result = fn(*args)
    return result, (time.perf_counter() - w, time.process_time() - c)


def ms(xs: list[tuple[float, float]]) -> str:
    """Median, p99 and max of wall times, and the median and max CPU time."""
    wall, cpu = sorted(w for w, _ in xs), sorted(c for _, c in xs)
    return (f"median {statistics.median(wall) * 1e3:.3f} ms, p99 {wall[int(len(wall) * 0.99)] * 1e3:.3f} ms, "
            f"max {wall[-1] * 1e3:.3f} ms wall; median {statistics.median(cpu) * 1e3:.3f} ms, "
            f"max {cpu[-1] * 1e3:.3f} ms CPU")


def signed_archive(directory: Path, events: int) -> tuple[Path, Signer, list]:
    """A simulated archive signed by a new key: its cluster directory, the key, and (seq, event id, hash, file) of
    every event, read verified."""
    key = Signer.parse(generate_key("bench.example/log")[0])
    sim = simulate_to_archive(directory, SimConfig(seed=7, events=events), signers=[key], fsync=False)
    cluster = directory / sim.config.cluster
    read = VerifiedRead([cluster])
    files = {f.path: f for f in read.files}
    rows = []
    for path, table in read:
        rows += [(seq, eid, h, files[path]) for seq, eid, h in zip(table.column("seq").to_pylist(),
                                                                   table.column("event_id").to_pylist(),
                                                                   table.column("hash").to_pylist())]
    return cluster, key, rows


def proof_commands(store: FileHashStore, n: int, cluster: Path, key: Signer, rows: list, proofs: int,
                   scratch: Path) -> list[str]:
    """prove and verify-proof at size n, through the commands' functions (see the module doc): the lines to say."""
    trust = Trust((key.verifier,))
    write_checkpoint(cluster, Checkpoint(origin_of(cluster.name), n, store.root()), [key], fsync=False)
    log = VerifiedLog(cluster.name, [cluster], n, store, SignedStatus(cluster.name))
    rnd = random.Random(3)
    gen_i, ver_i, gen_c, ver_c, sizes = [], [], [], [], []
    for i in range(proofs):
        seq, event_id, h, file = rows[rnd.randrange(len(rows))]
        log.event = Found(seq, event_id, h, file)
        made, dt = timed(inclusion, log, trust, n)
        gen_i.append(dt)
        path = scratch / f"inclusion-{i % 10}.json"
        path.write_text(made.json)
        sizes.append(len(made.json.encode()))
        proven, dt = timed(lambda p: verify_proof(read_proof(p), trust), str(path))
        assert (proven.seq, proven.size) == (seq, n)
        ver_i.append(dt)
        m = rnd.randint(1, n - 1)
        older = ("bench.note", sign_note(Checkpoint(origin_of(cluster.name), m, store.root(m)).text, key))
        made, dt = timed(consistency, log, trust, older, n)
        gen_c.append(dt)
        path = scratch / f"consistency-{i % 10}.json"
        path.write_text(made.json)
        proven, dt = timed(lambda p: verify_proof(read_proof(p), trust), str(path))
        assert (proven.old_size, proven.size) == (m, n)
        ver_c.append(dt)
    files = sorted({r[3].manifest.count for r in rows})
    return [
        f"prove --seq (prover.inclusion on the verified archive: the event found in its file of {files[-1]:,} events "
        f"at most, the path from the store of {n:,}, the checkpoint opened, the proof checked, its JSON), "
        f"{proofs} random events: {ms(gen_i)}; proofs of {statistics.mean(sizes):,.0f} bytes on average, "
        f"{max(sizes):,} at most",
        f"verify-proof of those (read_proof + verify_proof: the file read and parsed strictly, the chain hash, the "
        f"path, the signature, the body decoded and compared): {ms(ver_i)}",
        f"prove --from --to (prover.consistency, a checkpoint note at a random size to the one of {n:,}): "
        f"{ms(gen_c)}; verify-proof of those: {ms(ver_c)}",
    ]


def end_to_end(say, archive: str, trusted: str, runs: int) -> None:
    """`prove ARCHIVE --seq S` as the command runs it: the verified read of the whole archive, then the proof."""
    trust = Trust(tuple(load_verifiers(trusted)))
    read = VerifiedRead([archive])
    events = sum(f.manifest.count for f in read.files)
    rnd = random.Random(4)
    times = []
    for _ in range(runs):
        seq = rnd.randrange(events)
        made, dt = timed(lambda s: prove([archive], trust, seq=s), seq)
        assert made.proven.seq == seq
        times.append(dt)
    say(f"prove end to end on {archive} ({events:,} events in {len(read.files)} files: the verified read with the "
        f"trusted key, every checkpoint's root recomputed, then the proof), {runs} runs: "
        + ", ".join(f"{w:.1f} s wall ({c:.1f} s CPU)" for w, c in times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaves", type=int, default=10_000_000)
    ap.add_argument("--proofs", type=int, default=1000, help="random proofs of each kind")
    ap.add_argument("--dir", default=None, help="where the file store goes (default: a temporary directory)")
    ap.add_argument("--proof-events", type=int, default=100_000,
                    help="events of the real signed archive whose events are the tree's first leaves")
    ap.add_argument("--archive", default=None, help="a signed archive to time `prove` on end to end")
    ap.add_argument("--trusted-key", default=None, help="its log's public key (with --archive)")
    ap.add_argument("--runs", type=int, default=3, help="end-to-end prove runs (with --archive)")
    ap.add_argument("--root-only", action="store_true", help="the hashing and root figures only (no store, proofs)")
    ap.add_argument("--record", action="store_true", help="append the figures to bench/RESULTS.md")
    args = ap.parse_args()
    n = args.leaves
    load0 = os.getloadavg()
    started = datetime.now(timezone.utc)
    out: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        out.append(line)

    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="merkle-bench-"))
    cluster, key, rows = signed_archive(directory / "archive", min(args.proof_events, n))
    chunks = make_leaves(n, 1)
    for seq, _, h, _ in rows:  # leaf i is event seq i: the archive's events are the tree's first leaves
        chunks[seq // CHUNK][seq % CHUNK] = bytes.fromhex(h)
    sha, digest = hashlib.sha256, type(hashlib.sha256()).digest

    # each result dropped with its chunk, as the tree drops a level once its parents are made
    with Clock() as t_map:
        for c in chunks:
            leaf_hashes(c)
    with Clock() as t_loop:
        for c in chunks:
            [sha(b"\x00" + x).digest() for x in c]
    # the n - 1 node hashes alone: 65-byte inputs built beforehand, one chunk at a time (n/2 of them, scaled)
    t_nodes = Clock()
    for c in chunks:
        hashed = leaf_hashes(c)
        inputs = [b"\x01" + hashed[i] + hashed[i + 1] for i in range(0, len(hashed) - 1, 2)]
        with t_nodes:
            list(map(digest, map(sha, inputs)))
    scale = (n - 1) / max(1, n // 2)
    t_nodes.wall, t_nodes.cpu = t_nodes.wall * scale, t_nodes.cpu * scale
    t_leaves = min(t_map, t_loop, key=lambda clock: clock.cpu)
    say(f"hashlib alone, {n:,} leaf hashes SHA-256(0x00 || leaf): {t_map} by map(), {t_loop} by a list "
        f"comprehension; {n - 1:,} node hashes (inputs prebuilt, {n // 2:,} measured and scaled): {t_nodes}")
    with Clock() as t_root:
        compact = CompactTree()
        for c in chunks:
            compact.extend(leaf_hashes(c))
        root = compact.root()
    floor = t_leaves.cpu + t_nodes.cpu
    say(f"root over {n:,} leaves (CompactTree.extend by chunks of {CHUNK:,}, leaf hashing included): {t_root} = "
        f"{t_root.cpu / t_leaves.cpu:.2f}x the leaf hashes alone, {t_root.cpu / floor:.2f}x leaf + node hashes "
        f"alone (CPU, the faster leaf figure); {n / t_root.cpu:,.0f} leaves per CPU second")
    # the product's path: the archive and capture hold the chain hashes as hex, hashed a file's (a batch's) at once
    hex_chunks = [b"".join(c).hex().encode("ascii") for c in chunks]
    with Clock() as t_packed:
        packed = CompactTree()
        for hc in hex_chunks:
            packed.extend_packed(packed_event_leaves(hc))
    assert packed.root() == root
    path = "native (schemas._merklehash)" if merkle._packed else "Python (the native module is not built)"
    say(f"root over {n:,} leaves from their hex hashes (CompactTree.extend_packed of packed_event_leaves by chunks "
        f"of {CHUNK:,}, {path}): {t_packed} = {t_packed.cpu / t_leaves.cpu:.2f}x the leaf hashes alone with hashlib "
        f"(CPU); {n / t_packed.cpu:,.0f} leaves per CPU second")
    del hex_chunks
    if args.root_only:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
        finish(args, say, out, started, load0)
        return

    try:
        with FileHashStore(directory / "tree") as store:
            with Clock() as t_store:
                for c in chunks:
                    store.extend(leaf_hashes(c))
                store.sync()
            # the leaves' 10M bytes objects are the bench's, not a prover's: freed, so that a gen-2 collection
            # walking them (~70 ms seen) does not land inside a proof's timing
            chunks.clear()
            gc.collect()
            on_disk = sum(f.stat().st_size for f in (directory / "tree").iterdir())
            assert store.root() == root
            say(f"file store of {n:,} leaves built and fsynced: {t_store} ({on_disk / 2**20:,.0f} MiB, "
                f"{on_disk // 32:,} hashes)")
            leaf_of = {}
            rnd = random.Random(2)
            gen_i, ver_i, size_i, gen_c, ver_c, size_c, gen_r = [], [], [], [], [], [], []
            for _ in range(args.proofs):
                size = n if rnd.random() < 0.5 else rnd.randint(1, n)
                index = rnd.randrange(size)
                leaf = leaf_of.setdefault(index, store.node(0, index))
                r, dt = timed(store.root, size)
                gen_r.append(dt)
                proof, dt = timed(store.inclusion_proof, index, size)
                gen_i.append(dt)
                ver_i.append(timed(verify_inclusion, leaf, index, size, proof, r)[1])
                size_i.append(len(proof))
                size1 = rnd.randint(1, size)
                r1 = store.root(size1)
                proof, dt = timed(store.consistency_proof, size1, size)
                gen_c.append(dt)
                ver_c.append(timed(verify_consistency, size1, size, r1, r, proof)[1])
                size_c.append(len(proof))
            commands = proof_commands(store, n, cluster, key, rows, args.proofs, directory)
        with Clock() as t_open, FileHashStore(directory / "tree") as store:
            assert store.size == n and store.root() == root
        say(f"reopening the file store (size, checks of every level's length, the right edge read back): {t_open}")
        say(f"root at a random size from the store: {ms(gen_r)}")
        say(f"inclusion proof, {args.proofs} random (index, size <= {n:,}): generate {ms(gen_i)}; verify {ms(ver_i)}; "
            f"{statistics.mean(size_i):.1f} hashes on average, {max(size_i)} at most")
        say(f"consistency proof, {args.proofs} random (size1 <= size2 <= {n:,}): generate {ms(gen_c)}; "
            f"verify {ms(ver_c)}; {statistics.mean(size_c):.1f} hashes on average, {max(size_c)} at most")
        for line in commands:
            say(line)
        if args.archive:
            end_to_end(say, args.archive, args.trusted_key, args.runs)
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
    finish(args, say, out, started, load0)


def finish(args: argparse.Namespace, say, out: list[str], started: datetime,  # type: ignore[no-untyped-def]
           load0: tuple[float, float, float]) -> None:
    load1 = os.getloadavg()
    say(f"load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end (1-minute)")
    if args.record:
        cmd = "PYTHONPATH=. .venv/bin/python bench/merkle.py " + " ".join(sys.argv[1:])
        body = "\n".join(f"- {line}" for line in out)
        append(f"\n### merkle — {started:%Y-%m-%d %H:%M} UTC — {machine()}\n\n`{cmd}`\n\n{body}\n")


if __name__ == "__main__":
    main()
