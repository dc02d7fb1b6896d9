"""Which config values never reach the archive: those Kafka itself treats as secrets.

A config is sensitive when Kafka declares it ConfigDef.Type.PASSWORD (password_configs.py, generated
from the jars), also in Kafka's per-listener form (`listener.name.<listener>.<config>` and
`listener.name.<listener>.<sasl mechanism>.<config>`), or when it matches one of the user's patterns
(CTRLAUDIT_REDACT_PATTERNS: comma-separated globs, or `re:<regex>`). The default patterns catch the
naming convention of plugins' own secrets (`*.password`, `*.passphrase`, `*.secret`, `*jaas.config`): a false
positive only hides a value, a false negative puts a secret into an archive kept forever.
"""
from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache

from schemas.errors import ContractError
from services.normalize.password_configs import PASSWORD_CONFIGS

REDACTED = "[redacted]"
DEFAULT_PATTERNS = "*.password,*.passphrase,*.secret,*password,*jaas.config"
_LISTENER = re.compile(r"listener\.name\.[^.]+\.(?:[a-z0-9_-]+\.)?(?P<config>.+)", re.IGNORECASE)


class RedactionPatternError(ContractError):
    """CTRLAUDIT_REDACT_PATTERNS holds a pattern that is not a valid regex: one line naming it."""


@lru_cache(maxsize=8)
def compile_patterns(spec: str) -> tuple[re.Pattern[str], ...]:
    out = []
    for raw in (p.strip() for p in spec.split(",")):
        if not raw:
            continue
        if raw.startswith("re:"):
            try:
                out.append(re.compile(raw[3:], re.IGNORECASE))
            except re.error as exc:
                raise RedactionPatternError(f"CTRLAUDIT_REDACT_PATTERNS: {raw!r} is not a valid regex ({exc})") from None
        else:
            out.append(re.compile(fnmatch.translate(raw.lower())))
    return tuple(out)


def patterns() -> tuple[re.Pattern[str], ...]:
    return compile_patterns(os.environ.get("CTRLAUDIT_REDACT_PATTERNS", DEFAULT_PATTERNS))


def is_sensitive(name: str) -> bool:
    lowered = name.lower()
    if lowered in PASSWORD_CONFIGS:
        return True
    m = _LISTENER.fullmatch(lowered)
    if m and (m["config"] in PASSWORD_CONFIGS or lowered.split(".", 3)[3] in PASSWORD_CONFIGS):
        return True
    return any(p.fullmatch(lowered) for p in patterns())


def redact(name: str, value: str | None, previous: str | None) -> tuple[str | None, str | None, bool]:
    """Values of sensitive configs never reach the archive (the metadata shell's Strict mode)."""
    if is_sensitive(name):
        return (None if value is None else REDACTED), (None if previous is None else REDACTED), True
    return value, previous, False
