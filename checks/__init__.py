"""Invariant checks over whole histories: one catalog (checks.catalog, checks/invariants/), two engines
(checks.duckdb_engine, checks.spark_engine), Jepsen-style reports (checks.report); `checks.run.check` runs them
over the inputs. A library: the command line that prints and maps its outcome is ctrlaudit's (ctrlaudit.check_run).
"""
