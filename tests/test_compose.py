"""docker-compose.yml agrees with the code: services, volumes, ports and CTRLAUDIT_* settings."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from services.capture.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def spec() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_services(spec):
    assert {"kafka-1", "kafka-2", "kafka-3", "capture", "sampler", "archiver"} <= set(spec["services"])
    for i in (1, 2, 3):
        k = spec["services"][f"kafka-{i}"]
        assert k["image"].startswith("apache/kafka:")
        assert k["environment"]["KAFKA_NODE_ID"] == str(i)
        assert "broker,controller" == k["environment"]["KAFKA_PROCESS_ROLES"]
        assert any(p.startswith("127.0.0.1:") for p in k["ports"])  # Kafka only on loopback


def test_quorum_voters_name_the_three_nodes(spec):
    voters = spec["services"]["kafka-1"]["environment"]["KAFKA_CONTROLLER_QUORUM_VOTERS"]
    assert voters == ",".join(f"{i}@kafka-{i}:9093" for i in (1, 2, 3))


def test_capture_env_is_the_settings(spec):
    known = Settings.env_names()
    for name in ("capture", "watch", "sampler", "archiver"):
        env = spec["services"][name]["environment"]
        unknown = {k for k in env if k.startswith("CTRLAUDIT_")} - known
        assert not unknown, f"{name}: {unknown} are not settings"
        hosts = env["CTRLAUDIT_BOOTSTRAP_SERVERS"].split(",")
        assert hosts == [f"kafka-{i}:9092" for i in (1, 2, 3)]
        s = Settings()  # defaults (no env in this test) are what compose sets
        assert env["CTRLAUDIT_EVENTS_TOPIC"] == s.events_topic and env["CTRLAUDIT_RAW_TOPIC"] == s.raw_topic


def test_capture_reads_a_controller_metadata_dir_read_only(spec):
    cap = spec["services"]["capture"]
    mount = next(v for v in cap["volumes"] if v.startswith("kafka-1-data:"))
    assert mount.endswith(":ro")
    target = mount.split(":")[1]
    log_dirs = spec["services"]["kafka-1"]["environment"]["KAFKA_LOG_DIRS"]
    assert spec["services"]["kafka-1"]["volumes"] == [f"kafka-1-data:{log_dirs}"]
    assert cap["environment"]["CTRLAUDIT_METADATA_DIR"] == f"{target}/__cluster_metadata-0"
    assert set(spec["volumes"]) >= {"kafka-1-data", "kafka-2-data", "kafka-3-data"}


def test_normalize_and_watch_run_as_two_workers(spec):
    roles = {name: Settings().replace(roles=spec["services"][name]["environment"]["CTRLAUDIT_ROLES"])
             for name in ("capture", "watch")}
    assert roles["capture"].role_set == {"normalize"} and roles["watch"].role_set == {"watch"}
    # two consumer groups: a watch-only worker in the normalizer's group could be handed the raw topic
    assert roles["capture"].worker_app_id != roles["watch"].worker_app_id
    assert "python -m services.capture worker" in spec["services"]["watch"]["command"]


def test_commands_are_the_capture_entry_points(spec):
    assert "python -m services.capture worker" in spec["services"]["capture"]["command"]
    assert "python -m services.capture sampler" in spec["services"]["sampler"]["command"]
    assert "python -m services.capture archiver" in spec["services"]["archiver"]["command"]
    archive_mount = spec["services"]["archiver"]["volumes"][-1]
    assert archive_mount.endswith(":" + spec["services"]["archiver"]["environment"]["CTRLAUDIT_ARCHIVE_DIR"])


def _compose_cmd() -> list[str] | None:
    if shutil.which("docker"):
        r = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if r.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_docker_compose_config_accepts_it():
    cmd = _compose_cmd()
    if cmd is None:
        pytest.skip("no docker compose / docker-compose client")
    r = subprocess.run(cmd + ["-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
