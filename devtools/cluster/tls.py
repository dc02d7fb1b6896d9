"""Certificates for the dev cluster's secured listeners, made with Java's keytool (Java is there anyway).

``make_tls(directory)`` writes, under a throw-away CA:
* ``broker.p12``: the brokers' key and certificate (SAN IP:127.0.0.1 and DNS:localhost, so host-name
  checking stays on), PKCS12;
* ``client.p12``: a client key and certificate for mutual TLS, PKCS12;
* ``truststore.p12``: the CA as a trusted entry (PKCS12, what Java and `--command-config` read);
* ``ca.pem``: the CA certificate as PEM (for ``ssl.truststore.type=PEM`` / ``ssl.ca.location``).
One password for every store. About a dozen keytool runs, a few seconds.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsFiles:
    dir: Path
    password: str
    ca_pem: Path
    truststore: Path
    broker_keystore: Path
    client_keystore: Path


def _keytool(*args: str, stdin: str | None = None) -> str:
    res = subprocess.run(["keytool", "-J-XX:TieredStopAtLevel=1", *args], input=stdin, capture_output=True,
                         text=True, timeout=120)
    if res.returncode != 0:
        raise RuntimeError(f"keytool {args[0]} failed: {(res.stderr or res.stdout).strip()[-300:]}")
    return res.stdout


def _signed_keystore(d: Path, name: str, cn: str, san: str | None, ca: Path, ca_pem: Path, password: str) -> Path:
    store = d / f"{name}.p12"
    common = ["-keystore", str(store), "-storetype", "PKCS12", "-storepass", password]
    _keytool("-genkeypair", "-alias", name, "-keyalg", "RSA", "-keysize", "2048", "-validity", "7",
             "-dname", f"CN={cn}", *common)
    csr = _keytool("-certreq", "-alias", name, *common)
    ext = ["-ext", f"SAN={san}"] if san else []
    signed = _keytool("-gencert", "-alias", "ca", "-keystore", str(ca), "-storetype", "PKCS12", "-storepass",
                      password, "-validity", "7", "-rfc", *ext, stdin=csr)
    # the chain (CA first, then the signed certificate) replaces the self-signed one
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem), *common)
    (d / f"{name}.pem").write_text(signed)
    _keytool("-importcert", "-noprompt", "-alias", name, "-file", str(d / f"{name}.pem"), *common)
    return store


DEFAULT_PASSWORD = "changeit-test"


def make_tls(directory: Path, password: str = DEFAULT_PASSWORD) -> TlsFiles:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca = d / "ca.p12"
    _keytool("-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048", "-validity", "7",
             "-dname", "CN=ctrlaudit test CA", "-ext", "bc:c", "-keystore", str(ca), "-storetype", "PKCS12",
             "-storepass", password)
    ca_pem = d / "ca.pem"
    ca_pem.write_text(_keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", str(ca), "-storetype", "PKCS12",
                               "-storepass", password))
    truststore = d / "truststore.p12"
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem), "-keystore", str(truststore),
             "-storetype", "PKCS12", "-storepass", password)
    broker = _signed_keystore(d, "broker", "localhost", "ip:127.0.0.1,dns:localhost", ca, ca_pem, password)
    client = _signed_keystore(d, "client", "ctrlaudit-client", None, ca, ca_pem, password)
    return TlsFiles(d, password, ca_pem, truststore, broker, client)


def client_properties(tls: TlsFiles, directory: Path, scram: tuple[str, str], plain: tuple[str, str]) -> dict[str, Path]:
    """`--command-config` files for the secure dev cluster: SASL_SSL with SCRAM-SHA-512 and with PLAIN (both
    against the SASL_SSL listener), and mutual TLS (the SSL listener)."""
    trust = f"ssl.truststore.location={tls.truststore}\nssl.truststore.password={tls.password}\n"
    module = "org.apache.kafka.common.security"
    texts = {
        "scram": f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={module}.scram."
                 f"ScramLoginModule required username=\"{scram[0]}\" password=\"{scram[1]}\";\n{trust}",
        "plain": f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config={module}.plain."
                 f"PlainLoginModule required username=\"{plain[0]}\" password=\"{plain[1]}\";\n{trust}",
        "mtls": f"security.protocol=SSL\n{trust}ssl.keystore.location={tls.client_keystore}\n"
                f"ssl.keystore.type=PKCS12\nssl.keystore.password={tls.password}\n",
    }
    out = {}
    for name, text in texts.items():
        out[name] = Path(directory) / f"client-{name}.properties"
        out[name].write_text(text)
    return out
