"""broker_unfenced, live (the definition of record: broker_unfenced.sql).

Per broker: owed from the change that leaves it registered and fenced to the first that leaves it unfenced or
unregistered; met later than the deadline: `broker_still_fenced` at the change that met it (related_seq: the
one that opened it); still owed at the end: pending (at_end). ZooKeeper mode registers brokers unfenced.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Row, met, pending, settle

NAME, RULE = "broker_unfenced", "broker_still_fenced"


def on_broker_change(c: Cluster, r: Row, state: str, out: list[Alert]) -> None:
    b = r["broker_id"]
    owed = state == "fenced"
    opened = settle(c.bu_open, b, owed, r)
    if opened is not None:
        met(c, out, opened, r, NAME, RULE, _expected(c), lambda took: f"broker {b}: fenced for {took} ms "
            "(from the related seq)")


def at_end(c: Cluster, out: list[Alert]) -> None:
    for b, opened in c.bu_open.items():
        pending(c, out, opened, NAME, RULE, _expected(c), f"broker {b}: still fenced at the end of the history")


def _expected(c: Cluster) -> str:
    return f"unfenced or unregistered within {c.deadlines[NAME]} ms"
