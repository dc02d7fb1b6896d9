"""Compiles the field tables of ``specs.py`` (specs.json) into one Python decoder per (message, version).

Decoders are generated as Python source and ``exec``-ed once at import: each is a straight-line
function with local variables, consecutive fixed-width fields merged into one
``struct.unpack_from``, and the tag section as an if-chain, so the hot path does no per-field
table lookups. A decoded message is a plain ``dict`` keyed by Kafka's JSON names (first letter
lower-cased), in declaration order; fields absent from the version are absent from the dict,
tagged fields hold their default when not on the wire. Unknown tags are kept raw under
``UNKNOWN_TAGS``. ``render.py`` turns such a dict into exactly what Kafka's generated JsonConverter
writes; ``encode.py`` writes the bytes back (tests and synthetic files, not the hot path).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, NoReturn, cast

from .encode import encode
from .fields import _FIXED, UNKNOWN_TAGS, Field, FieldDefault, FieldSpec, Message
from .render import render
from .specs import SCHEMAS
from .wire import (ZERO_UUID, Buf, VarintError, _uuid_cache, read_uvarint, uuid_str)

# f(buf, pos, end) -> (the message, the position after it)
Decoder = Callable[[Buf, int, int], tuple[Message, int]]

_ARRAY_FMT = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q",
              "uint32": "I", "float64": "d"}


_SMALL = 64  # arrays shorter than this use a prebuilt Struct
# Entries per message version in the tail caches (see _Gen._cached); once full, no more are added.
TAIL_CACHE_MAX = 16384


class DecodeFailure(ValueError):
    """Raised by generated decoders; the record layer adds file/offset context."""


def in_versions(spec: str | None, v: int) -> bool:
    """Kafka version-range syntax: "0+", "1-3", "2", "none"."""
    if not spec or spec == "none":
        return False
    if spec.endswith("+"):
        return v >= int(spec[:-1])
    lo, _, hi = spec.partition("-")
    return int(lo) <= v <= int(hi or lo)


def json_name(name: str) -> str:
    return name[:1].lower() + name[1:]


def snake_upper(name: str) -> str:
    """MetadataRecordType enum name: PartitionChangeRecord -> PARTITION_CHANGE_RECORD."""
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i > 0 and not name[i - 1].isupper():
            out.append("_")
        out.append(c.upper())
    return "".join(out)


def version_range(spec: str) -> range:
    lo, _, hi = spec.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def _default(f: FieldSpec, typ: str, nullable: bool) -> FieldDefault:
    d = f.get("default")
    if d == "null":
        return None
    if typ.startswith("[]"):
        return []
    if typ in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(d, 0) if d else 0
    if typ == "float64":
        return float(d) if d else 0.0
    if typ == "bool":
        return d == "true"
    if typ == "string":
        return d or ""
    if typ == "uuid":
        return ZERO_UUID
    if typ == "bytes":
        return b""
    return None  # struct


def fields_for(specs: list[FieldSpec], version: int) -> tuple[Field, ...]:
    """The fields present in ``version``, resolved (nullability, tag, default) for it."""
    out = []
    for f in specs:
        if not in_versions(f["versions"], version):
            continue
        typ = f["type"]
        nullable = in_versions(f.get("nullableVersions"), version)
        tagged = in_versions(f.get("taggedVersions"), version)
        elem = typ[2:] if typ.startswith("[]") else None
        children = fields_for(f["fields"], version) if "fields" in f else None
        out.append(Field(f["name"], json_name(f["name"]), typ, elem,
                         f["tag"] if tagged else None, nullable, _default(f, typ, nullable),
                         children))
    return tuple(out)


def all_tags(specs: list[FieldSpec]) -> set[int]:
    return {f["tag"] for f in specs if "tag" in f}


# ---------------------------------------------------------------------------------------------
# Decoder code generation


class _Gen:
    def __init__(self) -> None:
        self.ns: dict[str, Any] = {
            "_uv": read_uvarint, "_uuid": uuid_str, "_Fail": DecodeFailure, "_arr": _array_struct,
            "_UNK": UNKNOWN_TAGS, "_UC": _uuid_cache,
        }
        self.n = 0
        self.funcs: list[str] = []
        self.caches: list[dict[bytes, tuple[Message, tuple[str, ...]]]] = []
        self.ns["_TCMAX"] = TAIL_CACHE_MAX

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def struct(self, fmt: str) -> str:
        key = "_S_" + fmt.replace(">", "").replace("?", "Z")
        if key not in self.ns:
            self.ns[key] = struct.Struct(fmt)
        return key

    def message(self, fields: tuple[Field, ...], schema_tags: set[int], version: int,
                label: str, *, cache: bool = False) -> str:
        """Emit a function ``f(buf, pos, end) -> (dict, pos)``; returns its name.

        ``cache``: memoise the part after the leading fixed-width fields by its bytes (see
        ``_cached``), for top-level messages whose fields hold no nested structs."""
        fname = self.name("_d_")
        local = {f.name: f"v{i}" for i, f in enumerate(fields)}
        head: list[str] = []
        plain = [f for f in fields if f.tag is None]
        tagged = [f for f in fields if f.tag is not None]
        lead: list[Field] = []
        i = 0
        while i < len(plain):
            f = plain[i]
            if f.type in _FIXED and not f.is_array:
                # merge a run of fixed-width fields into one unpack
                run = []
                while i < len(plain) and plain[i].type in _FIXED and not plain[i].is_array:
                    run.append(plain[i])
                    i += 1
                if i - len(run) == 0:
                    lead = run
                fmt = ">" + "".join(_FIXED[r.type][0] for r in run)
                size = sum(_FIXED[r.type][1] for r in run)
                names = [local[r.name] for r in run]
                lhs = ", ".join(names) + ("," if len(names) == 1 else "")
                head.append(f"{lhs} = {self.struct(fmt)}.unpack_from(buf, pos); pos += {size}")
                for r in run:
                    if r.type == "uuid":  # inline cache hit: topic and directory ids repeat
                        u = local[r.name]
                        head.append(f"{u} = _UC.get({u}) or _uuid({u})")
                continue
            head += self._read(f, local[f.name], label)
            i += 1
        head += [f"{local[f.name]} = {self._default_expr(f)}" for f in tagged]
        head += self._tag_section([(f, local[f.name]) for f in tagged], schema_tags, version, label)
        if cache and not any(f.children is not None for f in fields):
            return self._cached(fname, fields, lead, head, local)
        pairs = ", ".join(f"{f.key!r}: {local[f.name]}" for f in fields)
        body = head + [f"d = {{{pairs}}}", "if unk is not None: d[_UNK] = unk", "return d, pos"]
        self.funcs.append(f"def {fname}(buf, pos, end):\n" + "".join(f"    {l}\n" for l in body))
        return fname

    def _cached(self, fname: str, fields: tuple[Field, ...], lead: list[Field], head: list[str],
                local: dict[str, str]) -> str:
        """Two functions: ``_t`` decodes everything after the leading fixed-width fields; ``_d``
        looks the result up by the bytes it came from first, kept as a dict of those fields in
        declaration order plus which of them are lists. In a metadata log the
        rest of a PartitionChangeRecord (ISR, leader, replicas, directories) repeats across
        partitions, while partition and topic ids, read every time, do not. Only a decode that
        ends exactly at ``end`` is stored: every read advances ``pos``, so such a decode looked at
        no byte outside the key, and the same bytes always give the same values (or the same
        error, which is never stored). Lists are copied out of the stored dict for every record,
        so no two records share a mutable value."""
        nlead = 1 if lead else 0  # the unpack line, plus one line per uuid in the run
        nlead += sum(1 for f in lead if f.type == "uuid")
        rest = [f for f in fields if f not in lead]
        tname = fname.replace("_d_", "_t_")
        tnames = [local[f.name] for f in rest] + ["unk"]
        tail = head[nlead:] + [f"return ({', '.join(tnames)},), pos"]
        self.funcs.append(f"def {tname}(buf, pos, end):\n" + "".join(f"    {l}\n" for l in tail))
        cname = "_TC" + fname[2:]
        self.ns[cname] = {}
        self.caches.append(self.ns[cname])

        lead_pairs = "".join(f"{f.key!r}: {local[f.name]}, " for f in lead)
        rest_pairs = ", ".join(f"{f.key!r}: {local[f.name]}" for f in rest)
        body = head[:nlead] + [
            "k = buf[pos:end]",
            "if k.__class__ is not bytes: k = bytes(k)  # memoryview, bytearray: copy, never keep",
            f"t = {cname}.get(k)",
            "if t is None:",
            f"    t, pos = {tname}(buf, pos, end)",
            f"    {', '.join(tnames)}, = t",
            f"    tmpl = {{{rest_pairs}}}",
            "    if unk is not None: tmpl[_UNK] = unk",
            "    t = tmpl, tuple([k for k, v in tmpl.items() if v.__class__ is list])",
            f"    if pos == end and len({cname}) < _TCMAX: {cname}[k] = t",
            "else:",
            "    pos = end",
            "tmpl, lists = t",
            f"d = {{{lead_pairs}**tmpl}}",
            "for k in lists: d[k] = [*d[k]]",
            "return d, pos",
        ]
        self.funcs.append(f"def {fname}(buf, pos, end):\n" + "".join(f"    {l}\n" for l in body))
        return fname

    def _default_expr(self, f: Field) -> str:
        if f.is_array:
            return "None" if f.default is None else "[]"
        if f.children is not None:
            raise NotImplementedError(f"tagged struct field {f.name}")
        return repr(f.default)

    def _uvar(self, target: str) -> list[str]:
        return [f"{target} = buf[pos]",
                f"if {target} < 0x80: pos += 1",
                f"else: {target}, pos = _uv(buf, pos)"]

    def _read(self, f: Field, n: str, label: str) -> list[str]:
        """Statements that read field ``f`` at ``pos`` into local ``n``."""
        t = f.type
        if f.is_array:
            return self._read_array(f, n, label)
        if t in _FIXED:
            fmt, size = _FIXED[t]
            s = self.struct(">" + fmt)
            out = [f"{n}, = {s}.unpack_from(buf, pos); pos += {size}"]
            if t == "uuid":
                out.append(f"{n} = _uuid({n})")
            return out
        if t in ("string", "bytes"):
            out = self._uvar("ln")
            conv = "bytes(buf[pos:pos + ln])" if t == "bytes" else "str(buf[pos:pos + ln], 'utf-8')"
            null = ("None" if f.nullable else
                    f"_fail({label!r} ' non-nullable field {f.name} was serialized as null')")
            out += [f"if ln == 0: {n} = {null}",
                    "else:",
                    "    ln -= 1",
                    "    if pos + ln > end: raise _Fail('" + f"{label}: {f.name} runs past the end')",
                    f"    {n} = {conv}; pos += ln"]
            self.ns["_fail"] = _fail
            return out
        if f.children is not None:  # a struct field
            sub = self.message(f.children, set(), 0, f"{label}.{f.name}")
            if f.nullable:
                return [f"if buf[pos] == 0xff: {n} = None; pos += 1",
                        f"else: {n}, pos = {sub}(buf, pos + 1, end)"]
            return [f"{n}, pos = {sub}(buf, pos, end)"]
        raise NotImplementedError(f"type {t} of {label}.{f.name}")

    def _read_array(self, f: Field, n: str, label: str) -> list[str]:
        e = f.elem
        out = self._uvar("cnt")
        null = "None" if f.nullable else f"_fail({label!r} ' non-nullable field {f.name} was serialized as null')"
        self.ns["_fail"] = _fail
        out += [f"if cnt == 0: {n} = {null}", "else:", "    cnt -= 1"]
        inner: list[str]
        if e in _ARRAY_FMT:
            size = struct.calcsize(">" + _ARRAY_FMT[e])
            tbl = f"_A_{_ARRAY_FMT[e]}"
            self.ns[tbl] = [struct.Struct(f">{i}{_ARRAY_FMT[e]}") for i in range(_SMALL)]
            inner = [f"if pos + cnt * {size} > end: raise _Fail('{label}: {f.name} runs past the end')",
                     f"{n} = list(({tbl}[cnt] if cnt < {_SMALL} else _arr({_ARRAY_FMT[e]!r}, cnt))"
                     f".unpack_from(buf, pos)); pos += cnt * {size}"]
        elif e == "uuid":
            inner = [f"if pos + cnt * 16 > end: raise _Fail('{label}: {f.name} runs past the end')",
                     f"{n} = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * cnt, 16)]; pos += 16 * cnt"]
        elif e == "bool":
            inner = [f"{n} = [b != 0 for b in buf[pos:pos + cnt]]; pos += cnt"]
        elif e in ("string", "bytes"):
            conv = "bytes(buf[pos:pos + ln])" if e == "bytes" else "str(buf[pos:pos + ln], 'utf-8')"
            inner = [f"if cnt > end - pos: raise _Fail('{label}: {f.name} runs past the end')",
                     f"{n} = []",
                     "for _ in range(cnt):",
                     *("    " + l for l in self._uvar("ln")),
                     "    if ln == 0: raise _Fail('" + f"{label}: null element in {f.name}')",
                     "    ln -= 1",
                     f"    {n}.append({conv}); pos += ln"]
        elif f.children is not None:
            sub = self.message(f.children, set(), 0, f"{label}.{f.name}")
            inner = [f"if cnt > end - pos: raise _Fail('{label}: {f.name} runs past the end')",
                     f"{n} = []",
                     "for _ in range(cnt):",
                     f"    el, pos = {sub}(buf, pos, end)",
                     f"    {n}.append(el)"]
        else:
            raise NotImplementedError(f"array of {e} in {label}.{f.name}")
        out += ["    " + l for l in inner]
        return out

    def _tag_section(self, tagged: list[tuple[Field, str]], schema_tags: set[int], version: int,
                     label: str) -> list[str]:
        out = ["unk = None"] + self._uvar("ntag")
        out.append("for _ in range(ntag):")
        loop = self._uvar("tag") + self._uvar("sz") + [
            "tend = pos + sz",
            f"if tend > end: raise _Fail('{label}: tagged field ' + str(tag) + ' runs past the end')",
        ]
        kw = "if"
        for f, loc in sorted(tagged, key=lambda fl: cast(int, fl[0].tag)):  # tagged: tag is set
            loop.append(f"{kw} tag == {f.tag}:")
            loop += ["    " + l for l in self._read(f, loc, label)]
            kw = "elif"
        invalid = sorted(schema_tags - {f.tag for f, _ in tagged})
        if invalid:
            # Kafka: a tag the schema knows, but not for this version, is an error
            loop.append(f"{kw} tag in {tuple(invalid)!r}:")
            loop.append(f"    raise _Fail('Tag ' + str(tag) + ' is not valid for version {version}')")
            kw = "elif"
        loop += (["else:"] if kw == "elif" else ["if True:"]) + [
            "    if unk is None: unk = []",
            "    unk.append((tag, bytes(buf[pos:tend])))",
            "    pos = tend",
            "if pos != tend: raise _Fail('" + label + ": tagged field ' + str(tag) + ' size mismatch')",
        ]
        out += ["    " + l for l in loop]
        return out

    def compile(self) -> dict[str, Any]:
        src = "\n".join(self.funcs)
        exec(compile(src, "<kraft-generated>", "exec"), self.ns)
        return self.ns


def _fail(msg: str) -> NoReturn:
    raise DecodeFailure(msg)


_arr_cache: dict[tuple[str, int], struct.Struct] = {}


def _array_struct(fmt: str, n: int) -> struct.Struct:
    s = _arr_cache.get((fmt, n))
    if s is None:
        s = struct.Struct(f">{n}{fmt}")
        if len(_arr_cache) < 4096:
            _arr_cache[(fmt, n)] = s
    return s


# ---------------------------------------------------------------------------------------------
# The compiled catalogue


@dataclass(frozen=True)
class MessageVersion:
    """One (message, version): its resolved fields and its compiled decoder."""

    name: str            # schema name, e.g. "PartitionChangeRecord"
    type_name: str       # SNAKE_UPPER name DumpLogSegments prints, e.g. "PARTITION_CHANGE_RECORD"
    api_key: int | None  # None for control messages
    version: int
    fields: tuple[Field, ...]
    decode: Decoder

    def render(self, data: Message) -> dict[str, Any]:
        """The JSON form: for DumpLogSegments comparisons and --show-records."""
        return render(self.fields, data)

    def encode(self, data: Message) -> bytes:
        """The bytes back: tests and the synthetic logs of bench/ only."""
        return encode(self.fields, data)


TAIL_CACHES: list[dict[bytes, tuple[Message, tuple[str, ...]]]] = []


def clear_tail_caches() -> None:
    """Empty the decoders' tail caches (benchmarks that must start cold)."""
    for c in TAIL_CACHES:
        c.clear()


def _build() -> dict[tuple[str, int], MessageVersion]:
    gen = _Gen()
    pending = []
    for name, schema in SCHEMAS.items():
        tags = all_tags(schema["fields"])
        for v in version_range(schema["validVersions"]):
            fields = fields_for(schema["fields"], v)
            pending.append((name, schema.get("apiKey"), v, fields,
                            gen.message(fields, tags, v, f"{name} v{v}", cache=True)))
    ns = gen.compile()
    TAIL_CACHES.extend(gen.caches)
    return {(name, v): MessageVersion(name, snake_upper(name), key, v, fields, ns[fn])
            for name, key, v, fields, fn in pending}


CATALOGUE: dict[tuple[str, int], MessageVersion] = _build()


__all__ = ["CATALOGUE", "UNKNOWN_TAGS", "DecodeFailure", "Field", "MessageVersion", "VarintError",
           "fields_for", "in_versions", "json_name", "snake_upper"]
