"""Options shared by several commands, spelled as Kafka's tools spell them where they exist."""
from __future__ import annotations

import os
from typing import Any, overload

import typer

from schemas import names

DEFAULT_STORE = os.environ.get("CTRLAUDIT_STORE", "ctrlaudit.duckdb")

STORE = typer.Option(DEFAULT_STORE, "--store", help="DuckDB store file (env CTRLAUDIT_STORE).")
CLUSTER = typer.Option(None, "--cluster", help="Cluster id, when the store holds several.")
TOPIC = typer.Option(None, "--topic", help="Only this topic.")
PARTITION = typer.Option(None, "--partition", help="Only this partition (with --topic).")
COMMAND_CONFIG = typer.Option(
    None, "--command-config",
    help="Kafka client properties file: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*, "
         "ssl.keystore.* (as Kafka's tools take it; env CTRLAUDIT_COMMAND_CONFIG).")


@overload
def given_cluster_id(value: str, option: str = ...) -> str: ...
@overload
def given_cluster_id(value: None, option: str = ...) -> None: ...
def given_cluster_id(value: str | None, option: str = "--cluster-id") -> str | None:
    """A cluster id given on the command line, checked before it names a directory (schemas/names.py);
    None when not given (an empty one is refused, not taken as absent)."""
    return None if value is None else names.cluster_id(value, option)


def signing_key(help: str) -> Any:  # typer.Option's, which is Any
    """--signing-key, also from CTRLAUDIT_SIGNING_KEY; `help` says what the command signs with it."""
    return typer.Option(None, "--signing-key", help=help, envvar="CTRLAUDIT_SIGNING_KEY")


def trusted_keys(help: str) -> Any:
    """--trusted-key (repeatable), also from CTRLAUDIT_TRUSTED_KEY; `help` says what the command trusts them for."""
    return typer.Option([], "--trusted-key", help=help, envvar="CTRLAUDIT_TRUSTED_KEY")


SIGNING_KEY = signing_key("Sign the archive's Merkle tree with this key file (ctrlaudit keygen) at every file it "
                          "finishes (env CTRLAUDIT_SIGNING_KEY).")
TRUSTED_KEY = trusted_keys("A log key to trust (name+id+key, or a file of them, one per line; repeatable; env "
                           "CTRLAUDIT_TRUSTED_KEY): every checkpoint must be signed by one and match the events.")
WITNESS_KEY = typer.Option(
    [], "--witness-key",
    help="A witness key whose co-signature is required (as --trusted-key; repeatable; env CTRLAUDIT_WITNESS_KEY).",
    envvar="CTRLAUDIT_WITNESS_KEY")

DEADLINE = typer.Option(
    [], "--deadline", metavar="NAME=DURATION",
    help="A bounded-liveness check's deadline (repeatable), e.g. reassignment_completes=2h, broker_unfenced=30m "
         "(units ms, s, m, h, d). Defaults: leader_elected 5s, reassignment_completes 1h, broker_unfenced 10m, "
         "replication_progress 5m, controller_heartbeat 10s.")
FAIL_ON = typer.Option(
    "error", "--fail-on", metavar="error|warning",
    help="The least severity whose findings fail the check (exit 1): error (default), or warning to make the "
         "bounded-liveness checks' late obligations fail it too. Pending obligations never do.")
