"""The invariants, one per name of the catalog (checks.catalog): `<name>.sql`, the definition of record
run by DuckDB and Spark, and the pieces several queries share in `fragments/` (included by name)."""
