"""The invariant catalog and the engines that run it (DuckDB by default, Spark at scale)."""
