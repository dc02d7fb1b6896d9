"""Keeps `ctrlaudit capture`'s processes running: a worker that exits is started again, with a backoff.

Why: a capture worker can exit on its own for reasons that pass, most often at start-up while a broker is
down (Faust sends its topic declarations to the broker the metadata names as controller; a kill -9'd
broker keeps that role until its session expires). Compose restarts its containers (`restart:
unless-stopped`); `ctrlaudit capture` does the same for its children. Exactly-once does not depend on
it: a restarted worker resumes from the events topic (services/capture/logic.py).

A child that keeps failing fast is a configuration error, not a passing one (a bad role, a wrong
bootstrap address): after `max_quick` exits in a row, each within `quick_s` of its start, the
supervisor stops everything and returns that child's exit code. A child that ran longer resets its count.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType


@dataclass
class Child:
    name: str
    start: Callable[[], subprocess.Popen[bytes]]
    proc: subprocess.Popen[bytes] | None = None  # None until `run` starts it
    started_at: float = 0.0
    quick_exits: int = 0  # in a row
    restarts: int = 0
    due: float | None = None  # when to start it again (after an exit)


@dataclass
class Supervisor:
    children: list[Child]
    max_quick: int = 5
    quick_s: float = 60.0
    backoff_s: float = 1.0  # doubled per quick exit in a row, at most max_backoff_s
    max_backoff_s: float = 30.0
    poll_s: float = 0.5
    say: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))
    clock: Callable[[], float] = time.monotonic

    def _start(self, c: Child) -> None:
        c.proc, c.started_at, c.due = c.start(), self.clock(), None

    def step(self) -> int | None:
        """One look at the children: restart the due ones, schedule the exited ones. Returns an exit code
        when the supervisor gives up (a child failed fast max_quick times in a row), else None."""
        now = self.clock()
        for c in self.children:
            if c.due is not None:
                if now >= c.due:
                    self._start(c)
                continue
            assert c.proc is not None  # started by run() before the first step, and only ever replaced
            rc = c.proc.poll()
            if rc is None:
                continue
            ran = now - c.started_at
            c.quick_exits = c.quick_exits + 1 if ran < self.quick_s else 1
            if c.quick_exits >= self.max_quick:
                self.say(f"ctrlaudit capture: {c.name} exited with code {rc} after {ran:.1f} s, "
                         f"{c.quick_exits} times in a row within {self.quick_s:.0f} s of starting: giving up")
                return rc if rc else 1
            wait = min(self.backoff_s * 2 ** (c.quick_exits - 1), self.max_backoff_s)
            c.restarts += 1
            c.due = now + wait
            self.say(f"ctrlaudit capture: {c.name} exited with code {rc} after {ran:.1f} s; "
                     f"restarting in {wait:.0f} s (restart {c.restarts})")
        return None

    def run(self) -> int:
        """Start every child and keep them running until one gives up (its code), or until Ctrl-C or
        SIGTERM (0): then every child is stopped too, none is left behind."""
        def terminate(signum: int, frame: FrameType | None) -> None:
            raise KeyboardInterrupt
        previous = signal.signal(signal.SIGTERM, terminate)  # what `docker stop` and systemd send
        try:
            for c in self.children:
                self._start(c)
            while True:
                rc = self.step()
                if rc is not None:
                    return rc
                time.sleep(self.poll_s)
        except KeyboardInterrupt:
            return 0
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the stop short
            self.stop()
            signal.signal(signal.SIGTERM, previous)

    def stop(self, timeout: float = 30) -> None:
        for c in self.children:
            if c.proc is not None and c.proc.poll() is None:
                c.proc.terminate()
        for c in self.children:
            if c.proc is not None:
                try:
                    c.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    c.proc.kill()
                    c.proc.wait(timeout)
