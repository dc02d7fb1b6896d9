"""Which config values never reach the archive: those Kafka itself treats as secrets, and the user's.

A config is sensitive when
1. Kafka declares it ConfigDef.Type.PASSWORD (password_configs.py, generated from the jars of the pinned
   versions), also in Kafka's per-listener forms `listener.name.<listener>.<config>` and
   `listener.name.<listener>.<sasl mechanism>.<config>`;
2. its name ends in one of FALLBACK_SUFFIXES (always on);
3. or it matches one of the user's patterns, CTRLAUDIT_REDACT_PATTERNS: comma-separated, each a glob
   (`*`, `?`, `[...]`) or `re:<regex>`, matched case-insensitively against the whole name (and against its
   per-listener reductions); they add to 1 and 2, they never replace them.

Why a fallback beyond Kafka's own list: a ConfigRecord can carry configs that no Kafka ConfigDef declares
(plugins' own, e.g. a custom authorizer's or a remote storage manager's `rsm.config.*`, and a listener's
custom callback handlers), and Kafka's list cannot name them. A false positive only hides a value; a
false negative puts a secret into a hash-chained archive that cannot be edited without breaking its
chain. No config of the pinned jars that is not PASSWORD ends in these suffixes (a `kafka`-marked test
checks it against the jars), so the fallback hides nothing Kafka itself declares visible.

The KRaft log itself holds PASSWORD values in clear ("In KRaft mode, Kafka stores sensitive data in
records, and the data is not encrypted in Kafka": kafka.apache.org/40/getting-started/zk2kraft; the
ZooKeeper-mode password encoder is gone), so this is where they are hidden. A null value (a deleted key)
stays null: the record says the key is gone, which is not a secret.

Bytes no decoder here can read are never kept (`withheld`): a ConfigRecord of a version this build does not
know, a record type it does not know, a record that fails to decode, a config znode that is not the JSON it
should be. Which of their bytes is a config's value cannot be told, so the name-based rules above cannot be
applied to them, and a future version may carry a PASSWORD config like any other. The event keeps what the
record is (apiKey, version, why it was not read) and how long its value was; not a digest, since a digest
of a short password (with the rest of the record guessable) can be brute-forced.
"""
from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache
from hashlib import sha256

from schemas.errors import ContractError
from schemas.events import REDACTED
from services.normalize.password_configs import PASSWORD_CONFIGS

ENV = "CTRLAUDIT_REDACT_PATTERNS"
FALLBACK_SUFFIXES = ("password", "passphrase", "secret", ".key", ".token", "credentials", "jaas.config")
_LISTENER_PREFIX = "listener.name."


class RedactionPatternError(ContractError):
    """CTRLAUDIT_REDACT_PATTERNS holds a pattern that cannot be used: one line naming it."""


@lru_cache(maxsize=8)
def compile_patterns(spec: str) -> tuple[re.Pattern[str], ...]:
    """The user's patterns as regexes to fullmatch a lower-cased name; a bad one is RedactionPatternError."""
    out = []
    for raw in (p.strip() for p in spec.split(",")):
        if not raw:
            continue
        if raw.startswith("re:"):
            if not raw[3:]:
                raise RedactionPatternError(f"{ENV}: {raw!r} is an empty regex (it would match no config)")
            try:
                out.append(re.compile(raw[3:], re.IGNORECASE))
            except (re.error, OverflowError, RecursionError) as exc:  # a{99999999999}: Python's limits
                raise RedactionPatternError(f"{ENV}: {raw!r} is not a valid regex ({exc})") from None
        else:
            out.append(re.compile(fnmatch.translate(raw.lower())))
    return tuple(out)


def patterns() -> tuple[re.Pattern[str], ...]:
    return compile_patterns(os.environ.get(ENV, ""))


def forms(name: str) -> tuple[str, ...]:
    """The lower-cased name and, for Kafka's per-listener configs, the config it sets for that listener
    (with and without a SASL mechanism segment: which of the two it is cannot be told from the name)."""
    lowered = name.lower()
    if not lowered.startswith(_LISTENER_PREFIX):
        return (lowered,)
    parts = lowered[len(_LISTENER_PREFIX):].split(".")
    return (lowered, *(".".join(parts[i:]) for i in (1, 2) if len(parts) > i))


def is_sensitive(name: str) -> bool:
    candidates = forms(name)
    if any(c in PASSWORD_CONFIGS or c.endswith(FALLBACK_SUFFIXES) for c in candidates):
        return True
    return any(p.fullmatch(c) for p in patterns() for c in candidates)


def redact(name: str, value: str | None, previous: str | None) -> tuple[str | None, str | None, bool]:
    """Values of sensitive configs never reach the archive (the metadata shell's Strict mode)."""
    if is_sensitive(name):
        return (None if value is None else REDACTED), (None if previous is None else REDACTED), True
    return value, previous, False


def withheld(reason: str, value: bytes) -> str:
    """The reason an unread record is kept with: why it was not read, and that its value is withheld."""
    return (f"{reason}; its {len(value)}-byte value is withheld (a record this decoder cannot read may "
            "carry a secret)")


class SecretDigests:
    """What a normalizer remembers of the sensitive values it has read: a salted sha256 each, never the value.

    The image holds configs as the archive does, a secret as "[redacted]", so it cannot tell a secret that
    a snapshot (or ZooKeeper's whole-znode rewrite) merely restates from one that changed meanwhile; a
    changed secret must still be recorded (a REDACTED -> REDACTED ConfigChange: "it changed here")."""

    def __init__(self, digests: dict[tuple[str, str, str], str] | None = None) -> None:
        self.digests = digests if digests is not None else {}

    def changed(self, key: tuple[str, str, str], value: str | None) -> bool:
        """Remember `value` for key (resource type, resource, name); True when it differs from the one before."""
        digest = None if value is None else sha256("\0".join((*key, value)).encode()).hexdigest()
        if self.digests.get(key) == digest:
            return False
        if digest is None:
            del self.digests[key]
        else:
            self.digests[key] = digest
        return True
