"""The authorizer's decision lines (logger ``kafka.authorizer.logger``), in the three forms Kafka 2.8 to 4.x write
(docs/how-to/requests.md, each read from its release's source):

- ``acl-authorizer``: ZooKeeper mode's AclAuthorizer (2.8 to 3.9), ``Principal = P is Allowed Operation = Alter from
  host = H on resource = Topic:LITERAL:t for request = CreateTopics with resourceRefCount = 1``;
- ``standard-authorizer``: StandardAuthorizer (3.3 to 4.x), ``... is Allowed operation = ALTER ... with
  resourceRefCount = 1 based on rule DefaultAllow``;
- ``simple-acl``: 2.8's deprecated SimpleAclAuthorizer, the first form without its request and count.

AclAuthorizer also writes, at DEBUG, how it decided (no acl found, a super user, the acl that matched) beside the
decision's line: those lines are counted, not kept, since the decision's own line says who asked for what.

A line is split at its words only when each of them is there once: a principal or a resource name that holds them
(a group called ``x for request = Fetch``) makes the line ambiguous, a gap, never a guess.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from services.requests.apis import CHANGING_OPERATIONS, KEY_OF, enum_name
from schemas.requests.record import AUTHORIZER_LOGGER, RequestLine, Resource

FORMS = ("acl-authorizer", "standard-authorizer", "simple-acl")

_RESOURCE = r"(?P<rtype>[A-Za-z]+):(?P<pattern>[A-Z]+):(?P<name>.*)"
_HEAD = r"Principal = (?P<principal>.+) is (?P<result>Allowed|Denied) "
_STANDARD = re.compile(
    _HEAD + r"operation = (?P<operation>[A-Z_]+) from host = (?P<host>\S+) on resource = " + _RESOURCE +
    r" for request = (?P<api>\S+) with resourceRefCount = (?P<refs>\d{1,9}) based on rule (?P<rule>.*)", re.S)
_ACL = re.compile(
    _HEAD + r"Operation = (?P<operation>[A-Za-z]+) from host = (?P<host>\S+) on resource = " + _RESOURCE +
    r" for request = (?P<api>\S+) with resourceRefCount = (?P<refs>\d{1,9})", re.S)
_SIMPLE = re.compile(
    _HEAD + r"Operation = (?P<operation>[A-Za-z]+) from host = (?P<host>\S+) on resource = " + _RESOURCE, re.S)

# the words a line is split at, each of which must be there once (the rule's only in the StandardAuthorizer form)
_WORDS = (" from host = ", " on resource = ")
_REQUEST_WORDS = (" for request = ", " with resourceRefCount = ")
_RULE = " based on rule "
_API = re.compile(r" for request = (\S+) with resourceRefCount = ")


@dataclass(frozen=True, slots=True)
class Unread:
    """A line of the authorizer's logger in none of its forms, or one whose words repeat: why, for the gap."""
    reason: str


@dataclass(frozen=True, slots=True)
class Passed:
    """A decision for an API that changes no controller state: counted under its API, not kept."""
    api: str


def api_of(message: str) -> str | None:
    """The request a decision line names, cheaply, to pass over the APIs not kept before reading the line whole
    (None: none named, either the simple-acl form or none of the forms)."""
    m = _API.search(message)
    return m.group(1) if m else None


def _detail(message: str) -> bool:
    """One of AclAuthorizer's DEBUG lines of how it decided (2.8.0 to 3.8.0, `authorizeAction`), written beside
    the decision's own line: no acl for the resource, a super user, the acl that matched."""
    return (message.startswith("No acl found for resource ") and ", authorized = " in message
            or message.startswith("principal = ") and message.endswith(_SUPER_USER)
            or message.startswith("operation = ") and " based on acl = " in message)


_SUPER_USER = " is a super user, allowing operation without checking acls."


def decision(message: str, file: str, line: int, time_ms: int, level: str) -> RequestLine | Unread | Passed:
    """The decision a line of ``kafka.authorizer.logger`` states."""
    if not message.startswith("Principal = "):
        if _detail(message):
            return Passed("(how AclAuthorizer decided)")
        return Unread("an authorizer line in none of Kafka's forms (not 'Principal = ...')")
    counts = [message.count(" is Allowed ") + message.count(" is Denied "), *(message.count(w) for w in _WORDS)]
    if max(counts) > 1:
        return Unread("an authorizer line whose words repeat (a name holds them): ambiguous")
    if min(counts) == 0:
        return Unread("an authorizer line in none of Kafka's forms")
    requests = [message.count(w) for w in _REQUEST_WORDS]
    if requests == [0, 0]:
        form, m = "simple-acl", _SIMPLE.fullmatch(message)
    elif requests != [1, 1] or message.count(_RULE) > 1:
        return Unread("an authorizer line whose words repeat (a name holds them): ambiguous")
    elif _RULE in message:
        form, m = "standard-authorizer", _STANDARD.fullmatch(message)
    else:
        form, m = "acl-authorizer", _ACL.fullmatch(message)
    if m is None:
        return Unread(f"an authorizer line not in the {form} form")
    operation = m.group("operation")
    if form != "standard-authorizer":  # the ZooKeeper-mode authorizers print it in Pascal case
        operation = enum_name(operation)
    api: str | None = m.group("api") if form != "simple-acl" else None
    if api is None:
        if operation not in CHANGING_OPERATIONS:
            return Passed(f"({operation.lower()})")
    elif api not in KEY_OF:
        return Passed(api)
    resource = Resource(m.group("rtype"), m.group("pattern"), m.group("name"))
    return RequestLine(
        AUTHORIZER_LOGGER, form, file, line, time_ms, level, m.group("principal"),
        api, KEY_OF.get(api) if api is not None else None,
        host=m.group("host"), outcome="allowed" if m.group("result") == "Allowed" else "denied",
        operation=operation, resources=(resource,), rule=m.group("rule") if form == "standard-authorizer" else None,
        ref_count=int(m.group("refs")) if form != "simple-acl" else None)
