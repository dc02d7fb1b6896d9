"""KafkaTools.format_storage with Kafka's own kafka-storage: a cluster id that begins with '-' (a ZooKeeper-mode
cluster's own id can) is formatted, not read as an option (a migration test failed so in CI)."""
from __future__ import annotations

import pytest

from devtools.cluster.testing import java_available

pytestmark = [pytest.mark.kafka, pytest.mark.skipif(not java_available(), reason="needs java")]


@pytest.mark.parametrize("cluster_id", ["-AbCdEfGhIjKlMnOpQrStUw", "AbCdEfGhIjKlMnOpQrStUw"])
def test_a_cluster_id_beginning_with_a_dash_is_formatted(tmp_path, cluster_id):
    from devtools.cluster.tools import KafkaTools

    props = tmp_path / "controller.properties"
    props.write_text("process.roles=controller\nnode.id=3000\ncontroller.quorum.voters=3000@127.0.0.1:19999\n"
                     "listeners=CONTROLLER://127.0.0.1:19999\ncontroller.listener.names=CONTROLLER\n"
                     f"log.dirs={tmp_path / 'data'}\n")
    KafkaTools("3.9", workdir=tmp_path).format_storage(cluster_id, props, "--release-version", "3.9")
    assert f"cluster.id={cluster_id}\n" in (tmp_path / "data" / "meta.properties").read_text()
