"""The fields of a request's body that change controller state, from the request log's JSON (Kafka's generated
JSON converters: each message field in camel case, as clients/src/main/resources/common/message/*Request.json
name them; bytes as base64, uuids as Kafka's base64 text).

Every value is checked for its type: a body not in its API's shape is Malformed (the line becomes a gap naming
the field), never half read. Secrets stop here: a config value passes the archive's redaction rules
(services/normalize/redaction.py; Kafka itself hides only AlterConfigs' and IncrementalAlterConfigs' PASSWORD
configs, as ``[hidden]``, and writes a CreateTopics' configs in clear); of a SCRAM credential only the salted
password's length is kept, never it nor its salt; of an Envelope's forwarded request only its length.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from services.normalize.redaction import redact
from schemas.requests.record import (AclChange, Body, ConfigSet, FeatureChange, QuotaChange, ScramChange,
                                      Target)

TOPIC = 2  # ConfigResource.Type.TOPIC's id: the resource of a CreateTopics' configs
_CONFIG_OPS = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}  # IncrementalAlterConfigs' configOperation
_ELECTION = {0: "PREFERRED", 1: "UNCLEAN"}  # ElectLeaders' electionType (version 1+)


class Malformed(Exception):
    """A body not in its API's shape: `path` names the field."""

    def __init__(self, path: str, what: str) -> None:
        self.path = path
        super().__init__(f"{path}: {what}")


# --- typed access to parsed JSON -----------------------------------------------------------------------------

def _checked(v: object, path: str, ok: bool, what: str) -> Any:
    if not ok:
        raise Malformed(path, what)
    return v


def obj(v: object, path: str) -> dict[str, object]:
    return cast(dict[str, object], _checked(v, path, isinstance(v, dict), "not an object"))


def items(v: object, path: str) -> list[object]:
    return cast(list[object], _checked(v, path, isinstance(v, list), "not a list"))


def text(v: object, path: str) -> str:
    return cast(str, _checked(v, path, isinstance(v, str), "not a string"))


def opt_text(v: object, path: str) -> str | None:
    return None if v is None else text(v, path)


def number(v: object, path: str) -> int:
    ok = isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63)
    return cast(int, _checked(v, path, ok, "not an integer"))


def flag(v: object, path: str) -> bool:
    return cast(bool, _checked(v, path, isinstance(v, bool), "not a boolean"))


def _opt_flag(o: dict[str, object], key: str, path: str) -> bool | None:
    return flag(o[key], f"{path}.{key}") if key in o else None


def _ints(v: object, path: str) -> tuple[int, ...]:
    return tuple(number(x, f"{path}[{i}]") for i, x in enumerate(items(v, path)))


def _each(o: dict[str, object], key: str, path: str) -> list[tuple[str, dict[str, object]]]:
    """The objects of list `key` of `o`, each with its path."""
    listed = items(o.get(key), f"{path}.{key}")
    return [(f"{path}.{key}[{i}]", obj(x, f"{path}.{key}[{i}]")) for i, x in enumerate(listed)]


def _base64_length(v: object, path: str) -> int:
    s = text(v, path)
    if len(s) % 4:
        raise Malformed(path, "not base64")
    return len(s) // 4 * 3 - (len(s) - len(s.rstrip("=")))


def _config(resource_type: int, resource: str, name: str, operation: str | None, value: str | None) -> ConfigSet:
    kept, _, redacted = redact(name, value, None)
    return ConfigSet(resource_type, resource, name, operation, kept, redacted)


# --- per API ------------------------------------------------------------------------------------------------

def _create_topics(r: dict[str, object]) -> Body:
    topics, counts, factors, targets, configs = [], [], [], [], []
    for p, t in _each(r, "topics", "request"):
        name = text(t.get("name"), f"{p}.name")
        topics.append(name)
        counts.append((name, number(t.get("numPartitions"), f"{p}.numPartitions")))
        factors.append((name, number(t.get("replicationFactor"), f"{p}.replicationFactor")))
        for q, a in _each(t, "assignments", p):
            targets.append(Target(name, number(a.get("partitionIndex"), f"{q}.partitionIndex"),
                                  _ints(a.get("brokerIds"), f"{q}.brokerIds")))
        for q, c in _each(t, "configs", p):
            configs.append(_config(TOPIC, name, text(c.get("name"), f"{q}.name"), None,
                                   opt_text(c.get("value"), f"{q}.value")))
    return Body(topics=tuple(topics), counts=tuple(counts), replication_factors=tuple(factors),
                targets=tuple(targets), configs=tuple(configs), validate_only=_opt_flag(r, "validateOnly", "request"))


def _delete_topics(r: dict[str, object]) -> Body:
    if "topicNames" in r:  # versions 0-5
        return Body(topics=tuple(text(x, f"request.topicNames[{i}]")
                                 for i, x in enumerate(items(r["topicNames"], "request.topicNames"))))
    names, ids = [], []
    for p, t in _each(r, "topics", "request"):  # version 6+: by name or by id
        name = opt_text(t.get("name"), f"{p}.name")
        if name is not None:
            names.append(name)
        ids.append(text(t.get("topicId"), f"{p}.topicId"))
    return Body(topics=tuple(names), topic_ids=tuple(ids))


def _create_partitions(r: dict[str, object]) -> Body:
    topics, counts, targets = [], [], []
    for p, t in _each(r, "topics", "request"):
        name = text(t.get("name"), f"{p}.name")
        topics.append(name)
        counts.append((name, number(t.get("count"), f"{p}.count")))
        if t.get("assignments") is not None:
            for q, a in _each(t, "assignments", p):
                targets.append(Target(name, None, _ints(a.get("brokerIds"), f"{q}.brokerIds")))
    return Body(topics=tuple(topics), counts=tuple(counts), targets=tuple(targets),
                validate_only=_opt_flag(r, "validateOnly", "request"))


def _reassign(r: dict[str, object]) -> Body:
    topics, targets = [], []
    for p, t in _each(r, "topics", "request"):
        name = text(t.get("name"), f"{p}.name")
        topics.append(name)
        for q, a in _each(t, "partitions", p):
            replicas = a.get("replicas")
            targets.append(Target(name, number(a.get("partitionIndex"), f"{q}.partitionIndex"),
                                  None if replicas is None else _ints(replicas, f"{q}.replicas")))
    return Body(topics=tuple(topics), targets=tuple(targets))


def _elect(r: dict[str, object], version: int) -> Body:
    if version == 0:
        election = "PREFERRED"  # version 0 has no electionType: it elects the preferred leader only
    else:
        code = number(r.get("electionType"), "request.electionType")
        if code not in _ELECTION:
            raise Malformed("request.electionType", f"{code} is not an election type")
        election = _ELECTION[code]
    if r.get("topicPartitions") is None:
        return Body(election_type=election, elect_all=True)
    topics, targets = [], []
    for p, t in _each(r, "topicPartitions", "request"):
        name = text(t.get("topic"), f"{p}.topic")
        topics.append(name)
        targets += [Target(name, n, None) for n in _ints(t.get("partitions"), f"{p}.partitions")]
    return Body(topics=tuple(topics), targets=tuple(targets), election_type=election)


def _alter_configs(r: dict[str, object], incremental: bool) -> Body:
    configs = []
    for p, res in _each(r, "resources", "request"):
        rtype = number(res.get("resourceType"), f"{p}.resourceType")
        rname = text(res.get("resourceName"), f"{p}.resourceName")
        for q, c in _each(res, "configs", p):
            op = None
            if incremental:
                code = number(c.get("configOperation"), f"{q}.configOperation")
                if code not in _CONFIG_OPS:
                    raise Malformed(f"{q}.configOperation", f"{code} is not a config operation")
                op = _CONFIG_OPS[code]
            configs.append(_config(rtype, rname, text(c.get("name"), f"{q}.name"), op,
                                   opt_text(c.get("value"), f"{q}.value")))
    return Body(configs=tuple(configs), validate_only=_opt_flag(r, "validateOnly", "request"))


def _acls(r: dict[str, object], create: bool) -> Body:
    out = []
    key, suffix = ("creations", "") if create else ("filters", "Filter")
    for p, a in _each(r, key, "request"):
        pattern = "resourcePatternType" if create else "patternTypeFilter"
        out.append(AclChange(
            "create" if create else "delete",
            number(a.get("resourceType" + suffix), f"{p}.resourceType{suffix}"),
            opt_text(a.get("resourceName" + suffix), f"{p}.resourceName{suffix}"),
            number(a[pattern], f"{p}.{pattern}") if pattern in a else None,
            opt_text(a.get("principal" + suffix), f"{p}.principal{suffix}"),
            opt_text(a.get("host" + suffix), f"{p}.host{suffix}"),
            number(a.get("operation"), f"{p}.operation"), number(a.get("permissionType"), f"{p}.permissionType")))
    return Body(acls=tuple(out))


def _scram(r: dict[str, object]) -> Body:
    out = [ScramChange("delete", text(d.get("name"), f"{p}.name"), number(d.get("mechanism"), f"{p}.mechanism"),
                       None, None) for p, d in _each(r, "deletions", "request")]
    for p, u in _each(r, "upsertions", "request"):
        _base64_length(u.get("salt"), f"{p}.salt")  # checked for its shape, never kept
        out.append(ScramChange("upsert", text(u.get("name"), f"{p}.name"), number(u.get("mechanism"), f"{p}.mechanism"),
                               number(u.get("iterations"), f"{p}.iterations"),
                               _base64_length(u.get("saltedPassword"), f"{p}.saltedPassword")))
    return Body(scram=tuple(out))


def _quotas(r: dict[str, object]) -> Body:
    out = []
    for p, e in _each(r, "entries", "request"):
        entity = tuple((text(x.get("entityType"), f"{q}.entityType"), opt_text(x.get("entityName"), f"{q}.entityName"))
                       for q, x in _each(e, "entity", p))
        for q, o in _each(e, "ops", p):
            value = o.get("value")
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise Malformed(f"{q}.value", "not a number")
            out.append(QuotaChange(entity, text(o.get("key"), f"{q}.key"), float(value),
                                   flag(o.get("remove"), f"{q}.remove")))
    return Body(quotas=tuple(out), validate_only=_opt_flag(r, "validateOnly", "request"))


def _features(r: dict[str, object]) -> Body:
    out = []
    for p, f in _each(r, "featureUpdates", "request"):
        out.append(FeatureChange(
            text(f.get("feature"), f"{p}.feature"), number(f.get("maxVersionLevel"), f"{p}.maxVersionLevel"),
            number(f["upgradeType"], f"{p}.upgradeType") if "upgradeType" in f else None,
            flag(f["allowDowngrade"], f"{p}.allowDowngrade") if "allowDowngrade" in f else None))
    return Body(features=tuple(out), validate_only=_opt_flag(r, "validateOnly", "request"))


def _node(key: str) -> Callable[[dict[str, object]], Body]:
    return lambda r: Body(nodes=(number(r.get(key), f"request.{key}"),))


def _envelope(r: dict[str, object]) -> Body:
    return Body(withheld_bytes=_base64_length(r.get("requestData"), "request.requestData"))


_BY_API: dict[str, Callable[[dict[str, object]], Body]] = {
    "CreateTopics": _create_topics,
    "DeleteTopics": _delete_topics,
    "CreatePartitions": _create_partitions,
    "AlterPartitionReassignments": _reassign,
    "AlterConfigs": lambda r: _alter_configs(r, False),
    "IncrementalAlterConfigs": lambda r: _alter_configs(r, True),
    "CreateAcls": lambda r: _acls(r, True),
    "DeleteAcls": lambda r: _acls(r, False),
    "AlterUserScramCredentials": _scram,
    "AlterClientQuotas": _quotas,
    "UpdateFeatures": _features,
    "UnregisterBroker": _node("brokerId"),
    "AddRaftVoter": _node("voterId"),
    "RemoveRaftVoter": _node("voterId"),
    "Envelope": _envelope,
}


def body(api: str, version: int, request: object) -> Body | None:
    """The body's fields of request `api` at `version`; None when the line holds no body ("" or null: Kafka kept
    none)."""
    if request is None or request == "":
        return None
    r = obj(request, "request")
    if api == "ElectLeaders":
        return _elect(r, version)
    return _BY_API[api](r)


def error_codes(response: object) -> tuple[int, ...]:
    """The non-zero `errorCode`s anywhere in a response, in order of first appearance (its size is bounded by the
    line's, reader.MAX_LINE_BYTES)."""
    found: dict[int, None] = {}
    stack = [response]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            code = node.get("errorCode")
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                found.setdefault(code, None)
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return tuple(found)
