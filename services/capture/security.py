"""Kafka client security from one Java-style client properties file (`--command-config FILE`, as Kafka's
own tools take it), mapped once into the settings of each client library the project uses.

Supported (everything else is refused with one line naming the file and the key):

* ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
* ``sasl.mechanism``: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, with ``sasl.jaas.config`` =
  ``org.apache.kafka.common.security.{plain.PlainLoginModule|scram.ScramLoginModule} required
  username="..." password="...";``
* ``ssl.truststore.location`` / ``.password`` / ``.type`` (PKCS12, PEM; JKS when the file is in fact
  PKCS12, as Java's own "JKS" type reads both), or ``ssl.ca.location`` (a PEM file, librdkafka's name);
  no truststore: the system's CAs
* ``ssl.keystore.location`` / ``.password`` / ``.type`` (PKCS12 or PEM) and ``ssl.key.password``: the
  client certificate for mutual TLS
* ``ssl.endpoint.identification.algorithm``: ``https`` (the default: check the broker's host name) or
  empty (do not)

Why stores are read here, once, into PEM text: librdkafka takes PEM strings (``ssl.ca.pem`` ...) but not
a PKCS12 truststore, and Python's ssl module takes neither PKCS12 nor a key from memory. A real JKS file
(magic FEEDFEED) is refused with the keytool command that converts it: reading the JKS format would be
one more dependency for a format Java itself has replaced by PKCS12 as keytool's default since Java 9.

Secrets (passwords, the private key) are never in a repr, a log line or an error message.
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from schemas.errors import ContractError

if TYPE_CHECKING:
    # cryptography is imported where a store or key is read (`# deferred:` there): every capture process imports
    # this module through its settings, and cryptography's modules would cost each worker's start CPU that only
    # a deployment with a keystore or truststore file uses
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates
    from cryptography.x509 import Certificate
    # the 'capture' extra's (faust): imported at run time where used
    from faust.types.auth import CredentialsT

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = {"PLAIN": "plain.PlainLoginModule", "SCRAM-SHA-256": "scram.ScramLoginModule",
              "SCRAM-SHA-512": "scram.ScramLoginModule"}
LOGIN_PREFIX = "org.apache.kafka.common.security."
SSL_KEYS = {"ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type", "ssl.ca.location",
            "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
            "ssl.endpoint.identification.algorithm"}
SASL_KEYS = {"sasl.mechanism", "sasl.jaas.config"}
KNOWN_KEYS = {"security.protocol", *SSL_KEYS, *SASL_KEYS}
JKS_MAGIC = b"\xfe\xed\xfe\xed"


class SettingsError(ContractError, ValueError):
    """A setting with a value it cannot have: one line naming the variable, the value and what it takes. (Here,
    under the settings, so that the connection helpers the settings use can raise it too.)"""


class SecurityConfigError(ContractError):
    """The client properties file cannot be used (one line, naming the file and the key)."""


# makes the error for a key of the file: (key, why) -> "<file>: <key>: <why>"
_Err = Callable[[str, str], SecurityConfigError]


@dataclass(frozen=True)
class ClientSecurity:
    """What a client needs to connect, library-neutral. PLAINTEXT when no file is given."""

    source: str = ""  # the properties file, for messages
    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_pem: str | None = field(default=None, repr=False)  # None: the system's CAs
    cert_pem: str | None = field(default=None, repr=False)  # client certificate (+ chain), mTLS
    key_pem: str | None = field(default=None, repr=False)  # its private key, unencrypted PKCS#8 (memory only)
    check_hostname: bool = True

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def describe(self) -> str:
        """For messages: the protocol, mechanism and user, never a secret."""
        out = self.protocol
        if self.uses_sasl:
            out += f" {self.mechanism} as {self.username!r}"
        if self.cert_pem:
            out += " with a client certificate"
        return out


# --- the properties file ---------------------------------------------------------------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2:i + 6]):
                out.append(chr(int(s[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """java.util.Properties.load: comments (# !), continuation lines (a trailing odd backslash), the
    separator is the first unescaped '=', ':' or whitespace, and backslash escapes."""
    logical: list[str] = []
    cur: str | None = None
    for line in text.splitlines():
        stripped = line.lstrip(" \t\f")
        if cur is None and (not stripped or stripped[0] in "#!"):
            continue
        cur = stripped if cur is None else cur + stripped
        trailing = len(cur) - len(cur.rstrip("\\"))
        if trailing % 2 == 1:
            cur = cur[:-1]
            continue
        logical.append(cur)
        cur = None
    if cur is not None:
        logical.append(cur)
    props: dict[str, str] = {}
    for line in logical:
        m = re.match(r"((?:\\.|[^\\=:\s])*)\s*[=:]?\s*(.*)$", line, re.S)
        assert m is not None  # every part of the pattern may be empty: it matches any line
        props[_unescape(m.group(1))] = _unescape(m.group(2))
    return props


_JAAS = re.compile(r"\s*(\S+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;\s*$", re.S)
_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*(?:"((?:\\.|[^"\\])*)"|([^\s";]+))')


def parse_jaas(value: str) -> tuple[str, dict[str, str]]:
    """`LoginModule required key="value" ...;` -> (module, options); ValueError when it is not that."""
    m = _JAAS.fullmatch(value)
    if not m:
        raise ValueError("expected '<LoginModule> required username=\"...\" password=\"...\";'")
    options: dict[str, str] = {}
    module, rest, pos = m.group(1), m.group(3), 0
    while pos < len(rest):
        o = _OPTION.match(rest, pos)
        if not o:
            raise ValueError(f"cannot read the options from character {pos + 1} of the module's options")
        quoted = o.group(2)
        options[o.group(1)] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else o.group(3)
        pos = o.end()
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
    return module, options


# --- key and trust stores --------------------------------------------------------------------------

def _store_bytes(err: _Err, key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise err(key, f"cannot read {location}: {exc.strerror}") from None


def _pkcs12(err: _Err, key: str, location: str, data: bytes, password: str | None) -> PKCS12KeyAndCertificates:
    if data[:4] == JKS_MAGIC:
        raise err(key, f"{location} is a JKS store, which is not supported: convert it with `keytool "
                       f"-importkeystore -srckeystore {location} -destkeystore {location}.p12 -deststoretype "
                       f"PKCS12` and name the .p12 file (type PKCS12), or give a PEM file (type PEM)")
    # deferred: cryptography, see the imports at the top
    from cryptography.hazmat.primitives.serialization import pkcs12
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        pw_key = key.replace(".location", ".password")
        raise err(key, f"{location}: not a PKCS12 store, or {pw_key} is wrong") from None


def _pem_certs(pem: str) -> list[str]:
    return re.findall(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", pem, re.S)


def _cert_pem(certs: Iterable[Certificate]) -> str:
    # deferred: cryptography, see the imports at the top
    from cryptography.hazmat.primitives.serialization import Encoding
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _key_pem(key: PrivateKeyTypes) -> str:
    # deferred: cryptography, see the imports at the top
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


def _truststore(err: _Err, p: dict[str, str]) -> str | None:
    if "ssl.ca.location" in p:
        if "ssl.truststore.location" in p:
            raise err("ssl.ca.location", "give either ssl.ca.location or ssl.truststore.location, not both")
        p = {"ssl.truststore.location": p["ssl.ca.location"], "ssl.truststore.type": "PEM"}
    location = p.get("ssl.truststore.location")
    if not location:
        for k in ("ssl.truststore.password", "ssl.truststore.type"):
            if k in p:
                raise err(k, "set without ssl.truststore.location")
        return None
    kind = p.get("ssl.truststore.type", "JKS").upper()
    data = _store_bytes(err, "ssl.truststore.location", location)
    if kind == "PEM":
        pems = _pem_certs(data.decode(errors="replace"))
        if not pems:
            raise err("ssl.truststore.location", f"{location}: no PEM certificate in it")
        return "\n".join(pems) + "\n"
    if kind not in ("JKS", "PKCS12"):
        raise err("ssl.truststore.type", f"{kind}: expected PKCS12, PEM or JKS")
    store = _pkcs12(err, "ssl.truststore.location", location, data, p.get("ssl.truststore.password"))
    certs = ([store.cert.certificate] if store.cert else []) + [c.certificate for c in store.additional_certs]
    if not certs:
        raise err("ssl.truststore.location", f"{location}: no certificate in it")
    return _cert_pem(certs)


def _keystore(err: _Err, p: dict[str, str]) -> tuple[str, str] | tuple[None, None]:
    location = p.get("ssl.keystore.location")
    if not location:
        for k in ("ssl.keystore.password", "ssl.keystore.type", "ssl.key.password"):
            if k in p:
                raise err(k, "set without ssl.keystore.location")
        return None, None
    kind = p.get("ssl.keystore.type", "JKS").upper()
    data = _store_bytes(err, "ssl.keystore.location", location)
    if kind == "PEM":
        text = data.decode(errors="replace")
        key_block = re.search(r"-----BEGIN (?:ENCRYPTED |RSA |EC )?PRIVATE KEY-----.+?-----END [A-Z ]*PRIVATE KEY-----",
                              text, re.S)
        certs = _pem_certs(text)
        if not key_block or not certs:
            raise err("ssl.keystore.location", f"{location}: expected a PEM private key and certificate(s)")
        pw = p.get("ssl.key.password")
        # deferred: cryptography, see the imports at the top
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
        try:
            key = load_pem_private_key(key_block.group(0).encode(), pw.encode() if pw else None)
        except (ValueError, TypeError):
            raise err("ssl.key.password", f"cannot decrypt the private key in {location}") from None
        return "\n".join(certs) + "\n", _key_pem(key)
    if kind not in ("JKS", "PKCS12"):
        raise err("ssl.keystore.type", f"{kind}: expected PKCS12, PEM or JKS")
    store_pw, key_pw = p.get("ssl.keystore.password"), p.get("ssl.key.password")
    if key_pw is not None and key_pw != store_pw:
        # keytool's PKCS12 stores use one password for both; a different key password is a JKS habit
        raise err("ssl.key.password", "differs from ssl.keystore.password, which a PKCS12 store does not support")
    store = _pkcs12(err, "ssl.keystore.location", location, data, store_pw)
    if store.key is None or store.cert is None:
        raise err("ssl.keystore.location", f"{location}: no private key with its certificate in it")
    return _cert_pem([store.cert.certificate] + [c.certificate for c in store.additional_certs]), _key_pem(store.key)


# --- load ------------------------------------------------------------------------------------------

def from_properties(props: dict[str, str], source: str = "<properties>") -> ClientSecurity:
    def err(key: str, why: str) -> SecurityConfigError:
        return SecurityConfigError(f"{source}: {key}: {why}")

    unknown = sorted(set(props) - KNOWN_KEYS)
    if unknown:
        raise err(unknown[0], f"not supported (supported: {', '.join(sorted(KNOWN_KEYS))})")
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise err("security.protocol", f"{protocol}: expected one of {', '.join(PROTOCOLS)}")
    uses_ssl, uses_sasl = protocol in ("SSL", "SASL_SSL"), protocol.startswith("SASL_")
    for k in sorted(props):
        if (k in SSL_KEYS and not uses_ssl) or (k in SASL_KEYS and not uses_sasl):
            raise err(k, f"has no effect with security.protocol={protocol}")
    mechanism = username = password = None
    if uses_sasl:
        # Kafka's default mechanism is GSSAPI (Kerberos), which no client here is set up for
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism not in MECHANISMS:
            raise err("sasl.mechanism", f"{mechanism}: expected one of {', '.join(MECHANISMS)}")
        if "sasl.jaas.config" not in props:
            raise err("sasl.jaas.config", f"missing: {mechanism} needs a username and a password")
        try:
            module, options = parse_jaas(props["sasl.jaas.config"])
        except ValueError as exc:
            raise err("sasl.jaas.config", str(exc)) from None
        if module != LOGIN_PREFIX + MECHANISMS[mechanism]:
            raise err("sasl.jaas.config", f"{module}: {mechanism} needs {LOGIN_PREFIX + MECHANISMS[mechanism]}")
        extra = sorted(set(options) - {"username", "password"})
        if extra:
            raise err("sasl.jaas.config", f"option {extra[0]!r} not supported (username, password)")
        username, password = options.get("username"), options.get("password")
        if not username or password is None:
            raise err("sasl.jaas.config", "needs username=\"...\" and password=\"...\"")
    ca_pem = cert_pem = key_pem = None
    check_hostname = True
    if uses_ssl:
        algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
        if algorithm not in ("https", ""):
            raise err("ssl.endpoint.identification.algorithm", f"{algorithm}: expected https or empty")
        check_hostname = algorithm == "https"
        ca_pem = _truststore(err, props)
        cert_pem, key_pem = _keystore(err, props)
    return ClientSecurity(source, protocol, mechanism, username, password, ca_pem, cert_pem, key_pem,
                          check_hostname)


def load(path: str | os.PathLike[str] | None) -> ClientSecurity:
    """The security of a `--command-config` file; PLAINTEXT for None or ''."""
    if not path:
        return ClientSecurity()
    try:
        text = Path(path).read_text(encoding="latin-1")  # java.util.Properties' encoding
    except OSError as exc:
        raise SecurityConfigError(f"{path}: cannot read the client properties file: {exc.strerror}") from None
    return from_properties(parse_properties(text), str(path))


# --- one mapping per client library ----------------------------------------------------------------

def ssl_context(sec: ClientSecurity) -> ssl.SSLContext | None:
    """For aiokafka, Faust and kafka-python. The client key goes through a private temporary file that
    is removed at once: SSLContext.load_cert_chain reads only files."""
    if not sec.uses_ssl:
        return None
    ctx = ssl.create_default_context(cadata=sec.ca_pem) if sec.ca_pem else ssl.create_default_context()
    ctx.check_hostname = sec.check_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    if sec.cert_pem:
        assert sec.key_pem is not None  # given with cert_pem (_keystore reads both or neither)
        with tempfile.TemporaryDirectory(prefix="ctrlaudit-tls-") as d:  # mode 0700
            f = Path(d) / "client.pem"
            fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fo:
                fo.write(sec.key_pem + sec.cert_pem)
            ctx.load_cert_chain(f)
    return ctx


# keyword arguments of aiokafka's and kafka-python's clients
ClientKwargs = dict[str, str | bool | ssl.SSLContext | None]


def aiokafka_kwargs(sec: ClientSecurity) -> ClientKwargs:
    """AIOKafkaConsumer/Producer keyword arguments (kafka-python's names are the same)."""
    out: ClientKwargs = {"security_protocol": sec.protocol}
    if sec.uses_ssl:
        out["ssl_context"] = ssl_context(sec)
    if sec.uses_sasl:
        out.update(sasl_mechanism=sec.mechanism, sasl_plain_username=sec.username,
                   sasl_plain_password=sec.password)
    return out


def kafka_python_kwargs(sec: ClientSecurity) -> ClientKwargs:
    """KafkaAdminClient keyword arguments: aiokafka's, plus its own host-name switch (it checks the host
    name itself unless told not to, whatever the context says)."""
    out = aiokafka_kwargs(sec)
    if sec.uses_ssl:
        out["ssl_check_hostname"] = sec.check_hostname
    return out


def faust_credentials(sec: ClientSecurity) -> CredentialsT | None:
    """faust.App(broker_credentials=...): Faust hands them to aiokafka for its consumer, producer and topic
    creation (faust/transport/drivers/aiokafka.py, credentials_to_aiokafka_auth)."""
    if sec.protocol == "PLAINTEXT":
        return None
    import faust  # extra: capture
    if sec.uses_sasl:
        return faust.SASLCredentials(username=sec.username, password=sec.password, mechanism=sec.mechanism,
                                     ssl_context=ssl_context(sec))  # with a context: SASL_SSL
    return faust.SSLCredentials(ssl_context(sec))


def librdkafka_config(sec: ClientSecurity) -> dict[str, str | None]:
    """confluent-kafka (librdkafka) configuration: PEM strings, no files. (The values have the types of
    ClientSecurity's fields; the optional ones are set where they are used: the SASL ones with SASL, the key
    with its certificate.)"""
    out: dict[str, str | None] = {"security.protocol": sec.protocol}
    if sec.uses_ssl:
        out["ssl.endpoint.identification.algorithm"] = "https" if sec.check_hostname else "none"
        if sec.ca_pem:
            out["ssl.ca.pem"] = sec.ca_pem
        if sec.cert_pem:
            out["ssl.certificate.pem"] = sec.cert_pem
            out["ssl.key.pem"] = sec.key_pem
    if sec.uses_sasl:
        out.update({"sasl.mechanism": sec.mechanism, "sasl.username": sec.username, "sasl.password": sec.password})
    return out
