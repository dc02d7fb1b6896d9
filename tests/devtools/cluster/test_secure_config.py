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


def test_a_zookeeper_mode_broker_has_the_secured_listeners_without_a_controller_listener():
    from devtools.cluster.config import scram_zookeeper_args, zk_server_properties

    sec = SecureListeners(Path("/t/broker.p12"), Path("/t/trust.p12"), "pw", scram_users={"alice": "a-s"},
                          plain_users={"bob": "b-s"})
    node = NodeLayout(1, Path("/c/node1"), *ports_for(19000, 1))
    p = _props(zk_server_properties(ClusterSettings("3.9.2", secure=sec), node, "127.0.0.1:19001"))
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:19102,SASL_SSL://127.0.0.1:19104,SSL://127.0.0.1:19105"
    assert p["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL"
    assert p["inter.broker.listener.name"] == "PLAINTEXT" and p["sasl.enabled.mechanisms"] == "SCRAM-SHA-512,PLAIN"
    assert "CONTROLLER" not in p["advertised.listeners"] and "controller.listener.names" not in p
    # the SCRAM user goes to ZooKeeper before the brokers start (kafka-configs --zookeeper)
    assert scram_zookeeper_args("127.0.0.1:19001", "alice", "a-s") == [
        "--zookeeper", "127.0.0.1:19001", "--alter", "--entity-type", "users", "--entity-name", "alice",
        "--add-config", "SCRAM-SHA-512=[password=a-s]"]
    plain = _props(zk_server_properties(ClusterSettings("3.9.2"), node, "127.0.0.1:19001"))
    assert plain["listeners"] == "PLAINTEXT://127.0.0.1:19102" and "sasl.enabled.mechanisms" not in plain


@pytest.mark.parametrize("version", ["4.3.1", "3.9.2"])
def test_request_logs_put_the_request_and_authorizer_loggers_at_debug_in_their_own_files(tmp_path, version):
    from devtools.cluster.manager import KafkaCluster

    def node_log_config(request_logs: bool) -> str:
        c = KafkaCluster.__new__(KafkaCluster)  # no jars needed: only the settings are read
        c.settings = ClusterSettings(version, request_logs=request_logs)
        return c._node_log_config_text()

    on, off = node_log_config(True), node_log_config(False)
    assert on.startswith(off) and "kafka.request.logger" not in off and "kafka-request.log" not in off
    for logger, fname in (("kafka.request.logger", "kafka-request.log"),
                          ("kafka.authorizer.logger", "kafka-authorizer.log")):
        assert fname in on
        if version.startswith("3."):
            assert f"log4j.logger.{logger}=DEBUG, " in on and f"log4j.additivity.{logger}=false" in on
        else:
            key = logger.split(".")[1]
            assert f"logger.{key}.name = {logger}" in on and f"logger.{key}.level = DEBUG" in on
