"""Redaction by Kafka's own config types (PASSWORD), the per-listener forms, the fallback suffixes and the
user's patterns; and that the committed PASSWORD list is what the pinned Kafka jars declare."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from services.normalize.password_configs import PASSWORD_CONFIGS
from services.normalize.redaction import (FALLBACK_SUFFIXES, REDACTED, RedactionPatternError, forms, is_sensitive,
                                          redact)

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "kafka" / "gen_password_configs.py"

KAFKA_PASSWORDS = [
    "sasl.oauthbearer.assertion.private.key.passphrase",  # 4.x; missed by the old substring rule
    "sasl.oauthbearer.client.credentials.client.secret", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.password", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
    "sasl.jaas.config", "password.encoder.secret", "delegation.token.secret.key", "zookeeper.ssl.keystore.password",
]
PER_LISTENER = [
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", "listener.name.ssl.ssl.keystore.password",
    "listener.name.internal.ssl.key.password", "LISTENER.NAME.EXTERNAL.PLAIN.SASL.JAAS.CONFIG",
    "listener.name.client.oauthbearer.sasl.oauthbearer.assertion.private.key.passphrase",
]
# names no Kafka ConfigDef declares (plugins' own): the always-on suffixes catch them
FALLBACK = ["my.plugin.password", "connector.api.secret", "rsm.config.s3.secret", "custom.auth.token",
            "rsm.config.gcs.credentials", "my.signing.key", "custom.keystore.passphrase"]
# look-alikes Kafka declares with a type other than PASSWORD (checked against the jars below)
LOOK_ALIKES = [
    "ssl.keystore.type", "ssl.truststore.type", "ssl.keystore.location", "ssl.keymanager.algorithm",
    "password.encoder.iterations", "password.encoder.keyfactory.algorithm", "password.encoder.cipher.algorithm",
    "password.encoder.key.length", "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.client.credentials.client.id", "sasl.oauthbearer.token.endpoint.url",
    "delegation.token.max.lifetime.ms", "sasl.mechanism.inter.broker.protocol", "ssl.endpoint.identification.algorithm",
    "sasl.kerberos.service.name", "min.insync.replicas", "unclean.leader.election.enable",
]
NOT_SENSITIVE = [*LOOK_ALIKES, "listener.name.sasl_ssl.scram-sha-512.sasl.login.callback.handler.class",
                 "listener.name.internal.ssl.keystore.type"]


@pytest.fixture(autouse=True)
def no_user_patterns(monkeypatch):
    monkeypatch.delenv("CTRLAUDIT_REDACT_PATTERNS", raising=False)


@pytest.mark.parametrize("name", KAFKA_PASSWORDS + PER_LISTENER + FALLBACK)
def test_sensitive(name):
    assert is_sensitive(name)
    assert redact(name, "hunter2", "old") == (REDACTED, REDACTED, True)


def test_a_deleted_or_first_value_stays_null():
    # the record's null (key deleted / not set before) is not a secret: it is kept as the record says it
    assert redact("ssl.keystore.password", None, "hunter2") == (None, REDACTED, True)
    assert redact("ssl.keystore.password", "hunter2", None) == (REDACTED, None, True)


@pytest.mark.parametrize("name", NOT_SENSITIVE)
def test_not_sensitive(name):
    assert not is_sensitive(name)
    assert redact(name, "v", None) == ("v", None, False)


@pytest.mark.parametrize("config", sorted(PASSWORD_CONFIGS))
def test_every_kafka_password_config_in_its_per_listener_forms(config):
    assert is_sensitive(config) and is_sensitive(config.upper())
    assert is_sensitive(f"listener.name.external.{config}")
    assert is_sensitive(f"listener.name.sasl_ssl.scram-sha-256.{config}")


def test_per_listener_forms():
    assert forms("min.insync.replicas") == ("min.insync.replicas",)
    assert forms("listener.name.EXT.plain.sasl.jaas.config") == (
        "listener.name.ext.plain.sasl.jaas.config", "plain.sasl.jaas.config", "sasl.jaas.config")


def test_user_patterns_add_to_kafkas_list_and_the_fallback(monkeypatch):
    monkeypatch.setenv("CTRLAUDIT_REDACT_PATTERNS", "follower.*, re:^x-.*-token-v\\d$ ,, my.custom.*")
    assert is_sensitive("follower.replication.throttled.replicas")
    assert is_sensitive("X-API-TOKEN-v2")  # regexes are case-insensitive, like the names
    assert not is_sensitive("x-api-token-vv")
    assert is_sensitive("listener.name.ext.my.custom.setting")  # patterns see the per-listener reduction too
    assert is_sensitive("my.plugin.password")  # the fallback stays
    assert is_sensitive("ssl.keystore.password")  # Kafka's own PASSWORD configs always are
    assert not is_sensitive("leader.replication.throttled.replicas")


def test_globs_are_globs_not_regexes(monkeypatch):
    monkeypatch.setenv("CTRLAUDIT_REDACT_PATTERNS", "acme.key?,acme.v1.*")
    assert is_sensitive("acme.key1") and is_sensitive("acme.v1.anything")
    assert not is_sensitive("acme.keys.count") and not is_sensitive("acme-v1-x")  # '.' is a dot, '?' one char


@pytest.mark.parametrize("spec, says", [
    ("re:([", r"'re:\(\[' is not a valid regex"),
    ("ok.*, re:*password", r"'re:\*password' is not a valid regex"),
    ("re:", r"'re:' is an empty regex"),
])
def test_a_bad_pattern_is_one_line(monkeypatch, spec, says):
    monkeypatch.setenv("CTRLAUDIT_REDACT_PATTERNS", spec)
    with pytest.raises(RedactionPatternError, match=f"^CTRLAUDIT_REDACT_PATTERNS: {says}") as info:
        is_sensitive("anything")
    assert "\n" not in str(info.value)


def test_settings_refuse_a_bad_pattern_at_start(monkeypatch):
    from services.capture.settings import Settings

    monkeypatch.setenv("CTRLAUDIT_REDACT_PATTERNS", "re:(")
    with pytest.raises(RedactionPatternError, match="CTRLAUDIT_REDACT_PATTERNS"):
        Settings()


# --- the generator and the jars -------------------------------------------------------------------------


def _generator(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GENERATOR), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env={**os.environ, **env})


def test_the_generator_without_java_or_jars_is_one_line(tmp_path):
    no_jars = _generator({"CTRLAUDIT_KAFKA_CACHE": str(tmp_path / "none"), "PATH": str(tmp_path)}, "--check")
    assert no_jars.returncode == 2 and "mvn not found" in no_jars.stderr
    for version in ("3.9.2", "4.3.1"):  # a complete-looking cache, so only Java is missing
        (tmp_path / "cache" / version / "lib").mkdir(parents=True)
        (tmp_path / "cache" / version / "lib" / ".complete").touch()
    no_java = _generator({"CTRLAUDIT_KAFKA_CACHE": str(tmp_path / "cache"), "PATH": str(tmp_path)}, "--check")
    assert no_java.returncode == 2 and "java not found" in no_java.stderr
    for done in (no_jars, no_java):
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def generator():
    if shutil.which("java") is None:
        pytest.skip("needs Java to read Kafka's ConfigDefs")
    spec = importlib.util.spec_from_file_location("gen_password_configs", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.kafka
def test_the_committed_list_is_what_the_kafka_jars_declare(generator):
    """Re-runs kafka/PasswordConfigs.java on the pinned jars (broker, topic, client, security and Connect
    ConfigDefs) and compares with the committed file, byte for byte."""
    assert (ROOT / "services" / "normalize" / "password_configs.py").read_text() == generator.render()
    assert "sasl.oauthbearer.assertion.private.key.passphrase" in generator.password_configs("4.3.1")


@pytest.mark.kafka
def test_the_fallback_hides_nothing_kafka_declares_visible(generator):
    """The suffixes catch plugins' secrets, not a config Kafka declares with another type; and the
    look-alikes above are what these tests say: declared by Kafka, and not PASSWORD."""
    declared: dict[str, set[str]] = {}
    for version in generator.DEFAULT_PINS.values():
        for name, kinds in generator.declared_configs(version).items():
            declared.setdefault(name, set()).update(kinds)
    visible = {n for n, kinds in declared.items() if "PASSWORD" not in kinds}
    assert len(visible) > 300  # the whole of the broker's, topics' and clients' ConfigDefs were read
    assert sorted(n for n in visible if n.endswith(FALLBACK_SUFFIXES)) == []
    assert sorted(n for n in visible if is_sensitive(n)) == []
    assert [n for n in LOOK_ALIKES if n not in visible] == []
