"""Errors of the event contract. One root for the whole project lives here because every
other package depends on schemas/ and may catch ContractError."""
from __future__ import annotations


class ContractError(Exception):
    """Root of every ctrlaudit error that a user can cause (bad input, bad arguments)."""


class CodecError(ContractError):
    """Bytes that are not a valid ControllerEvent. `where` names the file/topic and offset."""

    def __init__(self, reason: str, where: str = "") -> None:
        self.reason = reason
        self.where = where
        super().__init__(f"{where}: {reason}" if where else reason)
