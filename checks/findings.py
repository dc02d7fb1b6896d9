"""The findings of a check, kept in a DuckDB table rather than as Python objects.

A year of a large cluster's history holds millions of findings (nearly all allowed: 13.5M over the
100M-event bench history), so the report is computed where they are: their counts per rule and
allowance in one GROUP BY, the worst few per invariant by a top-n aggregate, and the CSV written by
DuckDB's COPY. Both engines give their rows here (DuckDB inserts them into a temporary table of its own
connection; Spark's come into an in-memory DuckDB, as Parquet its executors wrote or streamed through the
driver), so one set of queries judges them.

`judge` applies the two verdicts that are not the SQL's: `--allow NAME` turns a violation into an
allowed finding, and a violation is "no data" where its evidence rests on what the history does not know: for
an invariant that judges history, evidence that spans a gap in the verified chain (schemas.archive.verified.no_data_gap
says the same in Python); for any invariant, evidence inside or across a stretch nobody read (a CaptureGap's
stretch, replay.gaps, holding that finding's partition or every partition: `overlapping` then `judge`'s
`unknown`).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from checks.catalog import VIOLATION_COLUMNS
from schemas.archive.verified import Gap

TABLE = "check_findings"
_TYPES = {"seq": pa.int64(), "related_seq": pa.int64(), "magnitude": pa.int64()}
SCHEMA = pa.schema([(c, _TYPES.get(c, pa.string())) for c in VIOLATION_COLUMNS])
_DDL = ", ".join(f"{c} {'BIGINT' if c in _TYPES else 'VARCHAR'}" for c in VIOLATION_COLUMNS)
_NULLABLE = ("related_seq", "allowance", "expected", "actual", "magnitude")
BATCH = 65_536
# a judged finding's columns: status and allowance after --allow (the view `judged`)
_JUDGED = {c: {"status": "j_status", "allowance": "j_allowance"}.get(c, c) for c in VIOLATION_COLUMNS}


def sort_key(row: Sequence[Any]) -> tuple[Any, ...]:
    """Python's order of finding rows: column by column, NULLs last (what `_row_order` says in SQL)."""
    return tuple((v is None, v if v is not None else 0) for v in row)


def _row_order() -> list[str]:
    """SQL for sort_key: every column ascending, NULLs last. The columns are the rows as the engine
    gave them (status and allowance before --allow), so the order does not depend on the flags."""
    return [f"{c} NULLS LAST" if c in _NULLABLE else c for c in VIOLATION_COLUMNS]


def _struct_key(items: Sequence[str]) -> str:
    """A struct that compares like sort_key of the Python tuple of `items` (columns or expressions of
    them), NULLs last: the key of a top-n aggregate."""
    fields = []
    for i, c in enumerate(items):
        if c in _NULLABLE:
            empty = "0" if c in _TYPES else "''"
            fields += [f"'n{i}': {c} IS NULL", f"'v{i}': coalesce({c}, {empty})"]
        else:
            fields.append(f"'v{i}': {c}")
    return "{" + ", ".join(fields) + "}"


@dataclass
class Counts:
    """One invariant's findings after judging: what the report says about it."""
    violations: int = 0
    allowed: int = 0
    in_gaps: int = 0
    # the bounded-liveness checks' obligations still open at the end of the history (never violations), and
    # the findings that say a source records nothing to judge (status "no data"), by rule
    pending: int = 0
    no_data: dict[str, int] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)
    allowances: dict[str, int] = field(default_factory=dict)
    magnitudes: dict[str, int] = field(default_factory=dict)


class Findings:
    """A table of VIOLATION_COLUMNS rows on a DuckDB connection; `owned`: close the connection too."""

    def __init__(self, con: duckdb.DuckDBPyConnection, owned: bool = False) -> None:
        self.con = con
        self._owned = owned
        self._judged = False

    # --- filling ----------------------------------------------------------------------------------
    @classmethod
    def create(cls, con: duckdb.DuckDBPyConnection, owned: bool = False) -> Findings:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {TABLE} ({_DDL})")
        return cls(con, owned)

    @classmethod
    def of_rows(cls, rows: Iterable[Sequence[Any]]) -> Findings:
        """Rows from elsewhere (Spark's, a test's) in an in-memory DuckDB of their own, in batches."""
        found = cls.create(duckdb.connect(":memory:", config={
            "autoinstall_known_extensions": False, "autoload_known_extensions": False}), owned=True)
        it = iter(rows)
        while batch := list(itertools.islice(it, BATCH)):
            found.add_arrow(pa.Table.from_arrays(
                [pa.array(col, type=f.type) for col, f in zip(zip(*batch), SCHEMA)], schema=SCHEMA))
        return found

    def add_query(self, sql: str) -> None:
        """Insert a query's rows (VIOLATION_COLUMNS, in order) without leaving DuckDB."""
        self.con.execute(f"INSERT INTO {TABLE} {sql}")

    def add_parquet(self, paths: Sequence[str]) -> None:
        """Insert the rows of Parquet files with the VIOLATION_COLUMNS (read by name; Spark's output)."""
        if paths:
            files = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
            self.add_query(f"SELECT {', '.join(VIOLATION_COLUMNS)} FROM read_parquet([{files}])")

    def add_arrow(self, table: pa.Table) -> None:
        self.con.register("findings_batch", table)
        try:
            self.con.execute(f"INSERT INTO {TABLE} SELECT * FROM findings_batch")
        finally:
            self.con.unregister("findings_batch")

    def rows(self) -> list[tuple[Any, ...]]:
        """Every row as the engine gave it, in sort_key order (tests and small histories)."""
        return sorted(self.con.execute(f"SELECT * FROM {TABLE}").fetchall(), key=sort_key)

    # --- judging ----------------------------------------------------------------------------------
    def overlapping(self, windows: Sequence[tuple[str, int, int]]) -> list[tuple[str, int, int | None]]:
        """The violations (cluster_id, seq, related_seq) whose evidence, from related_seq to seq, reaches into
        one of `windows` (cluster_id, after seq, before seq; -1: to the end): events after the first and before
        the second are not known whole. The caller tells which of them rest on it (`judge`'s `unknown`)."""
        if not windows:
            return []
        self.con.register("findings_windows", pa.table({
            "cluster_id": pa.array([w[0] for w in windows], pa.string()),
            "after_seq": pa.array([w[1] for w in windows], pa.int64()),
            "before_seq": pa.array([w[2] for w in windows], pa.int64())}))
        try:
            return [(c, s, r) for c, s, r in self.con.execute(
                f"SELECT DISTINCT f.cluster_id, f.seq, f.related_seq FROM {TABLE} f JOIN findings_windows w "
                "ON w.cluster_id = f.cluster_id AND greatest(f.seq, coalesce(f.related_seq, f.seq)) > w.after_seq "
                "AND (w.before_seq < 0 OR least(f.seq, coalesce(f.related_seq, f.seq)) < w.before_seq) "
                "WHERE f.status = 'violated' ORDER BY 1, 2").fetchall()]
        finally:
            self.con.unregister("findings_windows")

    def judge(self, allow: Sequence[str], gaps: Sequence[Gap], history: Sequence[str],
              unknown: Sequence[tuple[str, int, int | None]] = ()) -> None:
        """The view `judged`: every finding with `in_gap` and its status/allowance after --allow. `unknown`:
        the violations (cluster_id, seq, related_seq) whose evidence rests on a stretch nobody read."""
        self.con.register("findings_gaps", pa.table({
            "cluster_id": pa.array([g.cluster_id for g in gaps], pa.string()),
            "from_seq": pa.array([g.from_seq for g in gaps], pa.int64()),
            "to_seq": pa.array([g.to_seq for g in gaps], pa.int64())}))
        self.con.register("findings_unknown", pa.table({
            "cluster_id": pa.array([u[0] for u in unknown], pa.string()),
            "seq": pa.array([u[1] for u in unknown], pa.int64()),
            "related_seq": pa.array([u[2] for u in unknown], pa.int64())}))
        allowed = f"f.status = 'violated' AND list_contains({_list(allow)}, f.invariant)"
        in_chain_gap = ("FALSE" if not gaps else
                        f"(list_contains({_list(history)}, f.invariant) AND EXISTS ("
                        "SELECT 1 FROM findings_gaps g WHERE g.cluster_id = f.cluster_id AND g.from_seq <= f.seq "
                        "AND (f.related_seq IS NULL OR g.to_seq >= f.related_seq)))")
        not_read = ("FALSE" if not unknown else
                    "EXISTS (SELECT 1 FROM findings_unknown u WHERE u.cluster_id = f.cluster_id AND u.seq = f.seq "
                    "AND u.related_seq IS NOT DISTINCT FROM f.related_seq)")
        in_gap = f"(f.status = 'violated' AND ({in_chain_gap} OR {not_read}))"
        self.con.execute(
            f"CREATE OR REPLACE TEMP VIEW judged AS SELECT f.*, {in_gap} AS in_gap, "
            f"CASE WHEN {allowed} THEN 'allowed' ELSE f.status END AS j_status, "
            f"CASE WHEN {allowed} THEN '--allow ' || f.invariant ELSE f.allowance END AS j_allowance "
            f"FROM {TABLE} f")
        self._judged = True

    def counts(self) -> dict[str, Counts]:
        """Per invariant: violations, allowed, pending, in gaps, no data, and per rule / allowance / rule
        magnitude (a rule's count and magnitude count its pending findings too)."""
        assert self._judged
        out: dict[str, Counts] = {}
        for inv, n in self.con.execute("SELECT invariant, count(*) FROM judged WHERE in_gap GROUP BY 1").fetchall():
            out.setdefault(inv, Counts()).in_gaps = n
        for inv, status, rule, allowance, n, mag, n_mag in self.con.execute(
                "SELECT invariant, j_status, rule, j_allowance, count(*), sum(magnitude), count(magnitude) "
                "FROM judged WHERE NOT in_gap GROUP BY ALL ORDER BY invariant, rule, j_allowance NULLS LAST"
        ).fetchall():
            c = out.setdefault(inv, Counts())
            if status == "no data":
                c.no_data[rule] = c.no_data.get(rule, 0) + n
                continue
            c.rules[rule] = c.rules.get(rule, 0) + n
            if status == "pending":
                c.pending += n
            elif status == "violated":
                c.violations += n
            else:
                c.allowed += n
                if status == "allowed":
                    c.allowances[allowance] = c.allowances.get(allowance, 0) + n
            if n_mag and status != "pending":  # a pending obligation's magnitude is how long it has been open
                c.magnitudes[rule] = c.magnitudes.get(rule, 0) + int(mag)
        return out

    def worst(self, n: int) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """(invariant, status) -> its n worst findings: largest magnitude first, then cluster, seq and
        rule (then the whole row, so ties come in one order on every engine)."""
        assert self._judged
        key = _struct_key(("-coalesce(magnitude, 0)", "cluster_id", "seq", "rule", *VIOLATION_COLUMNS))
        row = ", ".join(f"'{c}': {e}" for c, e in _JUDGED.items())
        out: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for inv, status, picked in self.con.execute(
                f"SELECT invariant, j_status, min_by(r, k, {int(n)}) FROM ("
                f"SELECT invariant, j_status, {{{row}}} AS r, {key} AS k FROM judged WHERE NOT in_gap) "
                "GROUP BY ALL").fetchall():
            out[(inv, status)] = list(picked)
        return out

    def write_csv(self, path: str) -> None:
        """The judged findings (not those in gaps) as CSV, written by DuckDB: VIOLATION_COLUMNS with a
        header, by invariant, cluster, seq and rule; RFC 4180 quoting, NULL as an empty field and an empty
        string as "" (Python's csv module reads both back as ''). Python's csv writer took 9 of the 11 s
        this took at 10M events (1.35M findings)."""
        assert self._judged
        # qualified: `status` and `allowance` in the order are the engine's, not the select list's (--allow's)
        order = ", ".join("judged." + c for c in ["invariant", "cluster_id", "seq", "rule", *_row_order()])
        target = path.replace("'", "''")
        try:
            self.con.execute(
                f"COPY (SELECT {', '.join(f'{e} AS {c}' for c, e in _JUDGED.items())} "
                f"FROM judged WHERE NOT in_gap ORDER BY {order}) TO '{target}' "
                "(FORMAT csv, HEADER, DELIMITER ',', QUOTE '\"', ESCAPE '\"', NULLSTR '', NEW_LINE '\n')")
        except duckdb.IOException as exc:  # a missing or read-only directory, a full disk: the caller's OSError
            raise OSError(str(exc).splitlines()[0]) from None

    def close(self) -> None:
        try:
            if self._judged:
                self.con.execute("DROP VIEW IF EXISTS judged")
                self.con.unregister("findings_gaps")
                self.con.unregister("findings_unknown")
            self.con.execute(f"DROP TABLE IF EXISTS {TABLE}")
        finally:
            if self._owned:
                self.con.close()


def _list(names: Sequence[str]) -> str:
    """A SQL list literal of names (invariant names: checked against the catalog by the caller)."""
    return "[" + ", ".join("'" + n.replace("'", "''") + "'" for n in names) + "]::VARCHAR[]"
