"""docker-compose.yml agrees with the code: services, volumes, ports and CTRLAUDIT_* settings."""
from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from services.capture.settings import Settings
from devtools.cluster.jars import DEFAULT_PINS

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


def _dockerfile() -> list[str]:
    return [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]


def _copied() -> list[str]:
    """The context paths the Dockerfile COPYs (sources of every COPY; the last word is the destination)."""
    return [w for line in _dockerfile() if line.startswith("COPY ") for w in line.split()[1:-1]]


def _in_context(path: str, rules: list[str]) -> bool:
    """Docker's .dockerignore semantics, as far as this file uses them: rules in order, the last one that
    matches the path or one of its parent directories wins, `!` puts back, `**` spans directories."""
    included = True
    parts = path.split("/")
    for rule in rules:
        negate, pattern = rule.startswith("!"), rule.lstrip("!").strip("/")
        regex = re.compile("".join(".*" if tok == "**" else "[^/]*" if tok == "*" else "[^/]" if tok == "?"
                                   else re.escape(tok) for tok in re.split(r"(\*\*|\*|\?)", pattern)))
        if any(regex.fullmatch("/".join(parts[:i])) for i in range(1, len(parts) + 1)):
            included = negate
    return included


def test_the_build_context_holds_what_the_dockerfile_copies():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in meta["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = _copied()
    # the install needs every package pyproject.toml names, its readme and setup.py (the native extension)
    assert packages | {meta["project"]["readme"], "pyproject.toml", "setup.py"} <= set(copied)
    rules = [line for line in (ROOT / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    for path in copied:
        assert (ROOT / path).exists(), path
        files = [f for f in tracked if f == path or f.startswith(path + "/")]
        assert files, f"{path}: nothing tracked to copy"
        left_out = [f for f in files if not _in_context(f, rules)]
        assert not left_out, f"COPY {path}, but .dockerignore leaves {left_out[:3]} out of the context"
    # what the build uses beyond Python: the Avro schemas (package data) and the native decoder's source
    for needed in ("schemas/avro/*.avsc", "schemas/_native/*.c"):
        found = list(ROOT.glob(needed))
        assert found and all(_in_context(str(f.relative_to(ROOT)), rules) for f in found), needed
    # and what must never go in: local environments, Kafka jars, stores, archives, built objects
    for outside in (".venv/bin/python", ".kafka-cache/4.3.1/lib/kafka-clients.jar", "archive/c/x.avro",
                    "s.duckdb", "schemas/_flatdecode.cpython-311-x86_64-linux-gnu.so", ".git/HEAD",
                    "services/__pycache__/x.pyc"):
        assert not _in_context(outside, rules), outside
    assert any(line.startswith("RUN pip install") for line in _dockerfile())  # at build time
    assert not any("pip" in line for line in _dockerfile() if line.split(" ")[0] in ("CMD", "ENTRYPOINT"))


def test_dockerignore_semantics_of_the_test():
    # the matcher above is itself checked, so that a wrong one cannot pass a context that would fail
    rules = ["*", "!services/", "**/__pycache__", "!keep/**/*.py"]
    assert _in_context("services/x.py", rules) and not _in_context("other/x.py", rules)
    assert not _in_context("services/__pycache__/x.pyc", rules)
    assert _in_context("keep/a/b.py", rules) and not _in_context("keep/a/b.txt", rules)


def test_the_brokers_run_a_pinned_kafka_version(spec):
    tags = {spec["services"][f"kafka-{i}"]["image"] for i in (1, 2, 3)}
    assert len(tags) == 1
    assert tags.pop().split(":")[1] in DEFAULT_PINS.values()  # the version the tests and the normalizer know


def _canonical_kafka_uuid(value: str) -> bool:
    """As Kafka's Uuid.fromString/toString: base64url without padding of 16 bytes, and back unchanged."""
    try:
        raw = base64.urlsafe_b64decode(value + "==")
    except ValueError:
        return False
    return len(raw) == 16 and base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == value


def test_one_cluster_id_for_the_brokers_and_the_workers(spec):
    assert not _canonical_kafka_uuid("ctrlaudit-compose-0001")  # Kafka reads it back as ...000w
    ids = {spec["services"][f"kafka-{i}"]["environment"]["CLUSTER_ID"] for i in (1, 2, 3)}
    assert len(ids) == 1
    cluster = ids.pop()
    assert _canonical_kafka_uuid(cluster), cluster
    for name in CTRLAUDIT_SERVICES:  # events and offset samples are filed under the id Kafka formats with
        assert spec["services"][name]["environment"]["CTRLAUDIT_CLUSTER_ID"] == cluster, name


def test_each_workers_environment_is_valid_settings(spec, monkeypatch):
    for name in CTRLAUDIT_SERVICES:
        env = spec["services"][name]["environment"]
        for key in Settings.env_names():
            monkeypatch.delenv(key, raising=False)
        for key, value in env.items():
            assert isinstance(value, str), f"{name}: {key} is {value!r}: compose wants strings"
            monkeypatch.setenv(key, value)
        s = Settings()  # raises SettingsError (one line) on a value the worker would refuse at start
        assert s.bootstrap_servers == env["CTRLAUDIT_BOOTSTRAP_SERVERS"]


def test_nothing_mounts_the_source(spec):
    """The workers run what the image installed: no service bind-mounts the checkout or a package of it
    (a mounted source would shadow the install, and `pip install` of it at start is what this replaces)."""
    source = {(ROOT / p).resolve() for p in _copied()} | {ROOT.resolve()}
    for name, svc in spec["services"].items():
        for volume in svc.get("volumes", []):
            host = volume.split(":")[0]
            if host.startswith((".", "/")):  # a bind mount, not a named volume
                assert (ROOT / host).resolve() not in source, f"{name} mounts {host}"
        for key in ("command", "entrypoint"):
            assert "pip" not in str(svc.get(key, "")), f"{name}: {key} installs at start-up"


def test_listeners_agree_with_the_quorum_and_the_workers(spec):
    published = []
    for i in (1, 2, 3):
        env = spec["services"][f"kafka-{i}"]["environment"]
        listeners = _listeners(env["KAFKA_LISTENERS"])
        advertised = _listeners(env["KAFKA_ADVERTISED_LISTENERS"])
        controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
        assert controller in listeners and controller not in advertised  # the quorum's own, not for clients
        voters = dict(v.split("@") for v in env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(","))
        assert voters[str(i)] == f"kafka-{i}:{listeners[controller].lstrip(':')}"
        ports = spec["services"][f"kafka-{i}"]["ports"]
        # only EXTERNAL is published: INTERNAL and CONTROLLER stay inside the compose network
        assert [p.rsplit(":", 1)[1] for p in ports] == [listeners["EXTERNAL"].lstrip(":")]
        published += [p.split(":")[1] for p in ports]
    assert len(set(published)) == 3  # one host port per broker
    internal = [_listeners(spec["services"][f"kafka-{i}"]["environment"]["KAFKA_ADVERTISED_LISTENERS"])["INTERNAL"]
                for i in (1, 2, 3)]
    for name in CTRLAUDIT_SERVICES:  # the workers bootstrap from what the brokers advertise inside
        assert spec["services"][name]["environment"]["CTRLAUDIT_BOOTSTRAP_SERVERS"].split(",") == internal


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


@pytest.mark.slow
def test_the_workers_healthcheck_fails_in_one_line_when_kafka_is_away():
    import os
    import sys

    done = subprocess.run([sys.executable, "-m", "services.capture", "health"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={**os.environ, "CTRLAUDIT_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "127.0.0.1:1" in done.stderr
