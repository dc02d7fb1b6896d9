"""A kept request (the archive's `ClientRequest`) and the record it was made of, both ways.

The event keeps everything the line's record holds (record.py): the line's time and node in the envelope (source
REQUEST_LOG, its file and line), the rest in the payload, the body as JSON with sorted keys. `line_of` gives the
record back exactly, so who asked is answered from an archive as from the logs; `body_of` refuses any text
`body_json` did not write, as an archive's bytes may verify and still not be what this build writes.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, cast, get_args, get_origin, get_type_hints

from schemas.errors import CodecError
from schemas.events import ClientRequest, ControllerEvent
from schemas.requests.record import Body, RequestLine, Resource

# the record's fields the payload holds as they are (the others: file, line and time go to the envelope; resources
# and the body are written out)
SAME = tuple(f for f in ClientRequest.__dataclass_fields__ if f not in ("resources", "body"))
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Body)}  # every field has a plain default


def body_json(body: Body) -> str:
    """The body as JSON, sorted keys, the fields at their defaults left out."""
    full = dataclasses.asdict(body)
    return json.dumps({k: v for k, v in full.items() if v != _DEFAULTS[k]}, sort_keys=True, separators=(",", ":"))


def body_of(text: str) -> Body:
    """The Body `body_json` wrote; ValueError naming the field for any other text (a value of another type, a key
    this build does not know): an archive's bytes may verify and still not be what this build writes."""
    return cast(Body, _typed(json.loads(text), Body, "body"))


def _typed(v: Any, hint: Any, path: str) -> Any:
    """JSON value `v` as the type `hint` of the request records (record.py) says, checked all the way down."""
    if dataclasses.is_dataclass(hint):
        if not isinstance(v, dict):
            raise ValueError(f"{path}: not an object")
        fields = {f.name: f for f in dataclasses.fields(hint)}
        if set(v) - set(fields):
            raise ValueError(f"{path}: unknown field(s) {sorted(set(v) - set(fields))}")
        missing = [n for n, f in fields.items() if n not in v and f.default is dataclasses.MISSING]
        if missing:
            raise ValueError(f"{path}: missing {missing}")
        hints = get_type_hints(hint)
        return cast(Any, hint)(**{n: _typed(x, hints[n], f"{path}.{n}") for n, x in v.items()})
    args = get_args(hint)
    if type(None) in args:  # X | None
        return None if v is None else _typed(v, next(a for a in args if a is not type(None)), path)
    if get_origin(hint) is tuple:
        many = args[-1] is Ellipsis
        if not isinstance(v, list) or (not many and len(v) != len(args)):
            raise ValueError(f"{path}: not a list" + ("" if many else f" of {len(args)}"))
        kinds = [args[0]] * len(v) if many else list(args)
        return tuple(_typed(x, k, f"{path}[{i}]") for i, (x, k) in enumerate(zip(v, kinds)))
    if hint is float and isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if hint is int and isinstance(v, int) and not isinstance(v, bool):
        return v
    if hint in (str, bool) and type(v) is hint:
        return v
    raise ValueError(f"{path}: not {getattr(hint, '__name__', hint)}")


def resource_text(r: Resource) -> str:
    return f"{r.type}:{r.pattern}:{r.name}"


def resource_of(text: str) -> Resource:
    kind, pattern, name = text.split(":", 2)  # a name may hold colons; the type and pattern do not
    return Resource(kind, pattern, name)


def line_of(e: ControllerEvent) -> RequestLine:
    """The record a ClientRequest event was made of (its file: the name the event keeps)."""
    p = e.payload
    if not isinstance(p, ClientRequest):
        raise TypeError(f"seq {e.seq}: a {type(p).__name__}, not a ClientRequest")
    try:
        return RequestLine(file=e.source.file or "", line=e.source.line or 0, time_ms=e.event_time_ms,
                           **{f: getattr(p, f) for f in SAME}, resources=tuple(resource_of(x) for x in p.resources),
                           body=None if p.body is None else body_of(p.body))
    except (ValueError, KeyError, TypeError) as exc:  # verified bytes, but not what this build writes
        raise CodecError(f"a ClientRequest this build does not read ({type(exc).__name__}: {exc})"[:300],
                         f"seq {e.seq}") from None
