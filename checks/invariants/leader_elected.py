"""leader_elected, live (the definition of record: leader_elected.sql).

Per partition (topic, partition): owed while its state has leader -1 and a member of its ISR or ELR is live
(the broker registry's state "active": registered, unfenced, not in controlled shutdown), judged after every
change of the partition and of each such member; opened at the event after which it holds, met at the first
after which it does not. Met later than the deadline: `no_leader_while_member_live` at the event that met it
(related_seq: the one that opened it); still owed at the end: pending (at_end). A broker with no registration
in the history is not live.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, met, pending, settle

NAME, RULE = "leader_elected", "no_leader_while_member_live"


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    key = (r["topic"], r["partition"])
    if r["has_after"] and r["a_leader"] == -1:
        members = frozenset(r["a_isr"] or ()) | frozenset(r["a_elr"] or ())
        c.le_members[key] = members
    else:
        c.le_members.pop(key, None)
        members = frozenset()
    _judge(c, key, any(_live(c, m) for m in members), r, out)


def on_broker_change(c: Cluster, r: Row, state: str, out: list[Alert]) -> None:
    b = r["broker_id"]  # the registry still holds the state before this change
    for key, members in list(c.le_members.items()):
        if b in members:
            owed = any(state == "active" if m == b else _live(c, m) for m in members)
            _judge(c, key, owed, r, out)


def at_end(c: Cluster, out: list[Alert]) -> None:
    for key, opened in c.le_open.items():
        pending(c, out, opened, NAME, RULE, _expected(c),
                f"{key[0]}-{key[1]}: no leader at the end of the history, with a live ISR or ELR member")


def _live(c: Cluster, b: int) -> bool:
    known = c.brokers.get(b)
    return known is not None and known[0] == "active"


def _judge(c: Cluster, key: tuple[str, int], owed: bool, r: Row, out: list[Alert]) -> None:
    opened = settle(c.le_open, key, owed, r)
    if opened is not None:
        met(c, out, opened, r, NAME, RULE, _expected(c), lambda took: f"{key[0]}-{key[1]}: no leader for {took} ms "
            "with a live ISR or ELR member (from the related seq)")


def _expected(c: Cluster) -> str:
    return f"a leader within {c.deadlines[NAME]} ms while an ISR or ELR member is live"
