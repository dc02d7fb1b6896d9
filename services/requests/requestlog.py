"""The request log's lines (logger ``kafka.request.logger``): ``Completed request:`` and one JSON object, the form of
Kafka 2.8 to 4.x (RequestConvertToJson's ``requestDescMetrics``; docs/how-to/requests.md says what each release
adds). The JSON's first keys are fixed (``{"isForwarded":...,"requestHeader":{"requestApiKey":N,``), which tells a
line's API before the line is parsed: the lines of APIs not kept are counted and passed over unparsed, which is
what makes a busy broker's log readable at speed.

The request log names no host: the client's address is the remote end of the connection, on the node the client
is connected to. On a controller's line of a forwarded request the connection is the forwarding broker's, so the
client's host is not on that line (the controller's authorizer line has it).
"""
from __future__ import annotations

import json
import re

from services.requests.apis import KEPT, enum_name
from services.requests.authorizer import Passed, Unread
from services.requests.body import Malformed, body, error_codes, flag, number, obj, opt_text, text
from schemas.requests.record import REQUEST_LOGGER, RequestLine

FORM = "request-json"
PREFIX = "Completed request:"
_HEAD = re.compile(r'Completed request:\{"isForwarded":(?:true|false),"requestHeader":\{"requestApiKey":(\d{1,5}),')
# local:port-remote:port-index (to 3.9), local:port-remote:port-processor-index (4.0): host addresses, no '-'
_CONNECTION = re.compile(r"([^\s-]+):(\d{1,5})-([^\s-]+):(\d{1,5})-(?:\d+-)?\d+")


def api_key_of(message: str) -> int | None:
    """The API key of a request log line, from its fixed opening (None: not in the JSON form)."""
    m = _HEAD.match(message)
    return int(m.group(1)) if m else None


def completed(message: str, file: str, line: int, time_ms: int, level: str) -> RequestLine | Unread | Passed:
    """The request a line of ``kafka.request.logger`` states."""
    key = api_key_of(message)
    if key is None:
        if message.startswith(PREFIX):
            return Unread("a request log line not in the JSON form of Kafka 2.8 to 4.x (before 2.8: text)")
        return Unread("a request log line that is not 'Completed request:'")
    api = KEPT.get(key)
    if api is None:
        return Passed(f"#{key}")
    try:
        d = json.loads(message[len(PREFIX):])
    except (ValueError, RecursionError):  # cut, damaged, nested past the parser's depth, digits past int's limit
        return Unread("a request log line whose JSON does not parse")
    try:
        return _read(d, api, key, file, line, time_ms, level)
    except Malformed as exc:
        return Unread(f"a request log line not in the JSON form of Kafka 2.8 to 4.x ({exc.path}: "
                      f"{str(exc).split(': ', 1)[1]})")


def _read(d: object, api: str, key: int, file: str, line: int, time_ms: int, level: str) -> RequestLine:
    d = obj(d, "line")
    header = obj(d.get("requestHeader"), "requestHeader")
    name = text(header.get("requestApiKeyName"), "requestHeader.requestApiKeyName")
    if name != enum_name(api):
        raise Malformed("requestHeader.requestApiKeyName", f"{name} is not API {key}'s name")
    version = number(header.get("requestApiVersion"), "requestHeader.requestApiVersion")
    forwarded = flag(d.get("isForwarded"), "isForwarded")
    info = obj(d.get("clientInformation"), "clientInformation")
    connection = text(d.get("connection"), "connection")
    m = _CONNECTION.fullmatch(connection)
    return RequestLine(
        REQUEST_LOGGER, FORM, file, line, time_ms, level, text(d.get("principal"), "principal"), api, key,
        api_version=version, correlation_id=number(header.get("correlationId"), "requestHeader.correlationId"),
        client_id=opt_text(header.get("clientId"), "requestHeader.clientId"),
        host=m.group(3) if m and not forwarded else None,
        listener=text(d.get("listener"), "listener"),
        security_protocol=text(d.get("securityProtocol"), "securityProtocol"),
        software_name=text(info.get("softwareName"), "clientInformation.softwareName"),
        software_version=text(info.get("softwareVersion"), "clientInformation.softwareVersion"),
        connection=connection, forwarded=forwarded,
        error_codes=error_codes(d.get("response")), body=body(api, version, d.get("request")))
