"""The invariants, one per name of the catalog (checks.catalog), each in two files side by side:

- `<name>.sql`: the definition of record, run over whole histories by DuckDB and Spark (pieces several
  queries share are in `fragments/`, included by name);
- `<name>.py`: its live predicate, for the invariants the catalog marks live: the same rules judged one
  event at a time, mirroring the SQL clause by clause (checks.live.LiveChecker calls it).

`_state.py` holds what the live predicates share: the alert, the per-cluster and per-partition state,
the hooks' signatures.
"""
