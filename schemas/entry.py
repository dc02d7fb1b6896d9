"""How every entry point runs its typer app: a usage error (an unknown flag, a
value that is not a number, a missing argument) is one line "<prefix>: error: ... (see: <prog> --help)" and
exit 2, never click's usage block nor a traceback; `--help` prints the help and exits 0; what the command
returns (or gives typer.Exit) is the exit code.

Here, at the bottom of the tree, because every layer has such an entry point (`python -m services.capture
...`, `python -m checks.spark_cluster`, the Spark job, `python -m devtools.cluster`) and none of them may
import the CLI's package; `ctrlaudit` itself runs through it too (ctrlaudit/cli.py).
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

import typer

from schemas.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED

if TYPE_CHECKING:  # the click that typer vendors (typer._click, typer >= 0.22), which mypy checks against
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

EXIT_USAGE = EXIT_BAD_INPUT  # click's usage errors, an unknown flag: bad input like any other


def app(help: str) -> typer.Typer:
    """A typer app as every entry point makes it: plain help (flag names never cut), no completion
    commands, no boxed tracebacks, -h as --help."""
    return typer.Typer(help=help, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                       context_settings={"help_option_names": ["-h", "--help"]})


def run(application: typer.Typer, argv: list[str] | None, prog: str | None, prefix: str | None = None) -> int:
    """Run `application` on `argv` (None: the process's arguments) as `prog` (None: as click names it from
    how the process was started); the exit code (see the module doc). `prefix`: what an error line starts
    with (default: `prog`)."""
    # typer vendors click from 0.22 and imports it before: the classes through typer's own (cast: out of
    # __mro__ mypy gets a plain `type`; the one named so is click's ClickException)
    click_error = cast("type[ClickException]",
                       next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"))
    no_args: type[NoArgsIsHelpError] | tuple[()] = getattr(  # click >= 8.2
        sys.modules[click_error.__module__], "NoArgsIsHelpError", ())
    try:
        code = application(args=argv, prog_name=prog, standalone_mode=False)
    except no_args as exc:  # a group called alone: its help, as in standalone mode
        print(exc.ctx.get_help() if exc.ctx else exc.format_message())
        return exc.exit_code
    except click_error as exc:
        ctx = getattr(exc, "ctx", None)
        hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        message = " ".join(exc.format_message().split())  # click may wrap a long value over lines
        print(f"{prefix or prog}: error: {message}{hint}", file=sys.stderr)
        return exc.exit_code
    except typer.Abort:  # Ctrl-C or EOF while click itself reads input
        print(f"{prefix or prog}: error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    # standalone_mode=False returns the exit code of typer.Exit, or the command's return value (None: 0)
    return code if isinstance(code, int) else 0
