"""C2SP signed notes (https://c2sp.org/signed-note) with Ed25519, signature type 0x01: the envelope a log's
checkpoints travel in, signed by the log and co-signed by witnesses.

A note is UTF-8 text ending in a newline, a blank line, then one line per signature, "— <key name> <base64(4-byte
key ID || signature)>". Keys are text too, in the formats of Go's golang.org/x/mod/sumdb/note:
  verifier key  <name>+<hex key ID>+<base64(0x01 || 32-byte public key)>
  signer key    PRIVATE+KEY+<name>+<hex key ID>+<base64(0x01 || 32-byte seed)>
with key ID = SHA-256(name || 0x0A || 0x01 || public key)[:4], big-endian.

Opening a note follows the spec's rules: signatures by unknown keys are set aside unverified, a signature by a
trusted key that fails rejects the whole note, and at least one trusted signature must verify. Everything is parsed
strictly (canonical base64, lowercase hex, no control characters) so that one note has one reading.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from schemas.errors import ContractError

# cryptography is imported where a key signs or verifies (`# deferred:` there): capture's worker imports this module
# for its types through its settings, and cryptography's modules would cost every worker's start CPU that only a
# capture given a signing key uses.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ED25519 = 0x01
MAX_SIGNATURES = 100  # the spec asks verifiers to bound them and to accept at least 16; Go's note package takes 100
_DASH = "— "  # em dash (U+2014), space


class NoteError(ContractError):
    """A note, key or signature that is malformed or does not verify; the message says which part and why."""


def b64decode_strict(text: str, what: str) -> bytes:
    """Standard base64 with padding, canonical only: one byte string has one spelling."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise NoteError(f"{what}: not base64") from None
    if base64.b64encode(raw).decode() != text:
        raise NoteError(f"{what}: not canonical base64")
    return raw


def b64encode(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def check_name(name: str, what: str = "key name") -> None:
    """Key names are non-empty, without Unicode spaces, plus signs or control characters."""
    if not name:
        raise NoteError(f"{what} is empty")
    bad = next((c for c in name if c.isspace() or c == "+" or ord(c) < 0x20), None)
    if bad is not None:
        raise NoteError(f"{what} {name!r} contains {bad!r}")


def key_id(name: str, public_key: bytes) -> int:
    """The Ed25519 key ID: SHA-256(name || 0x0A || 0x01 || public key)[:4], big-endian."""
    return int.from_bytes(hashlib.sha256(name.encode() + b"\n" + bytes([ED25519]) + public_key).digest()[:4], "big")


def _parse_key_id(text: str, what: str) -> int:
    if len(text) != 8 or any(c not in "0123456789abcdef" for c in text):
        raise NoteError(f"{what}: key ID {text!r} is not 8 lowercase hex digits")
    return int(text, 16)


def _parse_key(text: str, what: str) -> bytes:
    raw = b64decode_strict(text, what)
    if not raw:
        raise NoteError(f"{what}: empty key")
    if raw[0] != ED25519:
        raise NoteError(f"{what}: signature type {raw[0]:#04x}, only Ed25519 ({ED25519:#04x}) is supported")
    if len(raw) != 33:
        raise NoteError(f"{what}: Ed25519 key of {len(raw) - 1} bytes, expected 32")
    return raw[1:]


@dataclass(frozen=True)
class Verifier:
    """A trusted public key: its name, ID and the 32-byte Ed25519 public key."""

    name: str
    key_id: int
    public_key: bytes

    @classmethod
    def parse(cls, vkey: str) -> Verifier:
        """A verifier from its text, `<name>+<hex key ID>+<base64(0x01 || public key)>`."""
        parts = vkey.split("+", 2)  # base64 has plus signs of its own
        if len(parts) != 3:
            raise NoteError(f"malformed verifier key {vkey[:40]!r}: expected <name>+<key ID>+<key>")
        name, hex_id, key64 = parts
        what = f"verifier key {name!r}"
        check_name(name, f"{what}: name")
        kid = _parse_key_id(hex_id, what)
        public_key = _parse_key(key64, what)
        if kid != key_id(name, public_key):
            raise NoteError(f"{what}: key ID {kid:08x} does not match the key (its ID is "
                            f"{key_id(name, public_key):08x})")
        return cls(name, kid, public_key)

    @property
    def text(self) -> str:
        return f"{self.name}+{self.key_id:08x}+{b64encode(bytes([ED25519]) + self.public_key)}"

    def verify(self, message: bytes, signature: bytes) -> bool:
        # deferred: cryptography, see the imports at the top
        from cryptography.exceptions import InvalidSignature
        # deferred: as above
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True)
class Signer:
    """A private key: its name, ID and Ed25519 seed. The seed is kept out of repr."""

    name: str
    key_id: int
    seed: bytes = field(repr=False)

    @classmethod
    def parse(cls, skey: str) -> Signer:
        """A signer from its text, `PRIVATE+KEY+<name>+<hex key ID>+<base64(0x01 || seed)>`."""
        parts = skey.split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
            raise NoteError("malformed signer key: expected PRIVATE+KEY+<name>+<key ID>+<key>")
        name, hex_id, key64 = parts[2:]
        what = f"signer key {name!r}"
        check_name(name, f"{what}: name")
        kid = _parse_key_id(hex_id, what)
        seed = _parse_key(key64, what)
        signer = cls(name, kid, seed)
        if kid != signer.verifier.key_id:
            raise NoteError(f"{what}: key ID {kid:08x} does not match the key (its ID is "
                            f"{signer.verifier.key_id:08x})")
        return signer

    @property
    def text(self) -> str:
        return f"PRIVATE+KEY+{self.name}+{self.key_id:08x}+{b64encode(bytes([ED25519]) + self.seed)}"

    @property
    def verifier(self) -> Verifier:
        public = _private_key(self.seed).public_key().public_bytes_raw()
        return Verifier(self.name, key_id(self.name, public), public)

    def sign(self, message: bytes) -> bytes:
        return _private_key(self.seed).sign(message)


def _private_key(seed: bytes) -> Ed25519PrivateKey:
    # deferred: cryptography, see the imports at the top
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    return Ed25519PrivateKey.from_private_bytes(seed)


def generate_key(name: str) -> tuple[str, str]:
    """A new Ed25519 key pair for `name`: (signer key text, to keep secret; verifier key text, to publish)."""
    check_name(name)
    # deferred: cryptography, see the imports at the top
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    seed = Ed25519PrivateKey.generate().private_bytes_raw()
    public = _private_key(seed).public_key().public_bytes_raw()
    signer = Signer(name, key_id(name, public), seed)
    return signer.text, signer.verifier.text


@dataclass(frozen=True)
class Signature:
    """One signature line: the key's name and ID and the signature bytes (after the ID)."""

    name: str
    key_id: int
    signature: bytes

    @property
    def line(self) -> str:
        return f"{_DASH}{self.name} {b64encode(self.key_id.to_bytes(4, 'big') + self.signature)}\n"


@dataclass(frozen=True)
class Note:
    """An opened note: its text and its signatures, those verified by a trusted key and the others."""

    text: str
    signatures: tuple[Signature, ...]
    unverified: tuple[Signature, ...] = ()


def _check_text(text: str) -> None:
    if not text.endswith("\n"):
        raise NoteError("malformed note: the text does not end with a newline")
    for lineno, line in enumerate(text.split("\n"), 1):
        bad = next((c for c in line if ord(c) < 0x20), None)  # the spec's "ASCII control characters": below 0x20
        if bad is not None:
            raise NoteError(f"malformed note: line {lineno} contains the control character {bad!r}")


def _parse_signature(line: str, lineno: int) -> Signature:
    where = f"malformed note: signature line {lineno}"
    if not line.startswith(_DASH):
        raise NoteError(f"{where} does not start with '— ' (em dash, space)")
    parts = line[len(_DASH):].split(" ")
    if len(parts) != 2:
        raise NoteError(f"{where}: expected '— <key name> <base64 signature>'")
    name, sig64 = parts
    check_name(name, f"{where}: key name")
    raw = b64decode_strict(sig64, where)
    if len(raw) < 5:
        raise NoteError(f"{where}: {len(raw)} bytes, expected a 4-byte key ID and a signature")
    return Signature(name, int.from_bytes(raw[:4], "big"), raw[4:])


def parse_note(message: str | bytes) -> tuple[str, list[Signature]]:
    """A signed note's text and signatures, as written (nothing verified). The text is everything up to the last
    blank line, its final newline included."""
    if isinstance(message, bytes):
        try:
            message = message.decode("utf-8")
        except UnicodeDecodeError as e:
            raise NoteError(f"malformed note: not UTF-8 (byte {e.start})") from None
    elif any(0xD800 <= ord(c) <= 0xDFFF for c in message):  # a str that no UTF-8 bytes could have given
        raise NoteError("malformed note: not UTF-8 (a lone surrogate)")
    _check_text(message)
    split = message.rfind("\n\n")
    if split < 0:
        raise NoteError("malformed note: no blank line before the signatures")
    text, sig_lines = message[:split + 1], message[split + 2:-1].split("\n")
    if sig_lines == [""]:
        raise NoteError("malformed note: no signature lines after the blank line")
    if len(sig_lines) > MAX_SIGNATURES:
        raise NoteError(f"malformed note: {len(sig_lines)} signatures, at most {MAX_SIGNATURES} are read")
    first = text.count("\n") + 2
    return text, [_parse_signature(line, first + i) for i, line in enumerate(sig_lines)]


def open_note(message: str | bytes, trusted: Iterable[Verifier]) -> Note:
    """Parse and verify a signed note against trusted verifier keys: signatures by other keys are kept as unverified,
    a trusted key's signature that does not verify refuses the note, and at least one must verify."""
    keys: dict[tuple[str, int], Verifier] = {}
    for v in trusted:
        known = keys.setdefault((v.name, v.key_id), v)
        if known != v:
            raise NoteError(f"ambiguous trusted keys: two keys named {v.name!r} with ID {v.key_id:08x}")
    text, sigs = parse_note(message)
    signed = text.encode()
    verified: dict[tuple[str, int], Signature] = {}
    unverified: list[Signature] = []
    for sig in sigs:
        key = keys.get((sig.name, sig.key_id))
        if key is None:
            if sig not in unverified:
                unverified.append(sig)
            continue
        if not key.verify(signed, sig.signature):
            raise NoteError(f"the signature by {sig.name}+{sig.key_id:08x} does not verify")
        verified.setdefault((sig.name, sig.key_id), sig)
    if not verified:
        by = ", ".join(f"{s.name}+{s.key_id:08x}" for s in unverified)
        raise NoteError(f"the note has no signature by a trusted key (signed by {by})")
    return Note(text, tuple(verified.values()), tuple(unverified))


def sign_note(text: str, *signers: Signer) -> str:
    """A new signed note of `text` (which must end with a newline), one signature per signer."""
    _check_text(text)
    if not signers:
        raise NoteError("a note needs at least one signer")
    data = text.encode()
    return text + "\n" + "".join(Signature(s.name, s.key_id, s.sign(data)).line for s in signers)


def cosign_note(message: str | bytes, *signers: Signer) -> str:
    """The signed note `message` with the signers' signatures added after its own (a witness co-signing a
    checkpoint). A signer's earlier signature on it is replaced. The existing signatures are not verified here:
    a witness first opens the note with the log's key."""
    text, sigs = parse_note(message)
    mine = {(s.name, s.key_id) for s in signers}
    kept = "".join(s.line for s in sigs if (s.name, s.key_id) not in mine)
    data = text.encode()
    return text + "\n" + kept + "".join(Signature(s.name, s.key_id, s.sign(data)).line for s in signers)
