"""A KRaft message field as the generated message specs define it, and the wire facts every codec of them
shares (fixed-width types, the key of tagged fields a decoder does not know): the ground that messages'
decoders, render and encode stand on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

UNKNOWN_TAGS = "_unknownTaggedFields"

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
    default: Any
    children: tuple["Field", ...] | None

    @property
    def is_array(self) -> bool:
        return self.elem is not None
