"""`python -m devtools.cluster`: the options before the command name the cluster, each command's flags and
arguments reach it (a Kafka tool's own flags untouched), and a usage error is one line, exit 2."""
from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

cli = importlib.import_module("devtools.cluster.__main__")


class _Cluster:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def tool(self, name, *args, check=True):
        self.calls.append(("tool", name, args, check))
        return SimpleNamespace(stdout="out\n", stderr="", returncode=3)

    def down(self, graceful=False, remove=False):
        self.calls.append(("down", graceful, remove))

    def kill_node(self, node):
        self.calls.append(("kill", node))


@pytest.fixture
def cluster(monkeypatch):
    c = _Cluster()
    seen = []

    def made(ctx):
        seen.append(ctx.obj)
        return c, ctx.obj, "4.3.1", ctx.obj.dir
    monkeypatch.setattr(cli, "_cluster", made)
    c.options = seen
    return c


def test_a_tool_gets_its_own_flags_and_its_exit_code(cluster, capsys):
    assert cli.main(["tool", "topics", "--describe", "--topic", "t", "--help"]) == 3
    assert cluster.calls == [("tool", "topics", ("--describe", "--topic", "t", "--help"), False)]
    assert capsys.readouterr().out == "out\n"


def test_options_before_the_command_and_flags_after_it(cluster, tmp_path):
    assert cli.main(["--mode", "zk", "--dir", str(tmp_path), "--base-port", "20000", "down", "--graceful"]) == 0
    assert cluster.calls == [("down", True, False)]
    o = cluster.options[0]
    assert (o.mode, o.dir, o.base_port, o.secure, o.segment_bytes, o.version) == (
        cli.Mode.zk, tmp_path, 20000, False, None, None)
    assert cli.main(["kill", "2"]) == 0 and cluster.calls[-1] == ("kill", 2)


@pytest.mark.parametrize("argv, says", [
    (["kill", "two"], "Invalid value for 'node'"),
    (["bogus"], "No such command 'bogus'"),
    (["migrate"], "migrate: a ZooKeeper-mode cluster's (--mode zk)"),
    (["--mode", "zk", "migrate", "--step", "later"], "Invalid value for '--step'"),
    (["--mode", "cloud", "up"], "Invalid value for '--mode'"),
])
def test_a_usage_error_is_one_line_and_exit_2(cluster, capsys, argv, says):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("devtools.cluster: error: ") and says in err[0], err
    assert cluster.calls == []
