"""Environment and usage errors, table-driven, on the real CLI in a subprocess: each row asserts the
exit code, exactly one line on stderr naming the place (path, variable, host:port), no traceback
anywhere, and that the bytes of the paths it must not change are unchanged. (Damaged archives:
test_bad_archives.py.)

Adding a case is one `Row(...)` line in ROWS, plus a setup function when the row needs something made
first (a locked store, a read-only directory). Placeholders in args/env/says/unchanged: {root} (the
shared world), {archive}, {store} (a loaded store), {here} (the row's own empty directory, where a
setup function makes what it needs).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from services.simulator import SimConfig, simulate_to_archive

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534
FAST_KAFKA = {"CTRLAUDIT_CONNECT_TIMEOUT": "2"}  # an unreachable cluster is given up after 2 s, not 15


def ctrlaudit(*args: str, env: dict[str, str] | None = None, timeout: float = 120, module: str = "ctrlaudit",
              unprivileged: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([*_as_nobody(unprivileged), sys.executable, "-m", module, *args], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, **(env or {})}, timeout=timeout)


def _as_nobody(wanted: bool) -> list[str]:
    """Root ignores file modes: a row about a read-only file runs as nobody (setpriv, util-linux; a
    preexec_fn setuid could not exec a python installed under a 0700 /root)."""
    if not wanted or os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("runs as root and setpriv is missing: file modes cannot be tested")
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def digest(*paths: Path) -> dict[str, str]:
    out = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
        out.update({str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files})
    return out


@pytest.fixture(scope="module")
def world():
    # not under pytest's tmp (mode 0700 under root): the rows that run as nobody must read the archive
    root = Path(tempfile.mkdtemp(prefix="ctrlaudit-bad-inputs-"))
    root.chmod(0o755)
    simulate_to_archive(root / "archive", SimConfig(seed=5, events=4000, topics=3, partitions=4), fsync=False)
    store = root / "s.duckdb"
    assert ctrlaudit("load", str(root / "archive"), "--store", str(store)).returncode == 0
    (root / "garbage.duckdb").write_bytes(bytes(range(256)) * 40)
    (root / "notes.txt").write_text("not an archive\n")
    (root / "notes.avro").write_text("not an archive either\n")
    (root / "empty").mkdir()
    meta = root / "meta" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (meta / "quorum-state").write_text("{}")
    data = store.read_bytes()
    (root / "half.duckdb").write_bytes(data[: len(data) // 2])
    for p in root.rglob("*"):
        p.chmod(p.stat().st_mode | 0o055)
    yield {"root": root, "archive": root / "archive", "store": store}
    shutil.rmtree(root, ignore_errors=True)


# --- setup functions: (world, here) -> None or a cleanup callable ------------------------------------

def locked_store(world, here: Path) -> Callable[[], None]:
    """{here}/s.duckdb, a copy of the store, held open for writing by another process (as a load holds it)."""
    shutil.copy(world["store"], here / "s.duckdb")
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('ready', flush=True); time.sleep(120)", str(here / "s.duckdb")],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "ready"

    def stop() -> None:
        holder.kill()
        holder.wait()
    return stop


def read_only_store(world, here: Path) -> None:
    """{here}/ro.duckdb: a store nobody may write (mode 0444)."""
    shutil.copy(world["store"], here / "ro.duckdb")
    (here / "ro.duckdb").chmod(0o444)


def store_in_read_only_directory(world, here: Path) -> None:
    """{here}/d/s.duckdb writable by its (unprivileged) owner, in a directory it may not write: DuckDB's
    <store>.wal cannot be made there."""
    (here / "d").mkdir()
    shutil.copy(world["store"], here / "d" / "s.duckdb")
    if os.geteuid() == 0:
        os.chown(here / "d" / "s.duckdb", NOBODY, NOBODY)
    (here / "d").chmod(0o555)


def random_bytes_store(world, here: Path) -> None:
    (here / "g.duckdb").write_bytes(os.urandom(5000))


@dataclass(frozen=True)
class Row:
    id: str
    args: list[str]
    code: int
    says: str  # in the one stderr line
    env: dict[str, str] = field(default_factory=dict)
    setup: Callable | None = None  # (world, here) -> None or a cleanup callable
    unchanged: tuple[str, ...] = ("{archive}", "{store}", "{root}/garbage.duckdb", "{here}")
    unprivileged: bool = False  # run as nobody when the tests run as root (file modes count)
    module: str = "ctrlaudit"  # python -m MODULE ARGS


def setting(id: str, args: list[str], name: str, value: str, says: str = "") -> Row:
    """A setting refused: CTRLAUDIT_<name>=<value>, exit 2, the line naming the variable followed by `says`."""
    return Row(id, args, 2, f"CTRLAUDIT_{name}{says}", {f"CTRLAUDIT_{name}": value})


R, S = Row, setting
ROWS = [
    # the store: missing, damaged, a directory, unwritable, locked
    R("state-missing-store", ["state", "--store", "{root}/nope.duckdb"], 2, "nope.duckdb: no such store"),
    R("load-store-in-missing-dir", ["load", "{archive}", "--store", "{root}/no/dir/x.duckdb"], 2,
      "the directory {root}/no/dir does not exist"),
    R("store-env-in-missing-dir", ["load", "{archive}"], 2, "the directory /nonexistent/dir does not exist",
      {"CTRLAUDIT_STORE": "/nonexistent/dir/x.duckdb"}),
    R("load-store-under-a-file", ["load", "{archive}", "--store", "{root}/notes.txt/x.duckdb"], 2,
      "{root}/notes.txt is not a directory"),
    R("state-garbage-store", ["state", "--store", "{root}/garbage.duckdb"], 2, "not a ctrlaudit store"),
    R("load-into-garbage-store", ["load", "{archive}", "--store", "{root}/garbage.duckdb"], 2, "not a ctrlaudit store"),
    R("state-random-bytes-store", ["state", "--store", "{here}/g.duckdb"], 2, "g.duckdb: not a ctrlaudit store",
      setup=random_bytes_store),
    R("check-random-bytes-store", ["check", "{here}/g.duckdb"], 2, "g.duckdb: neither an Avro archive nor",
      setup=random_bytes_store),
    R("state-text-file-as-store", ["state", "--store", "{root}/notes.txt"], 2, "notes.txt: not a ctrlaudit store"),
    R("state-truncated-store", ["state", "--store", "{root}/half.duckdb"], 2, "half.duckdb"),
    R("store-is-a-directory", ["state"], 2, "{root}/empty: is a directory", {"CTRLAUDIT_STORE": "{root}/empty"}),
    R("load-store-where-nothing-can-be-written", ["load", "{archive}", "--store", "/sys/x.duckdb"], 2,
      "/sys/x.duckdb: cannot write the store here"),
    R("load-read-only-store-file", ["load", "{archive}", "--store", "{here}/ro.duckdb"], 2,
      "{here}/ro.duckdb: cannot write the store here", setup=read_only_store, unprivileged=True),
    R("load-store-in-read-only-directory", ["load", "{archive}", "--store", "{here}/d/s.duckdb"], 2,
      "the directory {here}/d is not writable", setup=store_in_read_only_directory, unprivileged=True),
    R("state-locked-store", ["state", "--store", "{here}/s.duckdb"], 2, "{here}/s.duckdb: the store is in use by process",
      {"CTRLAUDIT_LOCK_WAIT": "0.5"}, setup=locked_store),
    R("load-into-locked-store", ["load", "{archive}", "--store", "{here}/s.duckdb"], 2, "the store is in use by process",
      {"CTRLAUDIT_LOCK_WAIT": "0.5"}, setup=locked_store),
    R("check-locked-store", ["check", "{here}/s.duckdb"], 2, "{here}/s.duckdb: the store is in use by process",
      {"CTRLAUDIT_LOCK_WAIT": "0.5"}, setup=locked_store),
    # files written besides the store
    # a device is refused before anything runs (a full disk: test_output_paths.py, with a file size limit)
    R("check-report-to-a-device", ["check", "{archive}", "--json", "/dev/full"], 2,
      "/dev/full (--json): a character device, not a regular file"),
    R("check-csv-to-a-device", ["check", "{archive}", "--csv", "/dev/full"], 2,
      "/dev/full (--csv): a character device, not a regular file"),
    R("check-report-in-missing-dir", ["check", "{archive}", "--junit", "{root}/no/dir/r.xml"], 2,
      "{root}/no/dir/r.xml (--junit): no such directory {root}/no/dir"),
    R("simulate-where-nothing-can-be-written", ["simulate", "--out", "/sys/sim", "--events", "10"], 2, "/sys/sim"),
    R("simulate-into-the-archive", ["simulate", "--out", "{archive}", "--seed", "5", "--events", "10"], 2,
      "refusing to overwrite"),
    R("simulate-breach-past-the-end", ["simulate", "--out", "{here}/s", "--events", "20", "--inject",
                                       "leader_in_isr@20"], 2, "event index 20 is past the end of a history of 20"),
    # Kafka that does not answer: a bounded wait (CTRLAUDIT_CONNECT_TIMEOUT), one line naming host:port
    R("load-unreachable-kafka", ["load", "--bootstrap-server", "127.0.0.1:1", "--topic", "x", "--store",
                                 "{here}/k.duckdb"], 2, "cannot reach Kafka at 127.0.0.1:1 within 2 s", FAST_KAFKA),
    R("archive-unreachable-kafka", ["archive", "--bootstrap-server", "127.0.0.1:1", "--archive-dir", "{here}/a"], 2,
      "cannot reach Kafka at 127.0.0.1:1 within 2 s", FAST_KAFKA),
    R("capture-unreachable-kafka", ["capture", "--metadata-dir", "{root}/meta/__cluster_metadata-0",
                                    "--bootstrap-server", "127.0.0.1:1"], 2,
      "cannot reach Kafka at 127.0.0.1:1 within 2 s", FAST_KAFKA),
    R("capture-unreachable-zookeeper", ["capture", "--zookeeper", "127.0.0.1:1", "--bootstrap-server", "127.0.0.1:1"],
      2, "cannot reach ZooKeeper at 127.0.0.1:1 within 2 s", FAST_KAFKA),
    R("capture-no-source", ["capture"], 2, "give --metadata-dir (a KRaft cluster) or --zookeeper"),
    R("capture-request-log-dir-missing", ["capture", "--metadata-dir", "{root}/meta/__cluster_metadata-0",
                                          "--request-log-dir", "{here}/nope=1"], 2,
      "--request-log-dir '{here}/nope=1': {here}/nope is not a directory"),
    R("capture-request-log-dir-bad-id", ["capture", "--metadata-dir", "{root}/meta/__cluster_metadata-0",
                                         "--request-log-dir", "{here}=one"], 2,
      "--request-log-dir '{here}=one': not DIR or DIR=ID"),
    R("capture-two-sources", ["capture", "--metadata-dir", "{root}/meta/__cluster_metadata-0", "--zookeeper",
                              "127.0.0.1:1"], 2, "give --metadata-dir (a KRaft cluster) or --zookeeper"),
    R("sampler-service-unreachable-kafka", ["sampler", "--bootstrap-server", "127.0.0.1:1", "--cluster-id", "c"], 1,
      "ctrlaudit sampler: cannot reach Kafka at 127.0.0.1:1 within 2 s", FAST_KAFKA, module="services.capture"),
    R("archiver-service-unreachable-kafka", ["archiver", "--bootstrap-server", "127.0.0.1:1", "--archive-dir",
                                             "{here}/a"], 1, "ctrlaudit archive: cannot reach Kafka at 127.0.0.1:1",
      FAST_KAFKA, module="services.capture"),
    # the entry points besides `ctrlaudit` (typer apps): a usage error is one line too, exit 2
    R("sampler-service-unknown-flag", ["sampler", "--bogus"], 2,
      "ctrlaudit sampler: error: No such option: --bogus", module="services.capture"),
    R("sampler-service-rounds-not-a-number", ["sampler", "--rounds", "many"], 2,
      "ctrlaudit sampler: error: Invalid value for '--rounds'", module="services.capture"),
    R("archiver-service-flush-not-a-number", ["archiver", "--flush-seconds", "soon"], 2,
      "ctrlaudit archive: error: Invalid value for '--flush-seconds'", module="services.capture"),
    R("health-service-unknown-flag", ["health", "--bogus"], 2,
      "ctrlaudit capture: error: No such option: --bogus", module="services.capture"),
    # Spark: the master is checked before a JVM starts
    R("check-master-bogus", ["check", "{archive}", "--engine", "spark", "--master", "bogus"], 2, "--master 'bogus'"),
    R("check-spark-master-unreachable", ["check", "{archive}", "--engine", "spark", "--master", "spark://127.0.0.1:1"],
      2, "cannot reach the Spark master at 127.0.0.1:1 within 2 s", FAST_KAFKA),
    R("spark-job-master-bogus", ["{archive}", "--master", "bogus"], 2, "ctrlaudit: error: --master 'bogus'",
      module="ctrlaudit.spark_job"),
    R("spark-job-missing-input", ["{root}/nope", "--master", "local[1]"], 2,
      "ctrlaudit: error: {root}/nope: no such file or directory", module="ctrlaudit.spark_job"),
    # an archive on HDFS is read by the Spark engine (tests/checks/test_spark_hdfs.py), not by DuckDB
    R("check-hdfs-archive-with-duckdb", ["check", "hdfs:///archive"], 2,
      "ctrlaudit: error: hdfs:///archive: an archive on a Hadoop filesystem is checked with --engine spark"),
    # settings: one line naming the variable, the value and what it takes
    S("connect-timeout-not-a-number", ["load", "--bootstrap-server", "127.0.0.1:1", "--store", "{here}/k.duckdb"],
      "CONNECT_TIMEOUT", "soon", "='soon'"),
    S("connect-timeout-negative", ["archive", "--bootstrap-server", "127.0.0.1:1"], "CONNECT_TIMEOUT", "-5",
      "='-5': expected seconds"),
    S("connect-timeout-nan", ["archive", "--bootstrap-server", "127.0.0.1:1"], "CONNECT_TIMEOUT", "nan", "='nan'"),
    S("sample-interval-not-a-number", ["capture", "--metadata-dir", "{root}/meta/__cluster_metadata-0"],
      "SAMPLE_INTERVAL", "abc", "='abc'"),
    S("sample-interval-negative", ["capture", "--metadata-dir", "{root}/meta/__cluster_metadata-0"],
      "SAMPLE_INTERVAL", "-1", "=-1.0: expected seconds > 0"),
    S("flush-seconds-infinite", ["archive"], "ARCHIVE_FLUSH_SECONDS", "inf", "='inf'"),
    S("rejoin-seconds-not-a-number", ["archive"], "ARCHIVE_REJOIN_SECONDS", "abc", "='abc'"),
    S("rejoin-seconds-zero", ["archive"], "ARCHIVE_REJOIN_SECONDS", "0", "=0.0: expected seconds > 0"),
    S("replication-factor-zero", ["archive"], "REPLICATION_FACTOR", "0", "=0: expected a replication factor"),
    S("web-port-out-of-range", ["archive"], "WEB_PORT", "70000", "=70000: expected a port number"),
    S("commit-gate-unknown", ["archive"], "COMMIT_GATE", "maybe", "='maybe': expected quorum or none"),
    S("bootstrap-servers-empty", ["archive"], "BOOTSTRAP_SERVERS", "", "='' is empty"),
    S("request-log-dirs-bad-id", ["archive", "--bootstrap-server", "127.0.0.1:1"], "REQUEST_LOG_DIRS", "/x=one",
      "='/x=one': '/x=one' is not DIR or DIR=ID"),
    S("roles-unknown", ["archive", "--bootstrap-server", "127.0.0.1:1"], "ROLES", "normalise", "='normalise'"),
    S("redact-pattern-not-a-regex", ["archive", "--bootstrap-server", "127.0.0.1:1"], "REDACT_PATTERNS", "re:([",
      ": 're:([' is not a valid regex"),
    S("import-redact-pattern-not-a-regex", ["import", "kraft", "{root}/meta/__cluster_metadata-0", "--out",
                                             "{root}/imported"], "REDACT_PATTERNS", "re:*password",
      ": 're:*password' is not a valid regex"),
    S("lock-wait-not-a-number", ["state", "--store", "{store}"], "LOCK_WAIT", "forever", "='forever'"),
    S("lock-wait-nan", ["state", "--store", "{store}"], "LOCK_WAIT", "nan", "='nan'"),
    # usage
    R("time-not-a-time", ["state", "--store", "{store}", "--time", "yesterday"], 2, "yesterday"),
    R("time-out-of-range", ["state", "--store", "{store}", "--time", "2026-13-45T00:00:00Z"], 2, "2026-13-45"),
    R("unknown-topic", ["state", "--store", "{store}", "--topic", "no-such-topic"], 2, "no-such-topic"),
    R("partition-without-topic", ["state", "--store", "{store}", "--partition", "1"], 2, "--partition needs --topic"),
    R("explain-without-a-point", ["explain", "--store", "{store}"], 2, "exactly one of"),
    R("format-unknown", ["state", "--store", "{store}", "--format", "yaml"], 2, "Invalid value for '--format'"),
    R("timeline-without-partition", ["timeline", "--store", "{store}", "--topic", "x"], 2,
      "Missing option '--partition'"),
    R("unknown-command", ["stat"], 2, "No such command 'stat'"),
    R("unknown-option", ["state", "--store", "{store}", "--topics", "x"], 2, "No such option: --topics"),
    R("workers-zero", ["load", "{archive}", "--store", "{here}/x.duckdb", "--workers", "0"], 2,
      "Invalid value for '--workers'"),
    R("load-nothing-to-load", ["load", "--store", "{here}/x.duckdb"], 2, "give archive paths"),
    R("command-config-without-bootstrap", ["load", "{archive}", "--store", "{here}/x.duckdb", "--command-config",
                                           "{root}/notes.txt"], 2, "--command-config is for reading the events topic"),
    R("check-empty-directory", ["check", "{root}/empty"], 2, "no *.avro"),
    R("check-text-file", ["check", "{root}/notes.txt"], 2, "notes.txt"),
    R("check-unknown-engine", ["check", "{archive}", "--engine", "flink"], 2, "'flink' is not one of"),
    R("check-unknown-allowance", ["check", "{archive}", "--allow", "no_such"], 2, "unknown invariant 'no_such'"),
    R("check-unknown-invariant", ["check", "{archive}", "--invariant", "no_such"], 2, "unknown invariant 'no_such'"),
    R("load-text-file-named-avro", ["load", "{root}/notes.avro", "--store", "{here}/t.duckdb"], 2,
      "notes.avro: not an Avro object container file"),
    R("verify-missing-path", ["verify", "{root}/nope"], 2, "nope"),
    R("import-missing-path", ["import", "kraft", "{root}/nope", "--out", "{here}/imported"], 2, "nope"),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
@pytest.mark.matrix
def test_one_line_never_a_traceback(world, row, tmp_path_factory):
    here = Path(tempfile.mkdtemp(dir=world["root"], prefix=row.id[:20] + "-"))
    here.chmod(0o777)  # an unprivileged row may create files here
    fill = {**{k: str(v) for k, v in world.items()}, "here": str(here)}
    cleanup = row.setup(world, here) if row.setup else None
    try:
        args = [a.format(**fill) for a in row.args]
        env = {k: v.format(**fill) for k, v in row.env.items()}
        watched = [Path(p.format(**fill)) for p in row.unchanged]
        before = digest(*watched)
        done = ctrlaudit(*args, env=env, module=row.module, unprivileged=row.unprivileged)
        after = digest(*watched)
    finally:
        if cleanup:
            cleanup()
    assert done.returncode == row.code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ctrlaudit"), lines[0]
    assert row.says.format(**fill) in lines[0], lines[0]
    assert after == before


def test_the_table_has_one_row_per_id():
    assert len({r.id for r in ROWS}) == len(ROWS)


def _interrupt_after(args: list[str], seconds: float, when: Callable[[], bool] = lambda: True
                     ) -> subprocess.CompletedProcess:
    """Ctrl-C after `seconds`, or later, at the first moment `when` holds (polled every 5 ms)."""
    proc = subprocess.Popen([sys.executable, "-m", "ctrlaudit", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    while not when() and proc.poll() is None:
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("big")
    # large enough that a load (about 4 s) and a check (about 3 s) are still running when Ctrl-C comes
    simulate_to_archive(root, SimConfig(seed=6, events=600_000, topics=50, partitions=20), fsync=False)
    return root


@pytest.mark.slow
def test_ctrl_c_during_a_load_exits_130_and_keeps_the_store(world, big, tmp_path):
    store = tmp_path / "s.duckdb"
    assert ctrlaudit("load", str(world["archive"]), "--store", str(store)).returncode == 0
    before = ctrlaudit("state", "--store", str(store), "--format", "json").stdout
    done = _interrupt_after(["load", str(big), "--store", str(store)], 2.0)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines() == ["ctrlaudit: error: interrupted"]
    # one transaction: the store still holds exactly what it held, opens for reading and checks clean
    assert ctrlaudit("state", "--store", str(store), "--format", "json").stdout == before
    checked = ctrlaudit("check", str(store))
    assert checked.returncode == 0, checked.stderr
    again = ctrlaudit("load", str(big), "--store", str(store))
    assert again.returncode == 0, again.stderr


@pytest.mark.slow
def test_ctrl_c_during_a_check_exits_130(big):
    done = _interrupt_after(["check", str(big)], 2.0)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_second_load_waits_for_the_first_and_a_reader_can_give_up(world, big, tmp_path):
    store = tmp_path / "s.duckdb"
    first = subprocess.Popen([sys.executable, "-m", "ctrlaudit", "load", str(big), "--store", str(store)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    impatient = ctrlaudit("state", "--store", str(store), env={"CTRLAUDIT_LOCK_WAIT": "0"})
    assert impatient.returncode == 2 and "the store is in use" in impatient.stderr
    assert len(impatient.stderr.strip().splitlines()) == 1
    second = ctrlaudit("load", str(big), "--store", str(store))  # waits (CTRLAUDIT_LOCK_WAIT, 30 s) for the first
    assert first.wait(timeout=120) == 0, first.stderr.read()
    assert second.returncode == 0, second.stderr
    assert "added 0" in second.stdout


@pytest.mark.slow
def test_ctrl_c_during_a_load_into_a_new_store_leaves_no_store(big, tmp_path):
    store = tmp_path / "new.duckdb"
    done = _interrupt_after(["load", str(big), "--store", str(store)], 2.0)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines() == ["ctrlaudit: error: interrupted"]
    assert not list(tmp_path.iterdir())  # neither the store nor its .wal


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["reading", "writing"])
def test_ctrl_c_during_an_import_of_requests_exits_130_and_loses_nothing(tmp_path, phase):
    """Interrupted: one line, 130; the archive's files as they were, and those the import finished after them
    continue the chain (it verifies); the same import made again appends the rest, each line once."""
    from schemas.archive.listing import iter_events
    from tests.ctrlaudit.test_import_requests import CLUSTER, node
    from tests.services.requests.kafka_lines import log4j, standard_authorizer

    out = tmp_path / "archive"
    assert ctrlaudit("import", "requests", str(node(tmp_path / "logs", "n1", 1)), "--out", str(out)).returncode == 0
    before = digest(out)
    busy = node(tmp_path / "logs", "n2", 2)
    with open(busy / "kafka-authorizer.log", "a") as f:  # a create allowed per line: about 6 s to import here
        for second in range(BUSY_SECONDS):
            line = log4j(standard_authorizer("User:alice", True, "CREATE", "10.0.3.7", "Topic:LITERAL:orders",
                                             "CreateTopics", "ALLOW from an ACL"), "kafka.authorizer.logger",
                         date=f"2026-11-20 04:{second // 60:02d}:{second % 60:02d},000")
            f.write((line + "\n") * BUSY_LINES_PER_SECOND)

    def writing() -> bool:  # a new archive file being written (the writer's .part, renamed once whole)
        return any((out / CLUSTER).glob("*.part"))
    if phase == "reading":  # two seconds in: still reading (about 4 s of 6 here), nothing written yet
        done = _interrupt_after(["import", "requests", str(busy), "--out", str(out)], 2.0)
    else:
        done = _interrupt_after(["import", "requests", str(busy), "--out", str(out)], 0, writing)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines() == ["ctrlaudit: error: interrupted"]
    assert before.items() <= digest(out).items()
    assert not writing()  # no unfinished file left behind
    if phase == "reading":
        assert digest(out) == before
    assert ctrlaudit("verify", str(out)).returncode == 0
    again = ctrlaudit("import", "requests", str(busy), "--out", str(out), timeout=300)
    assert again.returncode == 0, again.stderr
    ids = [e.event_id for d in out.iterdir() for e in iter_events(d)]
    assert len(ids) == len(set(ids)) == 2 + 2 + BUSY_SECONDS * BUSY_LINES_PER_SECOND  # each node's two, the busy


BUSY_SECONDS, BUSY_LINES_PER_SECOND = 60, 2_000


# --- bugs and the debug switch (ctrlaudit/errors.py), on a command made to fail --------------------

def _app_raising(exc: BaseException):
    import typer

    from ctrlaudit.errors import user_errors

    app = typer.Typer()

    @app.command()
    @user_errors
    def boom(store: str = "s.duckdb") -> None:
        raise exc

    return app


@pytest.mark.parametrize("exc, code, says", [
    (ValueError("a bug\nsecond line"), 3, "internal error: ValueError: a bug (set CTRLAUDIT_DEBUG=1 for the traceback)"),
    (KeyboardInterrupt(), 130, "interrupted"),
    (PermissionError(13, "Permission denied", "/data/x"), 2, "/data/x: Permission denied"),
    (OSError(28, "No space left on device", "/data/x"), 2, "/data/x: No space left on device"),
    (type("KafkaException", (Exception,), {"__module__": "confluent_kafka.cimpl"})("_TRANSPORT: broker down"), 2,
     "Kafka: _TRANSPORT: broker down"),
    (type("Py4JNetworkError", (Exception,), {"__module__": "py4j.protocol"})("Answer from Java side is empty"), 2,
     "Spark: Answer from Java side is empty"),
])
def test_errors_become_one_line_with_their_exit_code(monkeypatch, exc, code, says):
    import duckdb  # noqa: F401 - describe() imports it; keep the import cost out of the timing
    from typer.testing import CliRunner

    monkeypatch.delenv("CTRLAUDIT_DEBUG", raising=False)
    done = CliRunner().invoke(_app_raising(exc), [])
    assert done.exit_code == code
    assert done.stderr.strip().splitlines() == [f"ctrlaudit: error: {says}"]


def test_a_duckdb_error_names_the_store(monkeypatch):
    import duckdb
    from typer.testing import CliRunner

    done = CliRunner().invoke(_app_raising(duckdb.IOException("IO Error: disk I/O error\nmore")),
                              ["--store", "/data/s.duckdb"])
    assert done.exit_code == 2
    assert done.stderr.strip() == "ctrlaudit: error: /data/s.duckdb: IO Error: disk I/O error"


def test_ctrlaudit_debug_keeps_the_traceback_of_a_bug(monkeypatch):
    from typer.testing import CliRunner

    monkeypatch.setenv("CTRLAUDIT_DEBUG", "1")
    done = CliRunner().invoke(_app_raising(ValueError("a bug")), [])
    assert isinstance(done.exception, ValueError) and done.exit_code == 1  # propagated, not turned into a line
