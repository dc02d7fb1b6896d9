"""Errors of the event contract. One root for the whole project lives here because every
other package depends on schemas/ and may catch ContractError."""
from __future__ import annotations

# The exit codes of every entry point (ctrlaudit, the capture's processes, the Spark job), one table for all:
# 0 done and clean, 1 found what was asked about (violations, a failed verification), 2 bad input or usage,
# 3 an internal error, 130 interrupted, 141 the reader of its output went away (128 + SIGPIPE, as a shell says).
EXIT_OK, EXIT_FOUND, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141


class ContractError(Exception):
    """Root of every ctrlaudit error that a user can cause (bad input, bad arguments)."""


class CodecError(ContractError):
    """Bytes that are not a valid ControllerEvent. `where` names the file/topic and offset."""

    def __init__(self, reason: str, where: str = "") -> None:
        self.reason = reason
        self.where = where
        super().__init__(f"{where}: {reason}" if where else reason)


class ChainBreak(ContractError):
    """The hash chain does not hold at an event: `kind` is missing | reordered | unchained | altered,
    `seq` the event where it broke, `where` the file."""

    def __init__(self, kind: str, seq: int | None, message: str, where: str = "") -> None:
        self.kind = kind
        self.seq = seq
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
