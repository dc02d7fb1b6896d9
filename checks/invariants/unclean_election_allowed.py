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
- `unclean_election_without_recovering`: an unclean election that leaves the partition RECOVERED,
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


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if not unclean:
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
    if allowed:
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
