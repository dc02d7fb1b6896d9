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
import time

from services.capture.security import ClientSecurity, SecurityConfigError, librdkafka_config

log = logging.getLogger(__name__)
_rdlog = logging.getLogger("librdkafka")


class AccessDenied(SecurityConfigError):
    """The brokers refused the credentials or the TLS handshake."""


class _DebugLogger:
    """librdkafka's log lines, demoted to DEBUG (see the module doc)."""

    def log(self, level, fmt, *args):
        _rdlog.debug(fmt, *args)


class AccessWatch:
    """The error callback of one client: remembers the first authentication or TLS failure."""

    def __init__(self, bootstrap: str, sec: ClientSecurity, strict: bool = False) -> None:
        self.bootstrap, self.sec = bootstrap, sec
        # strict (the check before a command starts): a disconnect during the TLS or SASL handshake counts
        # too. Not for a running client: a broker killed mid-handshake must stay a passing fault.
        self.strict = strict
        self.failure: str | None = None

    def __call__(self, err) -> None:
        from confluent_kafka import KafkaError
        text = err.str()
        fatal = err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL) or (
            self.strict and err.code() == KafkaError._TRANSPORT and ("SSL" in text or "SASL" in text))
        if fatal:
            self.failure = self.failure or text
        elif err.code() == KafkaError._ALL_BROKERS_DOWN:
            log.debug("kafka: %s", text)  # follows another error (refused, disconnected), reported on its own
        else:
            log.warning("kafka: %s", text)

    def check(self) -> None:
        if self.failure is not None:
            raise AccessDenied(f"{self.bootstrap}: {self.sec.describe()} refused: {_short(self.failure)}")


def _short(text: str) -> str:
    """librdkafka's message without its broker prefix ("sasl_ssl://127.0.0.1:9094/bootstrap: ")."""
    return text.split(": ", 1)[1] if "://" in text.split(": ", 1)[0] else text


def config(bootstrap: str, sec: ClientSecurity, strict: bool = False, **extra) -> tuple[dict, AccessWatch]:
    watch = AccessWatch(bootstrap, sec, strict)
    conf = {"bootstrap.servers": bootstrap, **librdkafka_config(sec), "error_cb": watch,
            "logger": _DebugLogger(), **extra}
    return conf, watch


def check_access(bootstrap: str, sec: ClientSecurity, timeout: float = 15.0) -> None:
    """Raise AccessDenied when the brokers refuse `sec` (a wrong password, an untrusted certificate). A
    cluster that does not answer in `timeout` is not an error here: the clients wait for it as before."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    if sec.protocol == "PLAINTEXT":
        return  # nothing that could be refused
    conf, watch = config(bootstrap, sec, strict=True, **{"socket.timeout.ms": 10_000})
    admin = AdminClient(conf)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=1.0)
            return
        except KafkaException:
            admin.poll(0)  # runs the error callback
            watch.check()
