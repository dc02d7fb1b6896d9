"""`ctrlaudit capture`'s supervisor on real child processes: an exited child is started again with a
doubling backoff, a child that keeps failing fast stops everything with its exit code, a child that ran
long enough starts its count again, and nothing is left running."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctrlaudit.supervisor import Child, Supervisor

PY = sys.executable


def proc(code: str):
    return lambda: subprocess.Popen([PY, "-c", code])


SLEEPER = "import time; time.sleep(60)"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def settle(c: Child) -> None:
    c.proc.wait(30)


def test_an_exited_child_is_restarted_with_a_doubling_backoff_then_given_up():
    clock, lines = Clock(), []
    failing = Child("normalize worker", proc("import sys; sys.exit(3)"))
    steady = Child("watch worker", proc(SLEEPER))
    sup = Supervisor([failing, steady], max_quick=4, quick_s=60, backoff_s=1, max_backoff_s=3,
                     say=lines.append, clock=clock)
    try:
        for c in sup.children:
            sup._start(c)
        waits = []
        for _ in range(3):
            settle(failing)
            clock.t += 0.5
            assert sup.step() is None
            waits.append(failing.due - clock.t)
            first = failing.proc
            clock.t = failing.due - 0.01
            assert sup.step() is None and failing.proc is first  # not yet due
            clock.t = failing.due
            assert sup.step() is None and failing.proc is not first  # started again
        assert waits == [1, 2, 3]  # 1, 2, 4 capped at 3
        settle(failing)
        clock.t += 0.5
        assert sup.step() == 3  # the 4th fast exit in a row: give up with the child's code
        assert steady.proc.poll() is None and steady.restarts == 0
        assert lines[:3] == [f"ctrlaudit capture: normalize worker exited with code 3 after 0.5 s; "
                             f"restarting in {w} s (restart {i})" for i, w in enumerate([1, 2, 3], 1)]
        assert lines[3].endswith("4 times in a row within 60 s of starting: giving up") and len(lines) == 4
    finally:
        sup.stop()
    assert all(c.proc.poll() is not None for c in sup.children)


def test_a_child_that_ran_long_enough_starts_its_count_again():
    clock, lines = Clock(), []
    c = Child("offset sampler", proc("import sys; sys.exit(1)"))
    sup = Supervisor([c], max_quick=2, quick_s=60, backoff_s=1, say=lines.append, clock=clock)
    try:
        sup._start(c)
        for _ in range(5):  # each run lasted 61 s: never two fast exits in a row
            settle(c)
            clock.t += 61
            assert sup.step() is None
            assert c.quick_exits == 1 and c.due == clock.t + 1
            clock.t = c.due
            sup.step()
        assert c.restarts == 5 and len(lines) == 5
        settle(c)
        clock.t += 1  # a fast exit after a long run: the second in a row, so max_quick=2 gives up
        assert sup.step() == 1 and c.quick_exits == 2
    finally:
        sup.stop()


def test_run_keeps_a_flaky_child_up_and_stops_everything_on_give_up(tmp_path: Path):
    # a child that fails twice, then stays up; another that always fails: run() returns the latter's code
    count = tmp_path / "starts"
    flaky = (f"import pathlib, sys, time; p = pathlib.Path({str(count)!r}); n = int(p.read_text() or 0) "
             f"if p.exists() else 0; p.write_text(str(n + 1)); sys.exit(5) if n < 2 else time.sleep(60)")
    lines: list[str] = []
    sup = Supervisor([Child("flaky", proc(flaky)), Child("broken", proc("import sys; sys.exit(7)"))],
                     max_quick=6, backoff_s=0.05, max_backoff_s=0.2, poll_s=0.02, say=lines.append)
    t = time.monotonic()
    assert sup.run() == 7
    assert time.monotonic() - t < 30
    assert count.read_text() == "3"  # started three times: two failures, then up until the stop
    assert sum("flaky exited with code 5" in l for l in lines) == 2
    assert sum("broken exited with code 7" in l for l in lines) == 6 and "giving up" in lines[-1]
    assert all(c.proc.poll() is not None for c in sup.children)  # the flaky one was terminated


@pytest.mark.parametrize("rc", [0, 2])
def test_any_exit_counts_and_a_clean_exit_gives_up_with_1(rc):
    # a worker that exits 0 by itself is not done (capture never ends on its own): restarted like any
    clock, lines = Clock(), []
    c = Child("capture worker", proc(f"import sys; sys.exit({rc})"))
    sup = Supervisor([c], max_quick=1, say=lines.append, clock=clock)
    sup._start(c)
    settle(c)
    assert sup.step() == (rc or 1)
    sup.stop()


def test_capture_command_refuses_a_bad_setting_before_starting_a_worker(tmp_path: Path):
    # Settings are typed and checked when the command starts: a bad role is one line and exit 2 at
    # once, instead of a worker started (and restarted --max-restarts times) only to fail the same way.
    # (Giving up on a worker that keeps failing is test_an_exited_child_is_restarted_with_a_doubling_backoff_then_given_up.)
    import os
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "quorum-state").write_text("{}")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, CTRLAUDIT_ROLES="normalize,bogus", PYTHONPATH=str(root))
    done = subprocess.run([PY, "-m", "ctrlaudit", "capture", "--metadata-dir", str(meta), "--max-restarts", "2",
                           "--inline-watch"], env=env, cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    err = done.stderr.splitlines()
    assert len(err) == 1 and "CTRLAUDIT_ROLES='normalize,bogus'" in err[0], err
    assert "restarting" not in done.stderr and "Traceback" not in done.stderr
