"""Proofs that an auditor checks with a public key and nothing else: no archive, no store, no ctrlaudit of the
prover's.

An inclusion proof says "this event is event `index` of the log whose checkpoint is signed here": the event as
the chain hashes it (its prev_hash and Avro body, from which its chain hash is recomputed, and a decoded copy for
people, checked against the body), its RFC 9162 audit path, and the signed checkpoint note. A consistency proof
says "this checkpoint extends that one": both signed notes and the RFC 9162 consistency path between them. Either
is a small versioned JSON document (`to_json`, `parse_proof`); at 10M events an inclusion proof is 24 hashes.

Everything in a proof file is hostile until shown otherwise: the file is capped, parsed strictly (exact keys, exact
types, canonical base64, no duplicate keys: one document has one reading, here and in another implementation), and
its event body is decoded only once its hash is proven to be in a tree a trusted key signed. A document that is not
a proof is MalformedProof (exit 2); a proof that does not hold is ProofFailed (exit 1), naming what failed.
"""
from __future__ import annotations

import hashlib
import io
import json
import sys
from dataclasses import dataclass
from typing import Any

import fastavro

from schemas import loader, names
from schemas.archive.checkpoint import Checkpoint
from schemas.archive.merkle import HASH_SIZE, ProofError, event_leaf_hash, verify_consistency, verify_inclusion
from schemas.archive.note import NoteError, b64decode_strict, b64encode, open_note
from schemas.archive.signatures import Trust
from schemas.archive.signed import MAX_CHECKPOINT_BYTES, origin_of
from schemas.codec import READ_OPTIONS
from schemas.bounded import read_or_refuse
from schemas.errors import ContractError

FORMAT = "ctrlaudit-proof"
VERSION = 1
# An event body is at most a few MiB (an UnknownRecord of an older release held a KRaft record of up to 8 MiB):
# base64 and its decoded copy make a proof of it ~4x that. Nothing larger is read.
MAX_PROOF_BYTES = 32 << 20
MAX_PATH = 128  # RFC 9162 paths of a tree of at most 2**63 leaves are at most 63 (inclusion) and 126 hashes
_ORIGIN_PREFIX = origin_of("")


class MalformedProof(ContractError):
    """Not a proof document of this version: bad JSON, a missing or extra field, a wrong type (exit 2)."""


class ProofFailed(ContractError):
    """A well-formed proof that does not hold: the one line says what failed (exit 1)."""


@dataclass(frozen=True)
class ProvenEvent:
    """An event as an inclusion proof carries it."""

    hash: str  # its chain hash, hex
    prev_hash: str  # the chain hash before it, hex ("" for seq 0)
    schema: str  # the CRC-64-AVRO fingerprint (hex) of the schema its body is written in
    body: bytes  # the Avro body its chain hash is over (hash = "")
    decoded: dict[str, Any]  # the body decoded, its hash filled in: for people, checked against the body


@dataclass(frozen=True)
class InclusionProof:
    event: ProvenEvent
    index: int
    audit_path: tuple[bytes, ...]
    checkpoint: str  # the signed note


@dataclass(frozen=True)
class ConsistencyProof:
    old_checkpoint: str
    new_checkpoint: str
    consistency_path: tuple[bytes, ...]


Proof = InclusionProof | ConsistencyProof


@dataclass(frozen=True)
class Proven:
    """What a proof that holds established."""

    kind: str
    cluster_id: str
    size: int  # the tree size of the checkpoint proven against (the newer one of a consistency proof)
    keys: tuple[str, ...]  # the trusted log keys that signed it, name+id
    witnesses: tuple[str, ...] = ()  # the witness keys required, each of which co-signed
    seq: int | None = None
    event_id: str | None = None
    old_size: int | None = None

    def line(self) -> str:
        signed = f"signed by {', '.join(self.keys)}" + (f", co-signed by {', '.join(self.witnesses)}"
                                                        if self.witnesses else "")
        if self.kind == "inclusion":
            return (f"event {self.event_id} (seq {self.seq}) of cluster {self.cluster_id} is in its log's tree of "
                    f"{self.size:,} events, {signed}")
        return (f"the checkpoint of {self.size:,} events of cluster {self.cluster_id} extends the one of "
                f"{self.old_size:,} events, {signed}")


# --- writing ------------------------------------------------------------------------------------

def decoded_copy(record: dict[str, Any], chain_hash: str) -> dict[str, Any]:
    """An event record as JSON for people: unions as [name, value], bytes as base64, its chain hash filled in."""
    def plain(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        if isinstance(v, bytes):
            return b64encode(v)
        return v
    copy = plain(record)
    copy["hash"] = chain_hash
    return copy  # type: ignore[no-any-return]


def to_json(proof: Proof) -> str:
    if isinstance(proof, InclusionProof):
        e = proof.event
        doc: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "kind": "inclusion", "index": proof.index,
            "event": {"hash": e.hash, "prev_hash": e.prev_hash, "schema": e.schema, "body": b64encode(e.body),
                      "decoded": e.decoded},
            "audit_path": [b64encode(h) for h in proof.audit_path],
            "checkpoint": proof.checkpoint,
        }
    else:
        doc = {"format": FORMAT, "version": VERSION, "kind": "consistency",
               "old_checkpoint": proof.old_checkpoint, "new_checkpoint": proof.new_checkpoint,
               "consistency_path": [b64encode(h) for h in proof.consistency_path]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# --- reading ------------------------------------------------------------------------------------

def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise MalformedProof(f"the key {k[:40]!r} appears twice in one object")
        seen[k] = v
    return seen


def _constant(name: str) -> Any:
    raise MalformedProof(f"{name} is not JSON")


def _object(value: Any, where: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedProof(f"{where}: expected an object, got {type(value).__name__}")
    missing = [k for k in keys if k not in value]
    extra = sorted(k for k in value if k not in keys)
    if missing:
        raise MalformedProof(f"{where}: missing {', '.join(missing)}")
    if extra:
        raise MalformedProof(f"{where}: unknown field {extra[0][:40]!r}")
    return value


def _str(value: Any, where: str, limit: int) -> str:
    if not isinstance(value, str):
        raise MalformedProof(f"{where}: expected a string, got {type(value).__name__}")
    if len(value) > limit:
        raise MalformedProof(f"{where}: {len(value):,} characters, at most {limit:,}")
    return value


def _hex(value: Any, where: str, digits: int, empty: bool = False) -> str:
    text = _str(value, where, digits)
    if (text or not empty) and (len(text) != digits or any(c not in "0123456789abcdef" for c in text)):
        raise MalformedProof(f"{where}: expected {digits} lowercase hex digits")
    return text


def _b64(value: Any, where: str, limit: int) -> bytes:
    try:
        return b64decode_strict(_str(value, where, limit), where)
    except NoteError as exc:
        raise MalformedProof(str(exc)) from None


def _hashes(value: Any, where: str) -> tuple[bytes, ...]:
    if not isinstance(value, list):
        raise MalformedProof(f"{where}: expected a list of base64 hashes, got {type(value).__name__}")
    if len(value) > MAX_PATH:
        raise MalformedProof(f"{where}: {len(value)} hashes, at most {MAX_PATH}")
    out = []
    for i, h in enumerate(value):
        raw = _b64(h, f"{where}[{i}]", 64)
        if len(raw) != HASH_SIZE:
            raise MalformedProof(f"{where}[{i}]: a hash of {len(raw)} bytes, expected {HASH_SIZE}")
        out.append(raw)
    return tuple(out)


def parse_proof(data: bytes) -> Proof:
    """A proof document, strictly (MalformedProof naming the field otherwise)."""
    if len(data) > MAX_PROOF_BYTES:
        raise MalformedProof(f"larger than {MAX_PROOF_BYTES:,} bytes; not a proof")
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_constant)
    except UnicodeDecodeError as exc:
        raise MalformedProof(f"not UTF-8 (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; so is a 5,000-digit number
        raise MalformedProof(f"not JSON ({str(exc)[:120]})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise MalformedProof(f"not a ctrlaudit proof (no \"format\": \"{FORMAT}\")")
    version = doc.get("version")
    if type(version) is not int:
        raise MalformedProof("version: expected an integer")
    if version != VERSION:
        raise MalformedProof(f"version {version} of the proof format; this ctrlaudit reads version {VERSION}")
    kind = doc.get("kind")
    if kind == "inclusion":
        _object(doc, "proof", ("format", "version", "kind", "index", "event", "audit_path", "checkpoint"))
        index = doc["index"]
        if type(index) is not int or not 0 <= index < 2**63:
            raise MalformedProof("index: expected an integer from 0 to 2**63 - 1")
        e = _object(doc["event"], "event", ("hash", "prev_hash", "schema", "body", "decoded"))
        if not isinstance(e["decoded"], dict):
            raise MalformedProof(f"event.decoded: expected an object, got {type(e['decoded']).__name__}")
        event = ProvenEvent(_hex(e["hash"], "event.hash", 64), _hex(e["prev_hash"], "event.prev_hash", 64, True),
                            _hex(e["schema"], "event.schema", 16), _b64(e["body"], "event.body", MAX_PROOF_BYTES),
                            e["decoded"])
        return InclusionProof(event, index, _hashes(doc["audit_path"], "audit_path"),
                              _str(doc["checkpoint"], "checkpoint", MAX_CHECKPOINT_BYTES))
    if kind == "consistency":
        _object(doc, "proof", ("format", "version", "kind", "old_checkpoint", "new_checkpoint", "consistency_path"))
        return ConsistencyProof(_str(doc["old_checkpoint"], "old_checkpoint", MAX_CHECKPOINT_BYTES),
                                _str(doc["new_checkpoint"], "new_checkpoint", MAX_CHECKPOINT_BYTES),
                                _hashes(doc["consistency_path"], "consistency_path"))
    raise MalformedProof(f"kind: expected \"inclusion\" or \"consistency\", got {str(kind)[:40]!r}")


def read_proof(path: str) -> Proof:
    """The proof in a file ('-': standard input), read up to the cap; MalformedProof naming the file."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_PROOF_BYTES + 1)
        else:
            data = read_or_refuse(path, MAX_PROOF_BYTES, "a proof", MalformedProof)
    except OSError as exc:
        raise MalformedProof(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return parse_proof(data)
    except MalformedProof as exc:
        raise MalformedProof(f"{path}: {exc}") from None


# --- verifying ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SignedCheckpoint:
    checkpoint: Checkpoint
    cluster_id: str
    keys: tuple[str, ...]  # the trusted log keys that signed it
    witnesses: tuple[str, ...]  # the witness keys of the trust, each of which co-signed it


def open_log_checkpoint(text: str, trust: Trust, what: str = "checkpoint") -> SignedCheckpoint:
    """A checkpoint note of a ctrlaudit cluster's log, signed by a trusted log key and co-signed by every trusted
    witness key (ProofFailed naming what is wrong)."""
    try:
        note = open_note(text, [*trust.logs, *trust.witnesses])
        checkpoint = Checkpoint.parse(note.text)
    except NoteError as exc:  # CheckpointError too
        raise ProofFailed(f"{what}: {exc}") from None
    signers = {(s.name, s.key_id) for s in note.signatures}
    logs = [f"{v.name}+{v.key_id:08x}" for v in trust.logs if (v.name, v.key_id) in signers]
    if not logs:
        by = ", ".join(f"{s.name}+{s.key_id:08x}" for s in note.signatures)
        raise ProofFailed(f"{what}: not signed by a trusted log key (only co-signed by {by})")
    missing = [f"{w.name}+{w.key_id:08x}" for w in trust.witnesses if (w.name, w.key_id) not in signers]
    if missing:
        raise ProofFailed(f"{what}: not co-signed by the witness key {missing[0]}")
    cluster_id = checkpoint.origin.removeprefix(_ORIGIN_PREFIX)
    try:
        if cluster_id == checkpoint.origin:
            raise ContractError("no prefix")
        names.cluster_id(cluster_id)
    except ContractError:
        raise ProofFailed(f"{what}: origin {checkpoint.origin[:80]!r} is not a ctrlaudit cluster's log") from None
    witnesses = tuple(f"{w.name}+{w.key_id:08x}" for w in trust.witnesses)
    return SignedCheckpoint(checkpoint, cluster_id, tuple(logs), witnesses)


def _decode(event: ProvenEvent) -> dict[str, Any]:
    schema = loader.by_fingerprint().get(bytes.fromhex(event.schema))
    if schema is None:
        raise MalformedProof(f"event.schema: {event.schema} is no schema this ctrlaudit ships (a newer release's?)")
    buf = io.BytesIO(event.body)
    try:
        record = fastavro.schemaless_reader(buf, schema.parsed, None, **READ_OPTIONS)
    except Exception as exc:  # noqa: BLE001 - fastavro reports bad bytes by many types; signed bytes never get here
        raise ProofFailed(f"event.body: not an event of its schema ({type(exc).__name__})") from None
    if not isinstance(record, dict) or buf.tell() != len(event.body):
        raise ProofFailed("event.body: not one event of its schema (bytes left over)")
    return record


def verify_inclusion_proof(proof: InclusionProof, trust: Trust) -> Proven:
    signed = open_log_checkpoint(proof.checkpoint, trust)
    cp, e = signed.checkpoint, proof.event
    chain = hashlib.sha256(e.prev_hash.encode() + e.body).hexdigest()
    if chain != e.hash:
        raise ProofFailed(f"event: its prev_hash and body hash to {chain[:16]}…, not to its hash {e.hash[:16]}…: "
                          f"the event was altered")
    try:
        verify_inclusion(event_leaf_hash(chain), proof.index, cp.size, proof.audit_path, cp.root_hash)
    except ProofError as exc:
        raise ProofFailed(f"{exc}: the event is not in the tree the checkpoint signs") from None
    # the body is in a signed tree from here on: decoding it reads what the log's writer wrote
    record = _decode(e)
    if record.get("seq") != proof.index:
        raise ProofFailed(f"event: its body says seq {record.get('seq')}, the proof places it at {proof.index}")
    if record.get("cluster_id") != signed.cluster_id:
        raise ProofFailed(f"event: of cluster {str(record.get('cluster_id'))[:80]!r}, the checkpoint is of "
                          f"{cp.origin!r}: a checkpoint of another cluster")
    if record.get("prev_hash") != e.prev_hash or record.get("hash") != "":
        raise ProofFailed("event: its body's prev_hash is not the one it is hashed after")
    copy = json.loads(json.dumps(decoded_copy(record, chain)))
    if copy != e.decoded:
        differ = sorted(k for k in copy.keys() | e.decoded.keys() if copy.get(k) != e.decoded.get(k))
        raise ProofFailed(f"event.decoded: not the event's body ({', '.join(differ[:3])} differ{'s' * (len(differ) == 1)})")
    return Proven("inclusion", signed.cluster_id, cp.size, signed.keys, signed.witnesses, proof.index,
                  str(record.get("event_id")))


def verify_consistency_proof(proof: ConsistencyProof, trust: Trust) -> Proven:
    old = open_log_checkpoint(proof.old_checkpoint, trust, "old_checkpoint")
    new = open_log_checkpoint(proof.new_checkpoint, trust, "new_checkpoint")
    if old.checkpoint.origin != new.checkpoint.origin:
        raise ProofFailed(f"the checkpoints are of two logs, {old.checkpoint.origin!r} and {new.checkpoint.origin!r}")
    try:
        verify_consistency(old.checkpoint.size, new.checkpoint.size, old.checkpoint.root_hash,
                           new.checkpoint.root_hash, proof.consistency_path)
    except ProofError as exc:
        raise ProofFailed(f"{exc}: the newer checkpoint does not extend the older one") from None
    keys = tuple(sorted(set(old.keys) | set(new.keys)))  # two keys after a rotation between them
    return Proven("consistency", new.cluster_id, new.checkpoint.size, keys, new.witnesses,
                  old_size=old.checkpoint.size)


def verify_proof(proof: Proof, trust: Trust) -> Proven:
    """What the proof establishes, or ProofFailed saying what does not hold."""
    if isinstance(proof, InclusionProof):
        return verify_inclusion_proof(proof, trust)
    return verify_consistency_proof(proof, trust)
