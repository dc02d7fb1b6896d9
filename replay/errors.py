"""Errors of the replay engine. All derive from schemas' ContractError, the project's one root."""
from __future__ import annotations

from schemas.errors import ContractError


class StoreError(ContractError):
    """The DuckDB store cannot be used as asked (wrong layout version, unknown cluster, bad point)."""


class LayoutVersionError(StoreError):
    """The store file was written with another table layout than this build reads."""


class ChainFork(StoreError):
    """Events that differ from stored ones at the same seq: two histories of one cluster (exit 1)."""
