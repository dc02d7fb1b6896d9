"""The Kafka APIs whose requests change controller state: the ones an operator's change arrives by, so the ones whose
lines are kept. Every other API's lines (Produce, Fetch, Metadata, the brokers' own heartbeats...) are counted and
passed over: they attribute no controller change, and they are nearly all of a busy cluster's lines.

Numbers and names are Kafka's (clients/src/main/resources/common/message/*Request.json: `apiKey` and the message's
name without `Request`, which the authorizer prints; the request log prints the ApiKeys enum's name, the same in
upper snake case, as `requestApiKeyName`).
"""
from __future__ import annotations

import re

KEPT: dict[int, str] = {
    19: "CreateTopics",
    20: "DeleteTopics",
    30: "CreateAcls",
    31: "DeleteAcls",
    33: "AlterConfigs",
    37: "CreatePartitions",
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments",
    49: "AlterClientQuotas",
    51: "AlterUserScramCredentials",
    57: "UpdateFeatures",
    58: "Envelope",
    64: "UnregisterBroker",
    80: "AddRaftVoter",
    81: "RemoveRaftVoter",
}
KEY_OF: dict[str, int] = {name: key for key, name in KEPT.items()}

# SimpleAclAuthorizer (2.8) names no request: its decisions are kept by the operations only a change asks for
CHANGING_OPERATIONS = frozenset({"CREATE", "DELETE", "ALTER", "ALTER_CONFIGS"})

_WORD = re.compile(r"(?<!^)(?=[A-Z])")


def enum_name(name: str) -> str:
    """The ApiKeys (or AclOperation) enum's name of a Pascal-case name: CreateTopics -> CREATE_TOPICS."""
    return _WORD.sub("_", name).upper()
