"""Worker roles: which agents a worker runs and which consumer group it joins."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.capture.settings import Settings

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("roles, want, group", [
    ("normalize,watch", {"normalize", "watch"}, "app"),
    (" normalize ", {"normalize"}, "app"),
    ("watch", {"watch"}, "app-watch"),
])
def test_roles(roles, want, group):
    s = Settings().replace(roles=roles, app_id="app")
    assert s.role_set == want and s.worker_app_id == group


@pytest.mark.parametrize("roles", ["", "normalise", "watch,alerts"])
def test_an_unknown_role_is_refused(roles):
    with pytest.raises(ValueError, match="expected normalize, watch or both"):
        _ = Settings().replace(roles=roles).role_set


def test_the_worker_refuses_an_unknown_role_in_one_line():
    r = subprocess.run([sys.executable, "-m", "services.capture", "worker"], cwd=ROOT, capture_output=True,
                       text=True, env=dict(os.environ, CTRLAUDIT_ROLES="normalise", PYTHONPATH=str(ROOT)), timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == ["ctrlaudit capture: CTRLAUDIT_ROLES='normalise': expected normalize, "
                                             "watch or both"]


# each variable (after CTRLAUDIT_) with the values it refuses, and what its one line says of each
REFUSED = {
    "SAMPLE_INTERVAL": {"abc": "expected a number of seconds", "-3": "expected seconds > 0"},
    "REPLICATION_FACTOR": {"1.5": "expected a whole number", "0": "replication factor >= 1"},
    "WEB_PORT": {"70000": "a port number"},
    "COMMIT_GATE": {"sometimes": "expected quorum or none"},
    "CHECKPOINT_SECONDS": {"-1": "seconds >= 0"},
    "BOOTSTRAP_SERVERS": {" ": "is empty"},
    "SIGN_EVERY_EVENTS": {"0": "a number of events >= 1", "1e4": "expected a whole number"},
    "SIGN_EVERY_SECONDS": {"0": "seconds > 0", "nan": "a finite one"},
}


@pytest.mark.parametrize("name, value, says", [(n, v, says) for n, refused in REFUSED.items()
                                               for v, says in refused.items()])
def test_settings_are_typed_and_checked(monkeypatch, name, value, says):
    from services.capture.settings import SettingsError

    monkeypatch.setenv("CTRLAUDIT_" + name, value)
    with pytest.raises(SettingsError, match=says) as info:
        Settings()
    assert str(info.value).startswith(f"CTRLAUDIT_{name}=")
