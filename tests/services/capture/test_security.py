"""The client properties file (`--command-config`) and its mapping into each Kafka client library.

Stores are made here with `cryptography` (fast); keytool-made ones are read in test_secured_kafka.py.
"""
from __future__ import annotations

import datetime
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from services.capture import security
from services.capture.security import SecurityConfigError, from_properties, parse_jaas, parse_properties

ROOT = Path(__file__).resolve().parents[3]
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s3cr=t;x";'
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="pw";'


# --- material -------------------------------------------------------------------------------------

def _cert(name: str, key, issuer_name: str, issuer_key, ca: bool):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder()
         .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
         .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    return b.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption, Encoding, PrivateFormat, pkcs12,
    )
    d = tmp_path_factory.mktemp("stores")
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test CA", ca_key, "test CA", ca_key, True)
    client = _cert("client", key, "test CA", ca_key, False)
    pw = b"store-pw"
    (d / "trust.p12").write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [ca],
                                                                        BestAvailableEncryption(pw)))
    (d / "client.p12").write_bytes(pkcs12.serialize_key_and_certificates(b"client", key, client, [ca],
                                                                         BestAvailableEncryption(pw)))
    (d / "ca.pem").write_bytes(ca.public_bytes(Encoding.PEM))
    (d / "client.pem").write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"key-pw"))
                                   + client.public_bytes(Encoding.PEM))
    (d / "store.jks").write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + b"\x00" * 32)
    return d, ca.public_bytes(Encoding.PEM).decode(), client.public_bytes(Encoding.PEM).decode()


def _err(props: dict, match: str):
    with pytest.raises(SecurityConfigError, match=match) as exc:
        from_properties(props, "client.properties")
    assert str(exc.value).startswith("client.properties: ") and "\n" not in str(exc.value)
    return str(exc.value)


# --- the properties file --------------------------------------------------------------------------

def test_java_properties_syntax():
    text = ("# comment\n! also a comment\n\n  security.protocol = SASL_SSL\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
            "    username=\"admin\" \\\n    password=\"p\\u0041ss\";\n"
            "ssl.truststore.location: /a\\ b/c\\:d\nsasl.mechanism SCRAM-SHA-512\nempty=\n")
    assert parse_properties(text) == {
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
                            'password="pAss";',
        "ssl.truststore.location": "/a b/c:d", "sasl.mechanism": "SCRAM-SHA-512", "empty": ""}


def test_jaas_options():
    assert parse_jaas(SCRAM_JAAS) == ("org.apache.kafka.common.security.scram.ScramLoginModule",
                                      {"username": "admin", "password": "s3cr=t;x"})
    assert parse_jaas('m.Login required  username=bob password="a \\"q\\" b" ;')[1] == {
        "username": "bob", "password": 'a "q" b'}
    for bad in ("m.Login required username=\"x\"", "m.Login username=\"x\";", 'm.Login required username="x;'):
        with pytest.raises(ValueError):
            parse_jaas(bad)


def test_scram_maps_to_every_library_without_showing_the_password():
    sec = from_properties({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                           "sasl.jaas.config": SCRAM_JAAS}, "f")
    assert security.librdkafka_config(sec) == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                                               "sasl.username": "admin", "sasl.password": "s3cr=t;x"}
    expected = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_plain_username": "admin", "sasl_plain_password": "s3cr=t;x"}
    assert security.aiokafka_kwargs(sec) == expected
    assert security.kafka_python_kwargs(sec) == expected
    creds = security.faust_credentials(sec)
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
    assert credentials_to_aiokafka_auth(creds) == {**expected, "ssl_context": None}
    assert "s3cr" not in repr(sec) + repr(creds) + sec.describe()
    assert sec.describe() == "SASL_PLAINTEXT SCRAM-SHA-512 as 'admin'"


def test_plaintext_by_default():
    sec = security.load(None)
    assert security.librdkafka_config(sec) == {"security.protocol": "PLAINTEXT"}
    assert security.aiokafka_kwargs(sec) == {"security_protocol": "PLAINTEXT"}
    assert security.faust_credentials(sec) is None


def test_sasl_ssl_plain_with_a_pkcs12_truststore(stores):
    d, ca_pem, _ = stores
    sec = from_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS,
                           "ssl.truststore.location": str(d / "trust.p12"), "ssl.truststore.password": "store-pw",
                           "ssl.truststore.type": "PKCS12"}, "f")
    assert sec.ca_pem == ca_pem
    assert security.librdkafka_config(sec) == {
        "security.protocol": "SASL_SSL", "ssl.endpoint.identification.algorithm": "https", "ssl.ca.pem": ca_pem,
        "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "pw"}
    kw = security.aiokafka_kwargs(sec)
    ctx = kw.pop("ssl_context")
    assert kw == {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
                  "sasl_plain_password": "pw"}
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "test CA"),),)]  # only ours
    kp = security.kafka_python_kwargs(sec)
    assert kp["ssl_check_hostname"] is True and isinstance(kp["ssl_context"], ssl.SSLContext)
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
    auth = credentials_to_aiokafka_auth(security.faust_credentials(sec))
    assert auth["security_protocol"] == "SASL_SSL" and auth["sasl_mechanism"] == "PLAIN"
    assert isinstance(auth["ssl_context"], ssl.SSLContext)


def test_mutual_tls_with_pkcs12_and_pem_keystores(stores):
    d, ca_pem, client_pem = stores
    p12 = from_properties({"security.protocol": "SSL", "ssl.ca.location": str(d / "ca.pem"),
                           "ssl.keystore.location": str(d / "client.p12"), "ssl.keystore.password": "store-pw",
                           "ssl.keystore.type": "PKCS12", "ssl.endpoint.identification.algorithm": ""}, "f")
    pem = from_properties({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                           "ssl.truststore.location": str(d / "ca.pem"), "ssl.keystore.type": "PEM",
                           "ssl.keystore.location": str(d / "client.pem"), "ssl.key.password": "key-pw"}, "f")
    for sec in (p12, pem):
        assert sec.cert_pem.startswith(client_pem) and "BEGIN PRIVATE KEY" in sec.key_pem
        assert "PRIVATE" not in repr(sec)
    conf = security.librdkafka_config(p12)
    assert conf == {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none", "ssl.ca.pem": ca_pem,
                    "ssl.certificate.pem": p12.cert_pem, "ssl.key.pem": p12.key_pem}
    ctx = security.ssl_context(p12)
    assert not ctx.check_hostname and security.kafka_python_kwargs(p12)["ssl_check_hostname"] is False
    auth = security.aiokafka_kwargs(pem)
    assert auth["security_protocol"] == "SSL" and auth["ssl_context"].check_hostname
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
    assert credentials_to_aiokafka_auth(security.faust_credentials(pem))["security_protocol"] == "SSL"


def test_bad_files_are_one_line_naming_the_key(stores, tmp_path):
    d, _, _ = stores
    sasl = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM_JAAS}
    _err({"bootstrap.servers": "x", "security.protocol": "SSL"}, r"bootstrap.servers: not supported")
    _err({"security.protocol": "SASL_SSL", "sasl.jaas.config": SCRAM_JAAS}, r"sasl.mechanism: GSSAPI")
    _err({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, r"sasl.mechanism: OAUTHBEARER")
    _err({"security.protocol": "TLS"}, r"security.protocol: TLS")
    _err({**sasl, "sasl.mechanism": "PLAIN"}, r"sasl.jaas.config: .*ScramLoginModule: PLAIN needs .*PlainLoginModule")
    _err({**sasl, "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
         r"sasl.jaas.config: needs username")
    _err({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, r"sasl.jaas.config: missing")
    _err({"ssl.truststore.location": "/x"}, r"ssl.truststore.location: has no effect with security.protocol=PLAINTEXT")
    _err({"security.protocol": "SSL", "sasl.mechanism": "PLAIN"}, r"sasl.mechanism: has no effect")
    _err({"security.protocol": "SSL", "ssl.truststore.location": str(tmp_path / "nope.p12")},
         r"ssl.truststore.location: cannot read .*nope.p12: No such file")
    jks = _err({"security.protocol": "SSL", "ssl.truststore.location": str(d / "store.jks")},
               r"ssl.truststore.location: .*store.jks is a JKS store")
    assert "keytool -importkeystore" in jks
    msg = _err({"security.protocol": "SSL", "ssl.truststore.location": str(d / "trust.p12"),
                "ssl.truststore.password": "wrong-one"}, r"not a PKCS12 store, or ssl.truststore.password is wrong")
    assert "wrong-one" not in msg
    _err({"security.protocol": "SSL", "ssl.keystore.location": str(d / "client.p12"), "ssl.keystore.password": "store-pw",
          "ssl.key.password": "other"}, r"ssl.key.password: differs")
    _err({"security.protocol": "SSL", "ssl.keystore.location": str(d / "trust.p12"), "ssl.keystore.password": "store-pw",
          "ssl.keystore.type": "PKCS12"}, r"no private key")
    _err({"security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.keystore.location": str(d / "client.pem"),
          "ssl.key.password": "bad"}, r"ssl.key.password: cannot decrypt")
    _err({"security.protocol": "SSL", "ssl.keystore.password": "x"}, r"ssl.keystore.password: set without")
    _err({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "dns"},
         r"ssl.endpoint.identification.algorithm: dns")


@pytest.mark.parametrize("command", [["archive", "--archive-dir", "{tmp}/a"], ["load", "--store", "{tmp}/s.duckdb"],
                                     ["capture", "--metadata-dir", "{meta}"]])
def test_cli_refuses_a_bad_file_with_one_line(tmp_path, command):
    """No broker is needed: the file is refused before any client starts."""
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "quorum-state").write_text("{}")
    bad = tmp_path / "client.properties"
    bad.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.password=hunter2\n")
    args = [a.format(tmp=tmp_path, meta=meta) for a in command]
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", *args, "--bootstrap-server", "127.0.0.1:1",
                          "--command-config", str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [f"ctrlaudit: error: {bad}: sasl.password: not supported "
                                       f"(supported: {', '.join(sorted(security.KNOWN_KEYS))})"]
    assert "hunter2" not in res.stderr


def test_cli_names_a_missing_file(tmp_path):
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "archive", "--bootstrap-server", "127.0.0.1:1",
                          "--command-config", str(tmp_path / "missing.properties")], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [f"ctrlaudit: error: {tmp_path / 'missing.properties'}: cannot read the client "
                                       "properties file: No such file or directory"]


def test_access_watch_stops_on_refusals_only():
    """librdkafka's errors as the error callback receives them (confluent_kafka.KafkaError)."""
    from confluent_kafka import KafkaError

    from services.capture.connect import AccessDenied, AccessWatch
    sec = from_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                           "sasl.jaas.config": SCRAM_JAAS}, "f")
    handshake = KafkaError(KafkaError._TRANSPORT, "sasl_ssl://127.0.0.1:9094/1: SSL handshake failed: certificate verify failed")
    running, strict = AccessWatch("b:1", sec), AccessWatch("b:1", sec, strict=True)
    for w in (running, strict):
        w(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
        w(KafkaError(KafkaError._TRANSPORT, "sasl_ssl://127.0.0.1:9094/1: Connection refused"))
        w(handshake)
    running.check()  # a broker going away mid-handshake is a passing fault for a running client
    with pytest.raises(AccessDenied) as exc:
        strict.check()
    assert str(exc.value) == ("b:1: SASL_SSL SCRAM-SHA-512 as 'admin' refused: SSL handshake failed: "
                              "certificate verify failed")
    running(KafkaError(KafkaError._AUTHENTICATION, "sasl_ssl://h:1/bootstrap: SASL authentication error: bad"))
    with pytest.raises(AccessDenied, match=r"refused: SASL authentication error: bad$"):
        running.check()
