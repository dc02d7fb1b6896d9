"""A KRaft message field as the generated message specs define it, and the wire facts every codec of them
shares (fixed-width types, the key of tagged fields a decoder does not know): the ground that messages'
decoders, render and encode stand on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

UNKNOWN_TAGS = "_unknownTaggedFields"

# A decoded message: Kafka's JSON field names to values whose types the message's schema gives at run time
# (int, float, bool, str, bytes, None, lists of them, nested messages, and the raw unknown tags).
Message = dict[str, Any]
# A field's value when the message does not set it (a fresh [] for arrays, None where Kafka's is null).
FieldDefault = int | float | bool | str | bytes | list[object] | None


class _FieldSpecKeys(TypedDict):
    name: str
    type: str       # "int32", "string", "[]int32", "[]BrokerEndpoint", ...
    versions: str   # Kafka's version range: "0+", "1-3", "2"


class FieldSpec(_FieldSpecKeys, total=False):
    """One field of specs.SCHEMAS, as the message's JSON schema in Kafka's jars gives it."""

    nullableVersions: str
    taggedVersions: str
    tag: int
    default: str    # Kafka's text form: "-1", "true", "null", ...
    fields: list[FieldSpec]


class Schema(TypedDict):
    """One message of specs.SCHEMAS: a metadata record (apiKey set) or a control message (no apiKey)."""

    kind: Literal["metadata", "control"]
    apiKey: int | None
    validVersions: str
    fields: list[FieldSpec]

_FIXED = {"bool": ("?", 1), "int8": ("b", 1), "int16": ("h", 2), "uint16": ("H", 2),
          "int32": ("i", 4), "uint32": ("I", 4), "int64": ("q", 8), "float64": ("d", 8),
          "uuid": ("16s", 16)}


@dataclass(frozen=True)
class Field:
    name: str
    key: str
    type: str
    elem: str | None  # element type for arrays
    tag: int | None
    nullable: bool
    default: FieldDefault
    children: tuple["Field", ...] | None

    @property
    def is_array(self) -> bool:
        return self.elem is not None
