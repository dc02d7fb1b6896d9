"""Per-query check benchmark (not a test): each invariant's SQL at a base revision against the working tree's.

Decodes one simulated history (bench/replay.py's, as bench/checks.py makes them) into a DuckDB `events`
table kept as a file next to the history (a rerun skips the decode), opens that file read-only as `ctrlaudit
check` opens a store (--in-memory: an uncompressed in-memory copy instead), then runs, per invariant, the base
revision's query and the current one, alternating for --rounds rounds (the machine is shared: old and new are
measured under the same load), and checks that both return the same rows (sorted). A clean simulated history
violates little, so `--perturb N` first breaks it (drops events, adds capture gaps, older controller epochs)
and `--cases` runs on the handmade test histories instead: equal rows there mean something. `--explain NAME` lists a query's operators by time.

    .venv/bin/python bench/checks_queries.py --events 1000000 --keep /work/bench-data
    .venv/bin/python bench/checks_queries.py --events 10000000 --keep /work/bench-data --only state_continuity
    .venv/bin/python bench/checks_queries.py --events 1000000 --keep /work/bench-data --explain state_continuity
    .venv/bin/python bench/checks_queries.py --events 1000000 --perturb 300
    .venv/bin/python bench/checks_queries.py --cases
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb  # noqa: E402

from checks.catalog import (_INCLUDE, _SHARED, BY_NAME, NAMES, SQL_DIR, shared_for, shared_sql, shared_table,  # noqa: E402
                            sql_for, wrapped_sql)
from checks.dialect import expand  # noqa: E402
from checks.duckdb_engine import DuckDBEngine, sort_key  # noqa: E402
from checks.inputs import archives_to_arrow, resolve  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _base_text(path: Path, rev: str) -> str | None:
    """The file as it was at `rev`, its fragments included as they were then too (None: newer than `rev`)."""
    done = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path.relative_to(ROOT)}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    return _INCLUDE.sub(lambda m: "\n" + (_base_text(SQL_DIR / "fragments" / f"{m.group(1)}.sql", rev) or "").strip()
                        + "\n", done.stdout)


def base_shared_table(name: str) -> str:
    return f"base_{shared_table(name)}"


def base_shared_for(names: list[str], rev: str) -> tuple[str, ...]:
    """The shared relations two or more of the queries at `rev` read (as checks.catalog.shared_for)."""
    counts: dict[str, int] = {}
    for n in names:
        for s in dict.fromkeys(_SHARED.findall(_base_text(BY_NAME[n].sql_path, rev) or "")):
            counts[s] = counts.get(s, 0) + 1
    return tuple(s for s, k in counts.items() if k >= 2)


def base_shared_sql(name: str, rev: str) -> str:
    return expand((_base_text(SQL_DIR / "fragments" / f"{name}.sql", rev) or "").strip(), "duckdb")


def base_sql(name: str, rev: str, built: frozenset[str] = frozenset()) -> str | None:
    """wrapped_sql(name, 'duckdb') as it was at `rev` (None: the invariant is newer than `rev`); `built`: the
    base's shared relations built as base_shared_table(NAME) (the others are inlined, as checks.catalog does)."""
    text = _base_text(BY_NAME[name].sql_path, rev)
    if text is None:
        return None
    text = _SHARED.sub(lambda m: base_shared_table(m.group(1)) if m.group(1) in built
                       else f"(\n{base_shared_sql(m.group(1), rev)}\n)", text)
    return wrapped_sql(name, "duckdb").replace(sql_for(name, "duckdb"), expand(text, "duckdb"))


def load(root: Path, events: int, threads: int, in_memory: bool) -> DuckDBEngine:
    """The history's events table. By default the cached DuckDB file itself, opened read-only as `ctrlaudit
    check` opens a store: DuckDB compresses a table on disk (dictionaries for strings, bit-packed integers)
    and scans it faster than an in-memory copy, which it keeps uncompressed (at 10M events the 14 queries took
    23.2 s over the copy, 19.5 s over the store on the same machine). `in_memory`: that copy, in seq order
    (a writable table, as --perturb needs)."""
    archive = root / f"sim-{events}"
    if not (archive / "COMPLETE").exists():
        sys.exit(f"{archive}: no COMPLETE history; make it with bench/checks.py --events {events} --keep {root}")
    cache = root / f"sim-{events}.events.duckdb"
    t = time.perf_counter()
    config = {"threads": threads, "autoinstall_known_extensions": False, "autoload_known_extensions": False}
    if not cache.exists():
        table = archives_to_arrow(list(resolve([archive]).archives))
        made = DuckDBEngine.from_arrow(table, threads=threads)
        made.con.execute(f"ATTACH '{cache}.tmp' AS cached")
        made.con.execute("CREATE TABLE cached.events AS SELECT * FROM events")
        made.con.execute("DETACH cached")
        os.replace(f"{cache}.tmp", cache)
        made.close()
    if in_memory:
        con = duckdb.connect(":memory:", config=config)
        con.execute(f"ATTACH '{cache}' AS cached (READ_ONLY)")
        con.execute("CREATE TABLE events AS SELECT * FROM cached.events ORDER BY rowid")
        con.execute("DETACH cached")
    else:
        con = duckdb.connect(str(cache), read_only=True, config=config)
    eng = DuckDBEngine(con)
    n = eng.con.execute("SELECT count(*) FROM events").fetchone()[0]
    print(f"{'loaded' if in_memory else 'opened'} {n:,} events in {time.perf_counter() - t:.1f} s "
          f"({'in memory' if in_memory else cache})", flush=True)
    return eng


def load_cases(threads: int) -> DuckDBEngine:
    """Every handmade history of tests/checks/cases.py in one table (one cluster id each): rows to compare."""
    from schemas.archive import flat
    from schemas.codec import to_avro
    from tests.checks.cases import CLEAN, VIOLATING

    histories = [make(case) for case, (_, make) in sorted(VIOLATING.items())]
    histories += [make(case) for case, make in sorted(CLEAN.items())]
    rows = [flat.flatten(to_avro(e)) for h in histories for e in h.chained()]
    return DuckDBEngine.from_arrow(flat.to_arrow(rows), threads=threads)


def perturb(con: duckdb.DuckDBPyConnection, one_in: int) -> None:
    """Drop one in `one_in` events of the kinds the checks follow, chosen by seq (deterministic), turn a
    few more into CaptureGaps and stamp as many with an older controller epoch: a history with breaks of
    many kinds, so that equal rows mean something."""
    con.execute(f"DELETE FROM events WHERE kind IN ('PartitionChange', 'BrokerChange', 'TopicChange', 'OffsetSample') "
                f"AND hash(seq) % {one_in} = 0")
    con.execute(f"UPDATE events SET kind = 'CaptureGap' WHERE kind = 'PartitionChange' AND hash(seq) % {one_in * 20} = 1")
    con.execute(f"UPDATE events SET controller_epoch = controller_epoch - 1 WHERE hash(seq) % {one_in} = 2")
    print(f"perturbed: {con.execute('SELECT count(*) FROM events').fetchone()[0]:,} events left", flush=True)


FETCH = False  # --fetch: time fetching the rows into Python too (what the engine did before checks.findings)


def run(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[float, list]:
    """The query's time as the engine runs it: its rows inserted into a table in DuckDB (checks.findings);
    they are fetched for the comparison after the clock stops."""
    if FETCH:
        t = time.perf_counter()
        rows = con.execute(sql).fetchall()
        return time.perf_counter() - t, sorted(rows, key=sort_key)
    con.execute("DROP TABLE IF EXISTS bench_findings")
    t = time.perf_counter()
    con.execute(f"CREATE TEMP TABLE bench_findings AS {sql}")
    took = time.perf_counter() - t
    rows = con.execute("SELECT * FROM bench_findings").fetchall()
    con.execute("DROP TABLE bench_findings")
    return took, sorted(rows, key=sort_key)


def explain(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """The query's operators, slowest first (DuckDB's JSON profile, flattened: the tree is too wide to read)."""
    import json
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        con.execute("PRAGMA enable_profiling='json'")
        con.execute(f"PRAGMA profiling_output='{f.name}'")
        t = time.perf_counter()
        con.execute(sql).fetchall()
        wall = time.perf_counter() - t
        con.execute("PRAGMA disable_profiling")
        prof = json.loads(Path(f.name).read_text())
    ops = []

    def walk(node: dict, depth: int) -> None:
        extra = node.get("extra_info") or {}
        info = "; ".join(f"{k}={' '.join(str(v).split())[:90]}" for k, v in extra.items()
                         if k not in ("Estimated Cardinality",))
        ops.append((node.get("timing", 0.0), depth, node.get("type", "?"), node.get("intermediate_rows", 0), info))
        for c in node.get("children", []):
            walk(c, depth + 1)

    for top in prof.get("operator", []):
        walk(top, 0)
    print(f"wall {wall:.2f} s; operators by time:")
    for timing, depth, name, card, info in sorted(ops, key=lambda o: -o[0])[:25]:
        print(f"  {timing:7.2f} s  d{depth:<2} {name:<22} {card:>10,}  {info[:160]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, default=Path("/work/bench-data"), help="bench/checks.py's --keep directory")
    ap.add_argument("--base", default="HEAD",
                    help="git revision of the queries to compare against (default: the last commit)")
    ap.add_argument("--only", action="append", choices=NAMES, help="invariant (repeatable); default all")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--new-only", action="store_true", help="time the current queries only (no comparison)")
    ap.add_argument("--explain", metavar="NAME", action="append", choices=NAMES,
                    help="profile the current query: its operators, slowest first (repeatable)")
    ap.add_argument("--cases", action="store_true", help="the handmade test histories instead of a simulated one")
    ap.add_argument("--perturb", type=int, metavar="N", default=0,
                    help="drop one in N events first (and make some CaptureGaps): violations to compare")
    ap.add_argument("--in-memory", action="store_true",
                    help="copy the cached table into an in-memory DuckDB first (uncompressed; --perturb implies it)")
    ap.add_argument("--fetch", action="store_true",
                    help="time fetching each query's rows into Python (the engine before checks.findings)")
    args = ap.parse_args()
    global FETCH
    FETCH = args.fetch
    in_memory = args.in_memory or args.perturb > 0
    eng = load_cases(args.threads) if args.cases else load(args.keep, args.events, args.threads, in_memory)
    if args.perturb:
        perturb(eng.con, args.perturb)
    con = eng.con
    eng.unordered().__enter__()  # the queries run as DuckDBEngine.findings runs them
    if args.explain:
        for name in args.explain:
            print(f"== {name}")
            explain(con, wrapped_sql(name, "duckdb"))
        return
    names = args.only or list(NAMES)
    total_old = total_new = 0.0
    all_equal = True
    print(f"load average {os.getloadavg()[0]:.1f}; base {args.base}; {args.rounds} round(s), best of each")
    print(f"{'invariant':<28} {'base s':>8} {'new s':>8} {'rows':>9}  equal")
    # the relations several of the queries share (checks.catalog.shared_for), at the base and now, built as the
    # engine builds them, once per round; their time counts in that side's total
    built, base_built = frozenset(), frozenset()
    base_wanted = () if args.new_only else base_shared_for(names, args.base)
    for shared in dict.fromkeys(base_wanted + shared_for(names)):
        olds, news = [], []
        for _ in range(args.rounds):
            if shared in base_wanted:
                con.execute(f"DROP TABLE IF EXISTS {base_shared_table(shared)}")
                t = time.perf_counter()
                con.execute(f"CREATE TEMP TABLE {base_shared_table(shared)} AS {base_shared_sql(shared, args.base)}")
                olds.append(time.perf_counter() - t)
            if shared in shared_for(names):
                eng.drop_shared(frozenset([shared]))
                t = time.perf_counter()
                con.execute(f"CREATE TEMP TABLE {shared_table(shared)} AS {shared_sql(shared, 'duckdb')}")
                news.append(time.perf_counter() - t)
        if olds:
            base_built |= {shared}
            total_old += min(olds)
        if news:
            built |= {shared}
            total_new += min(news)
        print(f"{'shared:' + shared:<28} {min(olds) if olds else float('nan'):8.2f} "
              f"{min(news) if news else float('nan'):8.2f} {'':>9}  -", flush=True)
    for name in names:
        old_sql, new_sql = base_sql(name, args.base, base_built), wrapped_sql(name, "duckdb", built)
        olds, news, equal, n_rows = [], [], True, 0
        for _ in range(args.rounds):
            if not args.new_only and old_sql is not None:
                t_old, rows_old = run(con, old_sql)
                olds.append(t_old)
            t_new, rows_new = run(con, new_sql)
            news.append(t_new)
            n_rows = len(rows_new)
            if olds:
                equal = equal and rows_old == rows_new
            del rows_new
        best_old = min(olds) if olds else float("nan")
        best_new = min(news)
        total_old += best_old if olds else 0
        total_new += best_new
        all_equal = all_equal and equal
        print(f"{name:<28} {best_old:8.2f} {best_new:8.2f} {n_rows:9,}  {equal if olds else '-'}", flush=True)
    print(f"{'total':<28} {total_old:8.2f} {total_new:8.2f}            {all_equal}")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    eng.close()


if __name__ == "__main__":
    main()
