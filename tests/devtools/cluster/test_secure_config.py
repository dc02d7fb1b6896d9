"""The dev cluster's secure variant: the listeners and the SCRAM users it formats with."""
from __future__ import annotations

from pathlib import Path

import pytest

from devtools.cluster.config import (
    ClusterSettings, NodeLayout, SecureListeners, ports_for, scram_format_args, server_properties,
)


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_secure_listeners_beside_plaintext():
    sec = SecureListeners(Path("/t/broker.p12"), Path("/t/trust.p12"), "pw", scram_users={"admin": "a-s"},
                          plain_users={"alice": "b-s", "bob": "c-s"})
    node = NodeLayout(2, Path("/c/node2"), *ports_for(19000, 2))
    p = _props(server_properties(ClusterSettings("4.3.1", secure=sec), node, "v"))
    assert (node.plaintext_port, node.sasl_ssl_port, node.ssl_port) == (19202, 19204, 19205)
    assert p["listeners"] == ("PLAINTEXT://127.0.0.1:19202,CONTROLLER://127.0.0.1:19203,"
                              "SASL_SSL://127.0.0.1:19204,SSL://127.0.0.1:19205")
    assert "CONTROLLER" not in p["advertised.listeners"] and "SASL_SSL://127.0.0.1:19204" in p["advertised.listeners"]
    assert p["inter.broker.listener.name"] == "PLAINTEXT"
    assert p["sasl.enabled.mechanisms"] == "SCRAM-SHA-512,PLAIN"
    assert p["listener.name.ssl.ssl.client.auth"] == "required"
    assert p["listener.name.sasl_ssl.plain.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="b-s" user_bob="c-s";')
    assert scram_format_args(sec) == ["--add-scram", "SCRAM-SHA-512=[name=admin,password=a-s]"]
    plain = _props(server_properties(ClusterSettings("4.3.1"), node, "v"))
    assert "SASL_SSL" not in plain["listeners"] and "ssl.keystore.location" not in plain


def test_a_plain_password_that_needs_escaping_is_refused():
    sec = SecureListeners(Path("k"), Path("t"), "pw", plain_users={"x": 'a"b'})
    with pytest.raises(ValueError, match="quote"):
        server_properties(ClusterSettings("4.3.1", secure=sec), NodeLayout(1, Path("/c"), 1, 2), "v")
