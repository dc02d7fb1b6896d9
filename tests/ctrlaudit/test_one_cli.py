"""One CLI: one time format, JSON on standard output for every command, topics named as
kafka-topics names them (regexes, the closest names when nothing matches), kafka-topics' describe
filters, headers that count the whole topic, tables that fit the terminal, help text for every flag."""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from ctrlaudit.cli import MODULE_OF, SHORT_HELP, app
from replay import queries
from replay.store import Store
from schemas.events import ConfigResourceType as CRT, ConfigChange, PartitionChange, PartitionChangeKind as K
from schemas.events import PartitionState as PS, TopicChange, TopicChangeKind as TK
from tests.ctrlaudit.conftest import run, subcommands
from tests.replay.fixtures import CLUSTER, DELTA1, ev

ISO = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\b")
ANY_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d[:\d.]*(?:Z|[+-]\d\d:\d\d)?")


def _commands():
    def walk(c, path):
        if hasattr(c, "list_commands"):
            for name, sub in subcommands(c).items():
                yield from walk(sub, [*path, name])
        else:
            yield path, c
    return list(walk(typer.main.get_command(app), []))


def test_every_flag_and_argument_has_a_help_text() -> None:
    commands = _commands()
    assert len(commands) >= 14
    missing = [f"{' '.join(path)} {'/'.join(p.opts)}" for path, c in commands for p in c.params
               if not (getattr(p, "help", None) or "").strip()]
    assert not missing, missing


def test_help_shows_whole_flag_names() -> None:
    out = run("state", "--help").output
    for flag in ("--under-replicated-partitions", "--under-min-isr-partitions", "--at-min-isr-partitions",
                 "--unavailable-partitions", "--topics-with-overrides", "--exclude-internal", "--time-format",
                 "--json"):
        assert flag in out
    assert "…" not in out
    for args in ((), ("import",)):  # the command lists: a short help each, never cut with "..."
        listing = run(*args, "--help").output.split("Commands:")[1]
        assert "..." not in listing and "…" not in listing, listing


def test_the_command_list_loads_no_command_module() -> None:
    """`ctrlaudit --help` lists the commands from ctrlaudit.cli's table; a command's module (and what it imports at
    its top: DuckDB's store, plotly, the simulator) is loaded when that command runs."""
    probe = ("import sys\nfrom ctrlaudit.cli import main\nsys.argv = ['ctrlaudit', '--help']\ntry:\n    main()\n"
             "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('ctrlaudit.commands.')"
             " or m in ('replay.store', 'plotly', 'services.simulator')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]
    listing = done.stdout.split("Commands:")[1]
    for name, short in SHORT_HELP.items():
        assert f"{name}  " in listing and short in listing, name


def test_each_command_is_its_modules_and_listed_once() -> None:
    commands = subcommands(typer.main.get_command(app))
    assert list(commands) == list(SHORT_HELP)
    for name, command in commands.items():
        assert command.short_help == SHORT_HELP[name]
        assert command.callback is None or MODULE_OF[name] in command.callback.__module__, name


# --- times -----------------------------------------------------------------------------------

def test_every_output_gives_times_in_one_format(history: dict[str, Path]) -> None:
    store = str(history["store"])
    topic = _first_topic(store)
    outputs = {
        "state": run("state", "--store", store, "--topic", topic).stdout,
        "diff": run("diff", "--store", store, "--from-seq", "100").stdout,
        "timeline": run("timeline", "--store", store, "--topic", topic, "--partition", "0").stdout,
        "timeline table": run("timeline", "--store", store, "--topic", topic, "--partition", "0",
                              "--format", "table").stdout,
        "timeline csv": run("timeline", "--store", store, "--topic", topic, "--partition", "0",
                            "--format", "csv").stdout,
        "explain": run("explain", "--store", store, "--topic", topic, "--partition", "0",
                       "--last-leader-change").stdout,
    }
    for name, text in outputs.items():
        found = ANY_TIME.findall(text)
        assert found, f"{name}: no time in {text[:300]!r}"
        assert all(ISO.fullmatch(t) for t in found), f"{name}: {[t for t in found if not ISO.fullmatch(t)]}"
        assert not re.search(r"\b1[6-9]\d{11}\b", text), f"{name}: an epoch-ms time in the text output"


def test_time_format_epoch_ms_for_scripts(history: dict[str, Path]) -> None:
    store = str(history["store"])
    with Store(store, read_only=True) as s:
        point = s.point(seq=1500)
    done = run("state", "--store", store, "--seq", "1500", "--time-format", "epoch-ms")
    assert done.exit_code == 0, done.output
    assert f", {point.event_time_ms})" in done.stdout.splitlines()[0] and not ISO.search(done.stdout)
    doc = json.loads(run("state", "--store", store, "--seq", "1500", "--time-format", "epoch-ms",
                         "--json", "-").stdout)
    assert doc["as_of"]["event_time"] == str(point.event_time_ms)


def test_epoch_seconds_are_read_as_seconds_with_a_note(history: dict[str, Path]) -> None:
    store = str(history["store"])
    with Store(store, read_only=True) as s:
        point = s.point(seq=2000)
    seconds = point.event_time_ms // 1000 + 1  # the second after the event: the point stays on it or later
    as_seconds = json.loads(run("state", "--store", store, "--time", str(seconds), "--json", "-").stdout)
    as_millis = json.loads(run("state", "--store", store, "--time", str(seconds * 1000), "--json", "-").stdout)
    assert as_seconds["as_of"]["seq"] == as_millis["as_of"]["seq"] >= point.seq
    assert "read as epoch seconds" in as_seconds["as_of"]["note"]
    assert "read as epoch seconds" not in as_millis["as_of"]["note"]
    text = run("state", "--store", store, "--time", str(seconds)).stdout
    assert "read as epoch seconds" in text.splitlines()[0]


# --- JSON on standard output -------------------------------------------------------------------

@pytest.mark.slow
def test_json_on_standard_output_for_every_command(history: dict[str, Path], tmp_path: Path) -> None:
    store, archive = str(history["store"]), str(history["archive"])
    topic = _first_topic(store)
    cases = {
        "simulate": ["simulate", "--out", str(tmp_path / "sim"), "--events", "300", "--seed", "5"],
        "load": ["load", str(tmp_path / "sim"), "--store", str(tmp_path / "new.duckdb")],
        "verify": ["verify", archive],
        "state": ["state", "--store", store],
        "state filter": ["state", "--store", store, "--under-replicated-partitions"],
        "diff": ["diff", "--store", store, "--from-seq", "100"],
        "timeline": ["timeline", "--store", store, "--topic", topic, "--partition", "0"],
        "explain": ["explain", "--store", store, "--topic", topic, "--partition", "0", "--last-leader-change"],
        "check": ["check", store],
        "export": ["export", "--store", store, "--out", str(tmp_path / "events.parquet")],
        "report": ["report", "--store", store, "--out", str(tmp_path / "r.html")],
    }
    docs = {}
    for name, args in cases.items():
        done = run(*args, "--json", "-")
        assert done.exit_code in (0, 1), f"{name}: {done.output}"
        docs[name] = json.loads(done.stdout)  # standard output holds the document alone
    assert docs["simulate"]["events"] == 300
    assert docs["load"]["events_added"] == 300 and docs["load"]["chains"][0]["verified_to"] == 299
    assert docs["verify"]["intact"] is True and docs["verify"]["chains"][0]["events"] == 3000
    assert docs["state"]["partitions"] and docs["diff"]["partitions"]
    assert docs["check"]["summary"] and docs["export"]["events"] == 3000
    assert docs["report"]["bytes"] == (tmp_path / "r.html").stat().st_size
    # the lines for a person went to standard error
    done = run("load", str(tmp_path / "sim"), "--store", str(tmp_path / "new.duckdb"), "--json", "-")
    assert "already present 300" in done.stderr and json.loads(done.stdout)["events_added"] == 0


def test_json_to_a_file_keeps_the_text_on_standard_output(history: dict[str, Path], tmp_path: Path) -> None:
    store = str(history["store"])
    done = run("check", store, "--json", str(tmp_path / "c.json"))
    assert json.loads((tmp_path / "c.json").read_text())["summary"]
    assert "valid" in done.stdout or "INVALID" in done.stdout


# --- topics ------------------------------------------------------------------------------------

def test_an_unknown_topic_is_exit_2_naming_the_closest(history: dict[str, Path]) -> None:
    store = str(history["store"])
    topic = _first_topic(store)
    typo = topic[:-1] + ("x" if topic[-1] != "x" else "y")
    for args in (["state", "--topic", typo], ["diff", "--from-seq", "1", "--topic", typo],
                 ["timeline", "--topic", typo, "--partition", "0"],
                 ["explain", "--topic", typo, "--partition", "0", "--last-leader-change"],
                 ["report", "--topic", typo, "--out", str(history["root"] / "x.html")]):
        done = run(args[0], "--store", store, *args[1:])
        assert done.exit_code == 2, (args, done.output)
        errors = [l for l in done.stderr.splitlines() if l.startswith("ctrlaudit: error: ")]
        assert len(errors) == 1 and f"closest names: {topic}" in errors[0], (args, done.stderr)
    with Store(store, read_only=True) as s:
        count = queries.state_as_of(s, s.point(), topic).partition_counts[topic]
    done = run("timeline", "--store", store, "--topic", topic, "--partition", "99")
    assert done.exit_code == 2 and "no partition 99" in done.stderr, done.stderr
    assert f"(it has partitions 0..{count - 1})" in done.stderr


def test_partition_keeps_the_topics_partition_count(history: dict[str, Path]) -> None:
    store = str(history["store"])
    topic = _first_topic(store)
    with Store(store, read_only=True) as s:
        count = len(queries.state_as_of(s, s.point(), topic).partitions)
    assert count > 1
    lines = run("state", "--store", store, "--topic", topic, "--partition", "1").stdout.splitlines()
    assert f"\tPartitionCount: {count}\t" in lines[1]
    assert [l for l in lines if l.startswith("\tTopic:")] == [l for l in lines[2:]] and len(lines) == 3


# --- kafka-topics' describe filters on a handmade history ---------------------------------------

@pytest.fixture(scope="module")
def handmade(tmp_path_factory: pytest.TempPathFactory) -> str:
    """DELTA1 to seq 16 (broker 3 fenced at seq 9 while audit-0's leader is 3: unavailable, not offline;
    orders with min.insync.replicas=2 and orders-0 at 2 in-sync), plus an internal topic."""
    from schemas.archive.writer import ArchiveWriter

    offsets = "Q29uc3VtZXJPZmZzZXRzMA"
    extra = [ev(17, TopicChange(TK.CREATED, "__consumer_offsets", offsets)),
             ev(18, PartitionChange("__consumer_offsets", offsets, 0, None, PS((1, 2), (1, 2), 1, 0, 0),
                                    (K.CREATE,))),
             ev(19, ConfigChange(CRT.TOPIC, "__consumer_offsets", "cleanup.policy", "compact"))]
    root = tmp_path_factory.mktemp("handmade")
    with ArchiveWriter(root / "archive", CLUSTER) as w:
        for e in [*DELTA1[:17], *extra]:
            w.append(e)
    done = run("load", str(root / "archive"), "--store", str(root / "s.duckdb"))
    assert done.exit_code == 0, done.output
    return str(root / "s.duckdb")


def _lines(store: str, *args: str) -> list[str]:
    done = run("state", "--store", store, *args)
    assert done.exit_code == 0, done.output
    return done.stdout.splitlines()[1:]


def _parts(lines: list[str]) -> list[str]:
    return [re.search(r"Topic: (\S+)\tPartition: (\d+)", l).expand(r"\1-\2") for l in lines]


def test_describe_filters_under_kafkas_names(handmade: str) -> None:
    assert _parts(_lines(handmade, "--seq", "16", "--under-replicated-partitions")) == ["orders-0"]
    assert _parts(_lines(handmade, "--seq", "16", "--at-min-isr-partitions")) == ["orders-0"]
    assert _parts(_lines(handmade, "--seq", "16", "--under-min-isr-partitions")) == []
    # audit-0's leader is broker 3, fenced since seq 9: unavailable by Kafka's rule, yet it has a leader
    assert _parts(_lines(handmade, "--seq", "16", "--unavailable-partitions")) == ["audit-0"]
    assert _parts(_lines(handmade, "--seq", "16", "--offline")) == []
    heads = _lines(handmade, "--seq", "16", "--topics-with-overrides")
    assert [h.split("\t")[0] for h in heads] == ["Topic: orders"] and "min.insync.replicas=2" in heads[0]
    assert all("Partition:" not in h for h in heads)
    done = run("state", "--store", handmade, "--at-min-isr", "--offline")
    assert done.exit_code == 2 and "at most one of the filters" in done.stderr


def test_topic_regexes_select_as_kafka_topics(handmade: str) -> None:
    def topics_of(pattern: str) -> list[str]:
        done = run("state", "--store", handmade, "--topic", pattern, "--json", "-")
        assert done.exit_code == 0, done.output
        return sorted({p["topic"] for p in json.loads(done.stdout)["partitions"]})

    assert topics_of("orders") == ["orders"]
    assert topics_of("orders,audit") == ["audit", "orders"]  # a comma is "or"
    assert topics_of(".*s") == ["__consumer_offsets", "orders"]  # matched against the whole name
    assert topics_of("'audit'") == ["audit"]  # quotes dropped, as TopicFilter does
    done = run("state", "--store", handmade, "--topic", "ord")  # a prefix is not a match
    assert done.exit_code == 2 and "closest names" in done.stderr
    done = run("state", "--store", handmade, "--topic", "(")
    assert done.exit_code == 2 and "not a valid regular expression" in done.stderr


def test_exclude_internal(handmade: str) -> None:
    every = _lines(handmade)
    assert any(l.startswith("Topic: __consumer_offsets") for l in every)
    kept = _lines(handmade, "--exclude-internal")
    assert not any("__consumer_offsets" in l for l in kept) and any(l.startswith("Topic: orders") for l in kept)
    assert _lines(handmade, "--topic", ".*", "--exclude-internal", "--topics-with-overrides")[0].startswith(
        "Topic: orders")


def test_a_deleted_topic_says_when_it_existed(handmade: str) -> None:
    done = run("state", "--store", handmade, "--topic", "audit", "--seq", "16")
    assert done.exit_code == 0
    # audit is created at seq 12 and deleted at seq 18 in DELTA1; here it is alive until the end (seq 16)
    done = run("state", "--store", handmade, "--topic", "audit", "--seq", "5")
    assert done.exit_code == 2 and "it existed from seq 12" in done.stderr, done.stderr


# --- tables ------------------------------------------------------------------------------------

def test_tables_fold_to_the_terminal_and_never_cut(history: dict[str, Path]) -> None:
    from rich.console import Console

    from ctrlaudit.commands.output import print_table
    from replay import changes, formats

    with Store(str(history["store"]), read_only=True) as s:
        result = changes.timeline(s, s.point(), _first_topic(str(history["store"])), 0)
    table = formats.timeline_table(result)
    screen = io.StringIO()
    print_table(table, console=Console(file=screen, width=70, force_terminal=True, color_system=None))
    lines = screen.getvalue().splitlines()
    assert max(len(l) for l in lines) <= 70 and "…" not in screen.getvalue()
    last_column = "".join(l.split("│")[-2] for l in lines if l.startswith("│")).replace(" ", "")
    assert "".join(c.diff() for c in result.changes).replace(" ", "") == last_column  # folded, all there
    piped = io.StringIO()
    print_table(formats.timeline_table(result), console=Console(file=piped, color_system=None))
    rows = [l for l in piped.getvalue().splitlines() if l.startswith("│")]
    assert len(rows) == len(result.changes) and "…" not in piped.getvalue()  # one line per row in a pipe


def _first_topic(store: str) -> str:
    with Store(store, read_only=True) as s:
        return queries.state_as_of(s, s.point()).partitions[0].topic


def test_a_reader_that_leaves_early_stops_the_command_quietly(history: dict[str, Path]) -> None:
    """`ctrlaudit state | head -1`: exit 141 (SIGPIPE's), nothing on standard error."""
    import subprocess
    import sys

    with Store(str(history["store"]), read_only=True) as s:  # the partition with the longest history
        topic, partition = s.con.execute("""SELECT topic, "partition" FROM events WHERE kind = 'PartitionChange'
                                            GROUP BY ALL ORDER BY count(*) DESC LIMIT 1""").fetchone()
    proc = subprocess.Popen([sys.executable, "-m", "ctrlaudit", "timeline", "--store", str(history["store"]),
                             "--topic", topic, "--partition", str(partition), "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"{\n"
    proc.stdout.close()  # far more than a pipe's buffer (64 KiB) is still to come
    assert proc.wait(60) == 141
    assert proc.stderr.read() == b""


def test_explain_says_why_the_previous_leader_stopped_leading(history: dict[str, Path], handmade: str) -> None:
    """A leader moved by a fencing: the broker's record comes after the moves, in the same batch (Kafka's
    handleBrokerFenced order; the simulator writes it so); a leader moved while its broker was live says so."""
    store = str(history["store"])
    with Store(store, read_only=True) as s:
        rows = s.con.execute("""SELECT seq, reason FROM events WHERE kind = 'PartitionChange'
                                AND list_contains(changes, 'LEADER') AND b_leader >= 0
                                AND reason LIKE 'broker % session timed out' ORDER BY seq LIMIT 3""").fetchall()
    assert rows
    for seq, reason in rows:
        text = run("explain", "--store", store, "--seq", str(seq)).stdout
        broker = reason.split()[1]
        assert re.search(rf"previous leader's broker: broker {broker} fenced in the same metadata batch, at seq "
                         rf"\d+", text), text
        assert json.loads(run("explain", "--store", store, "--seq", str(seq), "--json", "-").stdout)[
            "previous_leader_broker"].startswith(f"broker {broker} fenced")
    text = run("explain", "--store", handmade, "--seq", "11").stdout  # orders-0: leader 1 -> 2, broker 1 live
    assert "previous leader's broker: broker 1 live (registered, unfenced since seq 2)" in text, text


def test_check_writes_every_finding_as_csv(tmp_path: Path) -> None:
    """`check --csv`: one row per finding, violated and allowed, the columns every engine returns; the
    counts agree with the JSON report's."""
    import csv
    import xml.etree.ElementTree as ET

    done = run("simulate", "--out", str(tmp_path / "a"), "--events", "4000", "--seed", "9",
               "--inject", "leader_in_isr@1500", "--inject", "controller_epoch_monotonic@2500")
    assert done.exit_code == 0, done.output
    report = json.loads(run("check", str(tmp_path / "a"), "--json", "-").stdout)
    done = run("check", str(tmp_path / "a"), "--csv", "-")
    assert done.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    for inv in report["invariants"]:
        mine = [r for r in rows if r["invariant"] == inv["name"]]
        assert sum(r["status"] == "violated" for r in mine) == inv["violations"], inv["name"]
        assert sum(r["status"] == "allowed" for r in mine) == inv["allowed"], inv["name"]
    assert {r["invariant"] for r in rows if r["status"] == "violated"} >= {"leader_in_isr", "controller_epoch_monotonic"}
    junit = ET.fromstring(run("check", str(tmp_path / "a"), "--junit", "-").stdout)
    assert int(junit.get("failures")) >= 2
    done = run("check", str(tmp_path / "a"), "--csv", "-", "--json", "-")
    assert done.exit_code == 2 and "only one of" in done.stderr
