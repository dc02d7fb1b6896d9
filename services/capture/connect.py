"""confluent-kafka clients with the `--command-config` security, and one line instead of a retry loop when
the credentials or the certificates are refused.

Why: librdkafka treats an authentication failure like a broker that is down: it reports it to the
error callback, logs it to stderr, and tries again forever. For a wrong password that is a command that
hangs and prints a line per broker per second. Here the error callback records the failure,
`AccessWatch.check()` raises it as one `AccessDenied` line (the CLI's exit 2), and librdkafka's own log
lines go to the Python logger "librdkafka" at DEBUG (the errors among them reach the error callback,
which logs the ones that are not fatal as warnings).
"""
from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from services.capture.security import ClientSecurity, SecurityConfigError, SettingsError, librdkafka_config

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

log = logging.getLogger(__name__)
_rdlog = logging.getLogger("librdkafka")
WARN_EVERY = 30.0  # seconds between two warnings with the same text (AccessWatch._warn)
DEFAULT_CONNECT_TIMEOUT = 15.0


class AccessDenied(SecurityConfigError):
    """The brokers refused the credentials or the TLS handshake."""


class _DebugLogger:
    """librdkafka's log lines, demoted to DEBUG (see the module doc)."""

    def log(self, level: int, fmt: str, *args: object) -> None:
        _rdlog.debug(fmt, *args)


class AccessWatch:
    """The error callback of one client: remembers the first authentication or TLS failure."""

    def __init__(self, bootstrap: str, sec: ClientSecurity, strict: bool = False) -> None:
        self.bootstrap, self.sec = bootstrap, sec
        # strict (the check before a command starts): a disconnect during the TLS or SASL handshake counts
        # too. Not for a running client: a broker killed mid-handshake must stay a passing fault.
        self.strict = strict
        self.failure: str | None = None
        self.last = ""  # the last error seen (for the one line of a command that gives up)
        self._warned: dict[str, float] = {}  # text -> when it was last logged as a warning

    def __call__(self, err: KafkaError) -> None:
        from confluent_kafka import KafkaError  # extra: capture
        text = err.str()
        fatal = err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL) or (
            self.strict and err.code() == KafkaError._TRANSPORT and ("SSL" in text or "SASL" in text))
        if fatal:
            self.failure = self.failure or text
        elif err.code() == KafkaError._ALL_BROKERS_DOWN or self.strict:
            # follows another error, or a start-up check that reports what it finds in one line itself
            self.last = text
            log.debug("kafka: %s", text)
        else:
            self._warn(text)

    def _warn(self, text: str, every: float = WARN_EVERY) -> None:
        """A broker that is down is reported by librdkafka at every reconnect attempt (10 a second at
        first): each distinct message is a warning once per `every` seconds, the repeats go to DEBUG."""
        now = time.monotonic()
        if now - self._warned.get(text, -every) >= every:
            self._warned[text] = now
            log.warning("kafka: %s", text)
        else:
            log.debug("kafka: %s", text)

    def check(self) -> None:
        if self.failure is not None:
            raise AccessDenied(f"{self.bootstrap}: {self.sec.describe()} refused: {_short(self.failure)}")


def _short(text: str) -> str:
    """librdkafka's message without its broker prefix ("sasl_ssl://127.0.0.1:9094/bootstrap: ")."""
    head, sep, rest = text.partition(": ")
    return rest if sep and ("://" in head or "/" in head) else text


# A librdkafka setting's value; a configuration also holds the callbacks error_cb (AccessWatch) and logger.
# (confluent-kafka's stub of AdminClient takes settings only: its calls below say so.)
Setting = str | int | float | bool
ClientConfig = dict[str, Setting | None | AccessWatch | _DebugLogger]


def config(bootstrap: str, sec: ClientSecurity, strict: bool = False,
           extra: Mapping[str, Setting] | None = None) -> tuple[ClientConfig, AccessWatch]:
    """The configuration of a confluent-kafka client of `bootstrap` with `sec`, and its AccessWatch; `extra`:
    the client's own settings (group.id, ...)."""
    watch = AccessWatch(bootstrap, sec, strict)
    conf: ClientConfig = {"bootstrap.servers": bootstrap, **librdkafka_config(sec), "error_cb": watch,
                          "logger": _DebugLogger(), **(extra or {})}
    return conf, watch


def check_access(bootstrap: str, sec: ClientSecurity, timeout: float = 15.0) -> None:
    """Raise AccessDenied when the brokers refuse `sec` (a wrong password, an untrusted certificate). A
    cluster that does not answer in `timeout` is not an error here: the clients wait for it as before."""
    from confluent_kafka import KafkaException  # extra: capture
    from confluent_kafka.admin import AdminClient  # extra: capture

    if sec.protocol == "PLAINTEXT":
        return  # nothing that could be refused
    conf, watch = config(bootstrap, sec, strict=True, extra={"socket.timeout.ms": 10_000})
    admin = AdminClient(conf)  # type: ignore[arg-type]  # its stub leaves out the callbacks (error_cb, logger)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=1.0)
            return
        except KafkaException:
            admin.poll(0)  # runs the error callback
            watch.check()


class Unreachable(SecurityConfigError):
    """No broker answered within the wait: one line, exit 2 (a one-shot command does not hang)."""


def connect_timeout() -> float:
    """CTRLAUDIT_CONNECT_TIMEOUT: how long a command waits for a Kafka cluster (or a Spark master) to
    answer before it gives up with one line (default 15 s)."""
    raw = os.environ.get("CTRLAUDIT_CONNECT_TIMEOUT", "").strip()
    try:
        value = float(raw) if raw else DEFAULT_CONNECT_TIMEOUT
    except ValueError:
        value = -1.0
    if not value > 0 or math.isinf(value):  # also NaN and inf: a bounded wait is the point
        raise SettingsError(f"CTRLAUDIT_CONNECT_TIMEOUT={raw!r}: expected seconds (a number > 0)")
    return value


def require_reachable(bootstrap: str, sec: ClientSecurity, timeout: float | None = None) -> None:
    """For one-shot commands (load from the topic): the brokers answer within `timeout` seconds
    (CTRLAUDIT_CONNECT_TIMEOUT, default 15) and accept `sec`, else one line: Unreachable or AccessDenied."""
    from confluent_kafka import KafkaException  # extra: capture
    from confluent_kafka.admin import AdminClient  # extra: capture

    timeout = connect_timeout() if timeout is None else timeout
    conf, watch = config(bootstrap, sec, strict=True, extra={"socket.timeout.ms": max(1000, int(timeout * 1000))})
    admin = AdminClient(conf)  # type: ignore[arg-type]  # its stub leaves out the callbacks (error_cb, logger)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            admin.list_topics(timeout=min(1.0, left))
            return
        except KafkaException:
            admin.poll(0)  # runs the error callback
            watch.check()
    admin.poll(0)
    watch.check()
    why = f" ({_short(watch.last)})" if watch.last else ""
    raise Unreachable(f"cannot reach Kafka at {bootstrap} within {timeout:g} s{why}")
