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


CTRLAUDIT_SERVICES = ("capture", "watch", "sampler", "archiver")


def test_every_service_has_a_healthcheck_and_a_restart_policy(spec):
    for name, svc in spec["services"].items():
        assert svc.get("restart") in ("unless-stopped", "always", "on-failure"), name
        check = svc.get("healthcheck", {}).get("test")
        assert check, f"{name}: no healthcheck"
    for name in CTRLAUDIT_SERVICES:  # the workers wait for healthy brokers
        deps = spec["services"][name]["depends_on"]
        assert {k: v["condition"] for k, v in deps.items()} == {f"kafka-{i}": "service_healthy" for i in (1, 2, 3)}
        assert spec["services"][name]["healthcheck"]["test"] == ["CMD", "python", "-m", "services.capture", "health"]


def test_workers_run_from_the_image_built_here_and_install_nothing_at_start(spec):
    for name in CTRLAUDIT_SERVICES:
        svc = spec["services"][name]
        assert svc["build"] == "." and svc["image"] == "ctrlaudit:local", name
        assert "pip" not in svc["command"], f"{name} installs at start-up"
        assert not any(v.split(":")[0] in (".", "./") for v in svc.get("volumes", [])), f"{name} mounts the source"


def _listeners(value: str) -> dict[str, str]:
    return dict(item.split("://", 1) for item in value.split(","))


def test_two_listeners_one_advertised_to_the_host(spec):
    for i in (1, 2, 3):
        k = spec["services"][f"kafka-{i}"]
        env = {**k["environment"]}
        listeners = _listeners(env["KAFKA_LISTENERS"])
        advertised = _listeners(env["KAFKA_ADVERTISED_LISTENERS"])
        protocols = dict(p.split(":") for p in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
        assert set(listeners) <= set(protocols) and set(advertised) <= set(protocols)
        assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
        assert advertised["INTERNAL"] == f"kafka-{i}:{listeners['INTERNAL'].lstrip(':')}"
        # the host reaches EXTERNAL through the published port it is advertised with
        host, port = advertised["EXTERNAL"].split(":")
        assert host == "localhost"
        published = {p.split(":")[1]: p.split(":")[2] for p in k["ports"]}
        assert published[port] == listeners["EXTERNAL"].lstrip(":")


def test_the_build_context_holds_what_the_dockerfile_copies():
    dockerfile = (ROOT / "Dockerfile").read_text().splitlines()
    copied = [w for line in dockerfile if line.startswith("COPY") for w in line.split()[1:-1]]
    assert {"pyproject.toml", "setup.py", "schemas", "services", "replay", "checks", "ctrlaudit"} <= set(copied)
    ignore = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*"  # everything out, then what is needed back in
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for path in copied:
        assert (ROOT / path).exists(), path
        assert path in allowed, f"{path} is copied but .dockerignore leaves it out of the context"
    assert any(line.startswith("RUN pip install") for line in dockerfile)  # at build time
    # the package data the install needs is in the context (the Avro schemas)
    assert list((ROOT / "schemas" / "avro").glob("*.avsc"))


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


def test_the_workers_healthcheck_fails_in_one_line_when_kafka_is_away():
    import os
    import sys

    done = subprocess.run([sys.executable, "-m", "services.capture", "health"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={**os.environ, "CTRLAUDIT_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "127.0.0.1:1" in done.stderr
