"""KafkaTools.run: a read-only tool that hangs gets one more try; a tool that changes the cluster never."""
from __future__ import annotations

import subprocess

import pytest

from devtools.cluster import tools as tools_mod


class _Tools(tools_mod.KafkaTools):
    def __init__(self):  # no jars needed: the command is never really run
        self.version = "4.3.1"

    def command(self, tool, *args, jvm_opts=None):
        return ["kafka-" + tool, *args]


def _fake_run(hangs: int):
    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        if len(calls) <= hangs:
            raise subprocess.TimeoutExpired(cmd, kw["timeout"])
        return subprocess.CompletedProcess(cmd, 0, "ok\n", "")
    return run, calls


def test_read_only_tool_is_tried_again_after_a_hang(monkeypatch):
    run, calls = _fake_run(hangs=1)
    monkeypatch.setattr(tools_mod.subprocess, "run", run)
    assert _Tools().run("metadata-shell", "ls", timeout=1).stdout == "ok\n"
    assert len(calls) == 2


def test_read_only_tool_hanging_twice_raises(monkeypatch):
    run, calls = _fake_run(hangs=2)
    monkeypatch.setattr(tools_mod.subprocess, "run", run)
    with pytest.raises(subprocess.TimeoutExpired):
        _Tools().run("dump-log", "--files", "x", timeout=1)
    assert len(calls) == 2


def test_a_tool_that_changes_the_cluster_is_never_repeated(monkeypatch):
    run, calls = _fake_run(hangs=1)
    monkeypatch.setattr(tools_mod.subprocess, "run", run)
    with pytest.raises(subprocess.TimeoutExpired):
        _Tools().run("reassign", "--execute", timeout=1)
    assert len(calls) == 1


def test_a_release_resolved_without_its_shell_says_so(tmp_path):
    """devtools.cluster.jars resolves a release whose kafka-shell jar Maven Central lacks (4.4.0) without it:
    the shell is then refused by name, never run from another release's jars."""
    class _Lib(tools_mod.KafkaTools):
        def __init__(self, lib):
            self.version, self.lib, self._log_config = "4.4.0", lib, tmp_path / "log.properties"

    (tmp_path / "kafka_2.13-4.4.0.jar").touch()
    bare = _Lib(tmp_path)
    assert not bare.has_shell
    with pytest.raises(tools_mod.ToolUnavailable, match="4.4.0 was resolved without kafka-shell"):
        bare.command("metadata-shell", "--snapshot", "x")
    assert "org.apache.kafka.tools.TopicCommand" in bare.command("topics", "--list")
    (tmp_path / "kafka-shell-4.4.0.jar").touch()
    assert bare.has_shell and "org.apache.kafka.shell.MetadataShell" in bare.command("metadata-shell")
