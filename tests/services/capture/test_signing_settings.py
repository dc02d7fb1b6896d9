"""Signing's settings and keys at start: a key that cannot be used, or a bad interval, is one line and a non-zero
exit from the worker, `ctrlaudit capture` and `ctrlaudit archive`, before anything connects; the defaults are the
documented ones."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctrlaudit.cli import app
from services.capture.settings import Settings

ROOT = Path(__file__).resolve().parents[3]


def test_the_defaults(monkeypatch):
    for name in ("SIGNING_KEY", "CHECKPOINTS_TOPIC", "SIGN_EVERY_EVENTS", "SIGN_EVERY_SECONDS"):
        monkeypatch.delenv("CTRLAUDIT_" + name, raising=False)
    s = Settings()
    assert (s.signing_key, s.checkpoints_topic, s.sign_every_events, s.sign_every_seconds) == (
        "", "ctrlaudit.checkpoints", 10_000, 60.0)
    assert s.signers == []



@pytest.fixture
def keys(tmp_path):
    r = CliRunner().invoke(app, ["keygen", "capture.example/test", "--out", str(tmp_path / "k")])
    assert r.exit_code == 0, r.output
    loose = tmp_path / "loose"
    loose.write_text((tmp_path / "k").read_text())
    loose.chmod(0o644)
    garbage = tmp_path / "garbage"
    garbage.write_text("PRIVATE+KEY+x+00000000+AAAA\n")
    garbage.chmod(0o600)
    return {"good": tmp_path / "k", "loose": loose, "garbage": garbage, "missing": tmp_path / "nope"}


@pytest.mark.parametrize("which, says", [
    ("loose", "the signing key is readable by others (mode 0644); chmod 600 it"),
    ("garbage", "signer key 'x'"),
    ("missing", "cannot read the signing key"),
])
def test_the_worker_refuses_a_key_it_cannot_use_in_one_line(keys, which, says):
    r = subprocess.run([sys.executable, "-m", "services.capture", "worker"], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, CTRLAUDIT_SIGNING_KEY=str(keys[which]), PYTHONPATH=str(ROOT),
                                CTRLAUDIT_BOOTSTRAP_SERVERS="127.0.0.1:1"), timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"ctrlaudit capture: {keys[which]}: ") and says in line


@pytest.mark.parametrize("command", [
    ["capture", "--metadata-dir", "{meta}", "--bootstrap-server", "127.0.0.1:1"],
    ["archive", "--archive-dir", "{out}", "--bootstrap-server", "127.0.0.1:1"],
])
@pytest.mark.parametrize("which", ["loose", "garbage", "missing"])
def test_capture_and_archive_refuse_a_key_they_cannot_use_before_connecting(keys, tmp_path, command, which):
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "quorum-state").write_text("{}")
    args = [a.format(meta=meta, out=tmp_path / "archive") for a in command] + ["--signing-key", str(keys[which])]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert str(keys[which]) in r.output and not (tmp_path / "archive").exists()


def test_archive_refuses_a_trusted_key_that_is_not_one(tmp_path):
    r = CliRunner().invoke(app, ["archive", "--archive-dir", str(tmp_path / "a"), "--bootstrap-server",
                                 "127.0.0.1:1", "--trusted-key", "not-a-key"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "neither a public key" in r.output
