"""The znodes Kafka's ZooKeeper-mode controller reads, with Kafka's types checked: the JSON of /controller,
/brokers/ids/<id>, /brokers/topics/<t>, its partitions' state and the config znodes, and the numbers in
their paths. Copied from an incident, they are untrusted: a value of another type, or beyond the 32-bit
integer Kafka writes, is a damaged or forged znode and is said to be one (ZnodeError, one line naming the
file, the zxid and the path) instead of travelling into events or failing deep in the archive's encoder."""
from __future__ import annotations

import json
from typing import Any

from schemas.errors import ContractError

INT32 = range(-2**31, 2**31)


class ZnodeError(ContractError):
    """A znode whose content or path is not what Kafka writes there."""

    def at(self, where: str, path: str) -> ZnodeError:
        return ZnodeError(f"{where}: {path}: {self}")


def json_object(data: bytes | None) -> dict[str, Any]:
    """The znode's JSON object; {} for no data (a multi's create before its setData)."""
    if not data:
        return {}
    try:
        out = json.loads(data)
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, nested beyond Python's stack
        raise ZnodeError(f"not JSON ({type(exc).__name__}: {str(exc)[:80]})") from None
    if not isinstance(out, dict):
        raise ZnodeError(f"JSON {type(out).__name__}, where Kafka writes an object")
    return out


def _int32(value: Any, what: str) -> int:
    if type(value) is not int or value not in INT32:
        raise ZnodeError(f"{what} {str(value)[:40]!r} is not a 32-bit integer")
    return value


def int32(d: dict[str, Any], key: str, default: int) -> int:
    return _int32(d.get(key, default), key)


def int32s(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ZnodeError(f"{what} is a JSON {type(value).__name__}, not a list of broker ids")
    return tuple(_int32(v, what) for v in value)


def text(d: dict[str, Any], key: str) -> str | None:
    value = d.get(key)
    if value is not None and not isinstance(value, str):
        raise ZnodeError(f"{key} is a JSON {type(value).__name__}, not a string")
    return value


def texts(d: dict[str, Any], key: str) -> tuple[str, ...]:
    value = d.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ZnodeError(f"{key} is not a list of strings")
    return tuple(value)


def number(segment: str, what: str) -> int:
    """A partition or broker id in a znode's path."""
    if not segment.isascii() or not segment.lstrip("-").isdigit() or len(segment) > 11:
        raise ZnodeError(f"{what} {segment[:40]!r} is not a number")
    return _int32(int(segment), what)


def epoch(data: bytes | None) -> int | None:
    """/controller_epoch's text; None for no data."""
    if not data:
        return None
    try:
        raw = (data or b"").decode("ascii").strip()
    except UnicodeDecodeError:
        raw = "?"
    if not raw.lstrip("-").isdigit() or len(raw) > 11:
        raise ZnodeError(f"{raw[:40]!r} is not a controller epoch")
    return _int32(int(raw), "the controller epoch")


def assignment(d: dict[str, Any]) -> dict[str, Any]:
    """/brokers/topics/<t>: the topic id and, per partition, replicas (and those being added or removed)."""
    out: dict[str, Any] = {"topic_id": text(d, "topic_id")}
    for key in ("partitions", "adding_replicas", "removing_replicas"):
        value = d.get(key, {})
        if not isinstance(value, dict):
            raise ZnodeError(f"{key} is a JSON {type(value).__name__}, not an object")
        out[key] = {p: int32s(replicas, f"{key}[{p[:20]!r}]") for p, replicas in value.items()}
    return out


def leader_and_isr(d: dict[str, Any]) -> dict[str, Any]:
    """/brokers/topics/<t>/partitions/<p>/state: the numbers the controller reads, those present (the leader recovery
    state too: 1, RECOVERING, after an unclean election from 3.2 on)."""
    out: dict[str, Any] = {k: int32(d, k, -1) for k in ("leader", "leader_epoch", "controller_epoch") if k in d}
    if "isr" in d:
        out["isr"] = int32s(d["isr"], "isr")
    if "leader_recovery_state" in d:  # KIP-704 (3.2+): 1 after an unclean election, until the leader recovered
        state = _int32(d["leader_recovery_state"], "leader_recovery_state")
        if state not in (0, 1):  # LeaderRecoveryState.of refuses any other value: Kafka reads no such znode
            raise ZnodeError(f"leader_recovery_state {state} is neither 0 (RECOVERED) nor 1 (RECOVERING)")
        out["leader_recovery_state"] = state
    return out


def config(d: dict[str, Any]) -> dict[str, str]:
    """A config znode's {"config": {name: value}}, values as text."""
    value = d.get("config", {})
    if not isinstance(value, dict):
        raise ZnodeError(f"config is a JSON {type(value).__name__}, not an object")
    return {k: str(v) for k, v in value.items()}
