"""How the CLI turns errors into exit codes: a user error is one line on stderr and exit 2."""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from schemas.errors import ContractError
from replay.errors import ChainFork
from schemas.verified import ArchiveProblem

P = ParamSpec("P")
R = TypeVar("R")

EXIT_OK, EXIT_FOUND, EXIT_BAD_INPUT = 0, 1, 2


class UsageError(ContractError):
    """Arguments that do not make sense together, or name something that does not exist."""


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    print(f"ctrlaudit: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Every command goes through this: project errors (bad files, bad arguments) and OS errors on
    the user's paths become one line and exit 2; anything else is a bug and keeps its traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (ArchiveProblem, ChainFork) as exc:  # the history is not what it claims: a finding (exit 1)
            raise fail(str(exc), EXIT_FOUND) from None
        except ContractError as exc:
            raise fail(str(exc)) from None
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            raise fail(f"{exc.filename}: {exc.strerror}") from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None

    return wrapper
