"""Regenerate services/kraft/specs.json (read by services/kraft/specs.py) from the message schemas shipped inside Kafka's jars.

Kafka packages its record schemas as resources (kafka-metadata: common/metadata/*.json,
kafka-clients: common/message/*.json). This script reads them straight from the resolved jars of
every pinned version, checks that newer versions only add to older ones, and writes a compact
JSON table (no "about" texts) that services/kraft compiles into decoders.

    python kafka/gen_kraft_specs.py            # uses .kafka-cache/<pinned>/lib
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from devtools.cluster.jars import DEFAULT_PINS, cache_root, ensure_jars  # noqa: E402

# Releases newer than the pinned 4.x whose record schemas the decoder knows before a cluster of them is
# tested: only their two schema jars are fetched (4.4.0's kafka-shell, which the tests need, is not on
# Maven Central). 4.4.0 adds UnregisterControllerRecord (apiKey 29).
SCHEMA_ONLY = ["4.4.0"]

CONTROL_MESSAGES = ["LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord",
                    "KRaftVersionRecord", "VotersRecord"]
KEEP = ("name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default")


def _load(text: str) -> dict:
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def _fields(fields: list[dict], common: dict[str, list[dict]]) -> list[dict]:
    out = []
    for f in fields:
        g = {k: f[k] for k in KEEP if k in f}
        if "tag" in g:
            g["tag"] = int(g["tag"])
        sub = f.get("fields")
        elem = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        if sub is None and elem in common:
            sub = common[elem]
        if sub is not None:
            g["fields"] = _fields(sub, common)
        out.append(g)
    return out


def read_jar(lib: Path, version: str) -> dict[str, dict]:
    schemas: dict[str, dict] = {}
    for jar, prefix, kind in ((f"kafka-metadata-{version}.jar", "common/metadata/", "metadata"),
                              (f"kafka-clients-{version}.jar", "common/message/", "control")):
        with zipfile.ZipFile(lib / jar) as z:
            for name in z.namelist():
                if not (name.startswith(prefix) and name.endswith(".json")):
                    continue
                d = _load(z.read(name).decode())
                if kind == "control" and d["name"] not in CONTROL_MESSAGES:
                    continue
                if d.get("flexibleVersions") != "0+":
                    raise SystemExit(f"{name}: only flexible-from-0 schemas are supported")
                common = {c["name"]: c["fields"] for c in d.get("commonStructs", [])}
                schemas[d["name"]] = {
                    "kind": kind, "apiKey": d.get("apiKey"),
                    "validVersions": d["validVersions"],
                    "fields": _fields(d["fields"], common),
                }
    return schemas


def _max_version(vv: str) -> int:
    return int(vv.split("-")[-1])


def merge(per_version: dict[str, dict[str, dict]]) -> dict[str, dict]:
    """Union over Kafka versions: the schema with the widest validVersions wins, and it must
    describe every older version's fields identically (new versions only append)."""
    merged: dict[str, dict] = {}
    for kv, schemas in per_version.items():
        for name, s in schemas.items():
            cur = merged.get(name)
            if cur is None or _max_version(s["validVersions"]) > _max_version(cur["validVersions"]):
                merged[name] = s
    for kv, schemas in per_version.items():
        for name, s in schemas.items():
            old, new = s["fields"], merged[name]["fields"]
            names_old = [f["name"] for f in old]
            names_new = [f["name"] for f in new if f["name"] in names_old]
            if names_old != names_new:
                raise SystemExit(f"{name}: Kafka {kv} fields {names_old} differ from {names_new}")
    return merged


def render(merged: dict[str, dict], versions: list[str]) -> str:
    """specs.json: the versions read and the messages in order (metadata records by apiKey, then the control
    messages), a field a line."""
    order = sorted(merged, key=lambda n: (merged[n]["kind"] != "metadata",
                                          merged[n]["apiKey"] if merged[n]["apiKey"] is not None else 0, n))
    lines = ["{", f'  "versions": {json.dumps(versions)},', '  "schemas": {']
    for i, name in enumerate(order):
        s = merged[name]
        head = {k: s[k] for k in ("kind", "apiKey", "validVersions")}
        lines.append(f"    {json.dumps(name)}: {json.dumps(head)[:-1]}, \"fields\": [")
        _render_fields(s["fields"], lines, 6)
        lines.append("    ]}" + ("," if i < len(order) - 1 else ""))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def _render_fields(fields: list[dict], lines: list[str], ind: int) -> None:
    pad = " " * ind
    for i, f in enumerate(fields):
        comma = "," if i < len(fields) - 1 else ""
        head = {k: v for k, v in f.items() if k != "fields"}
        if "fields" in f:
            lines.append(f"{pad}{json.dumps(head)[:-1]}, \"fields\": [")
            _render_fields(f["fields"], lines, ind + 2)
            lines.append(f"{pad}]}}{comma}")
        else:
            lines.append(f"{pad}{json.dumps(head)}{comma}")


def schema_jars(version: str) -> Path:
    """A directory holding kafka-metadata and kafka-clients of `version` (Maven's dependency:copy, no project)."""
    lib = cache_root() / "schemas" / version
    for artifact in ("kafka-metadata", "kafka-clients"):
        if not (lib / f"{artifact}-{version}.jar").exists():
            subprocess.run(["mvn", "-B", "-q", "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy",
                            f"-Dartifact=org.apache.kafka:{artifact}:{version}", f"-DoutputDirectory={lib}"],
                           check=True)
    return lib


def main() -> None:
    versions = [DEFAULT_PINS["3.9"], DEFAULT_PINS["4"], *SCHEMA_ONLY]
    per = {v: read_jar(ensure_jars(v) if v in DEFAULT_PINS.values() else schema_jars(v), v) for v in versions}
    out = ROOT / "services" / "kraft" / "specs.json"
    out.write_text(render(merge(per), versions))
    print(f"wrote {out} ({len(merge(per))} schemas)")


if __name__ == "__main__":
    main()
