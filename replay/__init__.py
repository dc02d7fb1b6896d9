"""The replay engine: immutable image + pure apply, the DuckDB store, and the queries over it."""
