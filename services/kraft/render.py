"""A decoded KRaft message as JSON, exactly as Kafka's generated JsonConverter writes it (what
DumpLogSegments prints): tagged fields only when not default, bytes as standard base64."""
from __future__ import annotations

import base64
from typing import Any

from .fields import Field, Message


def render(fields: tuple[Field, ...], data: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        v = data.get(f.key, f.default)
        if f.tag is not None and v == f.default:
            continue  # tagged fields are written only when not default
        out[f.key] = _render_value(f, v)
    return out


def _render_value(f: Field, v: Any) -> Any:
    if v is None:
        return None
    if f.children is not None:
        if f.is_array:
            return [render(f.children, x) for x in v]
        return render(f.children, v)
    t = f.elem if f.is_array else f.type
    if t == "bytes":  # Jackson BinaryNode: standard base64 with padding
        return ([base64.b64encode(x).decode() for x in v] if f.is_array
                else base64.b64encode(v).decode())
    return v
