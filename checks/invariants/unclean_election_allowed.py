"""unclean_election_allowed, live (the definition of record: unclean_election_allowed.sql).

- Unclean (the dispatcher's `is_unclean`, the test the SQL shares with high_watermark_monotonic.sql):
  a transition whose new leader (not -1, not the old one) was in neither the previous ISR nor ELR —
  unless it was an adding replica that this change completes into the ISR — or that is labelled
  UNCLEAN, or that enters RECOVERING.
- The config as of the event: unclean.leader.election.enable of the topic, else of the controller node
  (broker config), else the cluster default, else Kafka's default (false); related_seq is the config's
  event.
- `unclean_election` (allowed) where that config is true; `last_known_leader_election` (allowed) for
  KIP-966's last-known-leader election (ISR and ELR empty, LastKnownElr = [new leader], RECOVERING);
  else `unclean_election_not_allowed`.
- `unclean_election_via_elr_that_could_not_exist`: ELR laundering, an election from the previous ELR (not the
  ISR) where no ELR can exist (a ZooKeeper source, metadata.version below 22), judged as an unclean one
  (allowed where the config says so), related_seq the last change that put the new leader into the ELR.
- `unclean_election_without_recovering`: an unclean election (laundered ones included) that leaves the partition RECOVERED,
  sources other than ZooKeeper only (KIP-704): ZooKeeper's, and broker logs once a BrokerChange was read from
  them (only a ZooKeeper-mode cluster's logs state one).
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show, tp

UNCLEAN_KEY = "unclean.leader.election.enable"
_LEVEL_NAMES = {1: "topic", 2: "controller node", 3: "cluster default"}
LAST_KNOWN_ALLOWANCE = "KIP-966 last known leader: ISR and ELR empty, LastKnownElr = [new leader]"


def _last_known_leader(r: Row) -> bool:
    """KIP-966's last-known-leader election (see unclean_election_allowed.sql): ISR and ELR empty, the
    last known ELR is exactly the new leader, and it enters RECOVERING."""
    lke = r["b_last_known_elr"] or []
    return (not r["b_isr"] and not r["b_elr"] and len(lke) == 1 and r["a_leader"] in lke
            and r["a_recovery"] == "RECOVERING")


def on_config_change(c: Cluster, r: Row) -> None:
    """The config by scope: topic, broker (a node) or cluster (the BROKER config with no resource)."""
    if r["config_name"] == UNCLEAN_KEY and r["config_type"] in ("TOPIC", "BROKER"):
        res = r["config_resource"]
        scope = (f"topic:{res}" if r["config_type"] == "TOPIC" else "cluster:" if res == ""
                 else f"broker:{res}")
        c.configs[scope] = (r["config_value"], r["seq"])


def _laundered(r: Row) -> bool:
    """A new leader from the previous ELR, not the ISR, where no ELR can exist (the caller has checked: a
    transition whose leader changed to one that is not -1)."""
    mv = r["metadata_version"]
    return (r["a_leader"] in r["b_elr"] and r["a_leader"] not in r["b_isr"]
            and (r["source_kind"] == "ZOOKEEPER" or (mv is not None and mv < 22)))


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    laundered = (transition and r["a_leader"] != -1 and r["a_leader"] != r["b_leader"] and _laundered(r))
    entry = part.elr_entered_at.get(r["a_leader"]) if laundered else None
    if r["has_after"] and r["a_elr"]:  # who enters the ELR here (kept until it enters again)
        stays = set(r["b_elr"]) if r["has_before"] and not r["bootstrap"] else set()
        for b in set(r["a_elr"]) - stays:
            part.elr_entered_at[b] = r["seq"]
    if not (unclean or laundered):
        return
    level = value = config_seq = None
    for lvl, scope in ((1, f"topic:{r['topic']}"), (2, f"broker:{r['controller_id']}"), (3, "cluster:")):
        found = c.configs.get(scope)
        if found is not None and found[0] is not None:
            level, (value, config_seq) = lvl, found
            break
    allowed = level is not None and value is not None and value.strip(" ").lower() == "true"
    if level is None:
        config_text = "unclean.leader.election.enable=false (Kafka default)"
        allowance = None
    else:
        allowance = f"unclean.leader.election.enable={value} ({_LEVEL_NAMES[level]} config)"
        config_text = f"unclean.leader.election.enable={value} ({_LEVEL_NAMES[level]} config, seq {config_seq})"
    what = (f"{tp(r)} leader {r['b_leader']} -> {r['a_leader']}, previous isr {show(sorted(set(r['b_isr'])))}, "
            f"elr {show(sorted(set(r['b_elr'])))}, recovery {r['a_recovery']}")
    expected = f"new leader in previous isr or elr; {config_text}"
    if laundered:
        where = " (ZooKeeper mode)" if r["source_kind"] == "ZOOKEEPER" else " (metadata.version below 22)"
        alert(out, r, "unclean_election_allowed", "unclean_election_via_elr_that_could_not_exist",
              f"new leader in previous isr, or in an elr that can exist; {config_text}",
              f"{what}; its elr membership from seq {'?' if entry is None else entry}{where}", 1,
              related_seq=entry, status="allowed" if allowed else "violated",
              allowance=allowance if allowed else None)
    elif allowed:
        alert(out, r, "unclean_election_allowed", "unclean_election", expected, what, 1,
              related_seq=config_seq, status="allowed", allowance=allowance)
    elif _last_known_leader(r):
        alert(out, r, "unclean_election_allowed", "last_known_leader_election", expected, what, 1,
              related_seq=config_seq, status="allowed", allowance=LAST_KNOWN_ALLOWANCE)
    else:
        alert(out, r, "unclean_election_allowed", "unclean_election_not_allowed", expected, what, 1,
              related_seq=config_seq)
    zk_log = r["source_kind"] == "BROKER_LOG" and c.zk_broker_log_since is not None and \
        c.zk_broker_log_since < r["seq"]
    if r["a_recovery"] == "RECOVERED" and r["source_kind"] is not None and r["source_kind"] != "ZOOKEEPER" \
            and not zk_log:
        alert(out, r, "unclean_election_allowed", "unclean_election_without_recovering",
              "leader recovery state RECOVERING after an unclean election", what, 1)


def on_broker_change(c: Cluster, r: Row, state: str, out: list[Alert]) -> None:
    if r["source_kind"] == "BROKER_LOG" and c.zk_broker_log_since is None:
        c.zk_broker_log_since = r["seq"]
