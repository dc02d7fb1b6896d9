"""fenced_broker_not_in_isr, live (the definition of record: fenced_broker_not_in_isr.sql).

(a) At a PartitionChange, the brokers that become leader or join the ISR (all members for creates and
    bootstrap states): `<state>_broker_became_leader` / `<state>_broker_joined_isr` for a broker
    fenced, unregistered or shutting down as of the change (the broker registry; a broker never
    registered counts as unregistered once the history has shown a registration); related_seq: the
    broker's registry event.
(b) At a BrokerChange that fences or unregisters a broker (not a bootstrap; KRaft's order only, not
    ZooKeeper-sourced ones), `<state>_while_leader_or_in_isr` when some partition's state still has it
    as leader or in the ISR: the open intervals, opened by each change's state and closed by the next
    change of the partition or its topic's delete; magnitude: how many partitions, related_seq: the
    earliest change that put it there. Known anomaly, allowed (REREGISTRATION_ALLOWANCE): a
    re-registration (REGISTERED, fenced) below metadata.version 23 or unknown.
Exempt from both, as in the SQL: "last replica standing" (leader -1, at most one ISR member that was
in the ISR before, or a bootstrap state) is neither judged nor opens an interval.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show, tp

# fenced_broker_not_in_isr.sql's known anomaly (see there: KAFKA-15586, KIP-966)
REREGISTRATION_ALLOWANCE = ("known anomaly: re-registration keeps isr membership below metadata.version 23 "
                            "(KAFKA-15586, KIP-966)")


def _last_replica_standing(r: Row) -> bool:
    """fenced_broker_not_in_isr's exemption: no leader and at most one ISR member, that member already
    in the ISR before (or a bootstrap state)."""
    isr = r["a_isr"]
    return (r["a_leader"] == -1 and len(isr) <= 1
            and bool(r["bootstrap"] or (r["has_before"] and set(isr) <= set(r["b_isr"]))))


def _close_interval(c: Cluster, key: tuple[str, int]) -> None:
    p = c.parts.get(key)
    if p is None or not p.members:
        return
    for b in p.members:
        m = c.member_of.get(b)
        if m is not None:
            m.pop(key, None)
            if not m:
                del c.member_of[b]
    p.members = frozenset()


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    has_a = r["has_after"]
    standing = has_a and _last_replica_standing(r)
    if has_a and not standing:
        # (a): brokers that join leader/ISR at this change
        leader, isr = r["a_leader"], r["a_isr"]
        if r["bootstrap"] or not r["has_before"]:
            joined = set(isr) | {leader}
        else:
            joined = (set(isr) - set(r["b_isr"])) | ({leader} - {r["b_leader"]})
        for b in sorted(x for x in joined if x is not None and x >= 0):
            st = c.brokers.get(b)
            if st is None:
                if c.first_broker_seq is None or c.first_broker_seq >= r["seq"]:
                    continue
                state, since = "unregistered", None
            elif st[0] in ("fenced", "unregistered", "shutting_down"):
                state, since = st[0], st[2]
            else:
                continue
            rule = f"{state}_broker_{'became_leader' if b == leader else 'joined_isr'}"
            when = ", never registered" if since is None else f" since seq {since}"
            alert(out, r, "fenced_broker_not_in_isr", rule,
                  f"broker {b} neither leader nor in isr ({state}{when})",
                  f"{tp(r)} leader {leader}, isr {show(sorted(set(isr)))}", 1, related_seq=since)
    # (b): this change ends the open interval and may open one
    key = (r["topic"], r["partition"])
    _close_interval(c, key)
    open_ = c.topic_open.setdefault(key[0], set())
    open_.discard(key[1])
    if has_a and not standing:
        members = frozenset(b for b in set(r["a_isr"]) | {r["a_leader"]} if b is not None and b >= 0)
        if members:
            part.members = members
            seq = r["seq"]
            for b in members:
                c.member_of.setdefault(b, {})[key] = seq
            open_.add(key[1])
    if not open_:
        c.topic_open.pop(key[0], None)


def on_broker_change(c: Cluster, r: Row, state: str, out: list[Alert]) -> None:
    """(b), before the registry records the change."""
    if state in ("fenced", "unregistered") and not r["bootstrap"] and r["source_kind"] not in ("ZOOKEEPER", "BROKER_LOG"):
        # KRaft's order; in ZooKeeper mode the broker's znode goes before the controller's moves
        b = r["broker_id"]
        held = c.member_of.get(b)
        if held:
            first_seq = min(held.values())
            first_part = min(f"{t}-{p}" for t, p in held)
            mv = r["metadata_version"]
            known = r["broker_change"] == "REGISTERED" and (mv is None or mv < 23)
            alert(out, r, "fenced_broker_not_in_isr", f"{state}_while_leader_or_in_isr",
                  f"broker {b} removed from every leader and isr before it is {state}",
                  f"broker {b} still leader or in isr of {len(held)} partition(s), first {first_part}",
                  len(held), related_seq=first_seq, status="allowed" if known else "violated",
                  allowance=REREGISTRATION_ALLOWANCE if known else None)


def on_topic_change(c: Cluster, r: Row) -> None:
    """(b): a topic's delete ends the open intervals of its partitions."""
    if r["topic_change"] == "DELETED":
        for p in c.topic_open.pop(r["topic"], ()):
            _close_interval(c, (r["topic"], p))
