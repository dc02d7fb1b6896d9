"""`python -m services.capture worker|sampler|archiver|health ...`: the capture's processes (the containers'
commands, and what `ctrlaudit capture` starts).

Each command hands its arguments on as they are: the sampler and the archiver read their own flags
(their modules' typer apps), the worker's are Faust's (`worker -l info --without-web`). What needs Faust
(the worker, the sampler's raw records) is imported when it runs: the containers' healthcheck, every 15 s,
loads no Faust.
"""
import sys

from schemas.errors import EXIT_INTERRUPTED, ContractError
from services.capture.connect import require_reachable
from services.capture.outages import say_outages_once
from services.capture.settings import Settings, ensure_topics

PROG = "python -m services.capture"
# flags are the command's own, read by its module (or by Faust): handed on untouched, --help included
PASS_ON = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


def run_commands(argv: list[str]) -> int:
    """The commands other than the worker's start, through their typer app."""
    # the worker starts without typer (its start's CPU, bench/RESULTS.md): typer and the app are made here
    # deferred: typer, for the commands other than the worker
    import typer
    # deferred: as above (schemas.entry is typer's runner)
    from schemas import entry

    cli = entry.app("The capture's processes: the Faust worker, the offset sampler, the archiver, the healthcheck.")
    cli.info.no_args_is_help = False  # no command: the worker, as before there were commands

    @cli.command(context_settings=PASS_ON, help="The offset sampler (its flags: sampler --help).")
    def sampler(ctx: typer.Context) -> None:
        from services.capture.sampler import main as run  # extra: capture (Faust, through the raw records' codec)
        raise typer.Exit(run(ctx.args))

    @cli.command(context_settings=PASS_ON, help="The archiver (its flags: archiver --help).")
    def archiver(ctx: typer.Context) -> None:
        # the archive's reader and writer (pyarrow.compute, the signing's cryptography) would cost every worker's
        # start CPU, and the worker never archives
        # deferred: only this command archives
        from services.capture import archiver as archiver_process
        raise typer.Exit(archiver_process.main(ctx.args))

    @cli.command(help="The containers' healthcheck: Kafka answers within 5 s, with this worker's settings.")
    def health() -> None:
        try:
            s = Settings()
            require_reachable(s.bootstrap_servers, s.security, timeout=5.0)
        except ContractError as exc:
            sys.exit(f"ctrlaudit health: {exc}")
        print("ok")

    @cli.command(context_settings=PASS_ON, help="The Faust worker (its flags are Faust's: worker --help).")
    def worker(ctx: typer.Context) -> None:
        run_worker_command()

    return entry.run(cli, argv, PROG, "ctrlaudit capture")


def run_worker_command() -> None:
    """The worker command's body (Faust reads its flags from sys.argv)."""
    try:
        settings = Settings()
        _ = settings.role_set, settings.security, settings.signers  # properties that validate: one line each
        ensure_topics(settings)
    except (ValueError, ContractError) as exc:  # settings (SettingsError), --command-config, Kafka
        sys.exit(f"ctrlaudit capture: {exc}")
    from services.capture.app import main as run_worker  # extra: capture (Faust); reads sys.argv itself
    run_worker()


def main() -> None:
    say_outages_once()  # a broker down: one WARNING per outage, not an ERROR per retry (outages.py)
    argv = sys.argv[1:]
    if not argv or argv[0] not in ("sampler", "archiver", "health", "worker", "-h", "--help"):
        argv = ["worker", *argv]  # Faust's own command line, as before there were commands
    if argv[0] == "worker":
        # Not through typer: the worker's flags are Faust's, handed on untouched, so typer has nothing to parse,
        # and running a typer app imports pydantic (typer coerces parameters with it), which cost every
        # worker's start more CPU than the rest of its command (bench/RESULTS.md, capture's start-up). Exits
        # as entry.run would: 0, the worker's own sys.exit, or an interrupt said in one line.
        try:
            run_worker_command()
        except (KeyboardInterrupt, EOFError):  # click's Abort, as entry.run says it
            print("ctrlaudit capture: error: interrupted", file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(0)
    sys.exit(run_commands(argv))


main()
