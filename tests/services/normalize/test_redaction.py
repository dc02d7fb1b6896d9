"""Redaction by Kafka's own config types (PASSWORD), the per-listener forms, and the user's patterns."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from services.normalize import redaction
from services.normalize.redaction import RedactionPatternError, is_sensitive, redact

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", [
    "sasl.oauthbearer.assertion.private.key.passphrase",  # missed by the old substring rule
    "sasl.oauthbearer.client.credentials.client.secret", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.password", "ssl.keystore.key", "ssl.keystore.certificate.chain", "sasl.jaas.config",
    "password.encoder.secret", "delegation.token.secret.key", "zookeeper.ssl.keystore.password",
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", "listener.name.ssl.ssl.keystore.password",
    "listener.name.internal.ssl.key.password", "LISTENER.NAME.EXTERNAL.PLAIN.SASL.JAAS.CONFIG",
    "my.plugin.password", "connector.api.secret",  # the default patterns: plugins' own secrets
])
def test_sensitive(name):
    assert is_sensitive(name)
    assert redact(name, "hunter2", "old") == ("[redacted]", "[redacted]", True)


@pytest.mark.parametrize("name", [
    "min.insync.replicas", "unclean.leader.election.enable", "ssl.keystore.type", "ssl.truststore.type",
    "ssl.key.algorithm", "password.encoder.iterations", "password.encoder.keyfactory.algorithm",
    "sasl.mechanism.inter.broker.protocol", "ssl.endpoint.identification.algorithm", "sasl.kerberos.service.name",
    "listener.name.sasl_ssl.scram-sha-512.sasl.login.callback.handler.class", "delegation.token.max.lifetime.ms",
    "sasl.oauthbearer.token.endpoint.url",
])
def test_not_sensitive(name):
    assert not is_sensitive(name)
    assert redact(name, "v", None) == ("v", None, False)


def test_user_patterns_replace_the_defaults(monkeypatch):
    monkeypatch.setenv("CTRLAUDIT_REDACT_PATTERNS", "follower.*, re:^x-.*-token$")
    assert is_sensitive("follower.replication.throttled.replicas")
    assert is_sensitive("x-api-token")
    assert not is_sensitive("my.plugin.password")  # the defaults are replaced
    assert is_sensitive("ssl.keystore.password")  # Kafka's own PASSWORD configs always are


def test_a_bad_regex_is_one_line(monkeypatch):
    monkeypatch.setenv("CTRLAUDIT_REDACT_PATTERNS", "re:([")
    with pytest.raises(RedactionPatternError, match=r"CTRLAUDIT_REDACT_PATTERNS: 're:\(\[' is not a valid regex"):
        is_sensitive("anything")


@pytest.mark.kafka
@pytest.mark.skipif(shutil.which("java") is None, reason="needs Java to read Kafka's ConfigDefs")
def test_the_list_is_what_the_kafka_jars_declare():
    """The committed list equals what kafka/PasswordConfigs.java reads from the pinned jars."""
    done = subprocess.run([sys.executable, str(ROOT / "kafka" / "gen_password_configs.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sasl.oauthbearer.assertion.private.key.passphrase" in redaction.PASSWORD_CONFIGS
