"""Lines as Kafka writes them, built here from its format strings (docs/how-to/requests.md names each source file
and tag): the log4j layout of every release's config, the authorizers' decision lines and the request log's JSON,
per release family. No line is copied from a Kafka log or test; each follows the format string it names."""
from __future__ import annotations

import json
from typing import Any

DATE = "2026-11-20 03:10:00,123"
AT_MS = 1_795_144_200_123  # DATE read as UTC


def log4j(message: str, logger: str, level: str = "DEBUG", date: str = DATE) -> str:
    """config/log4j.properties (2.8.0 to 3.9) and config/log4j2.yaml (4.x): [%d] %p %m (%c)%n"""
    return f"[{date}] {level} {message} ({logger})"


def acl_authorizer(principal: str, allowed: bool, operation: str, host: str, resource: str, api: str,
                   refs: int = 1) -> str:
    """AclAuthorizer.logAuditMessage (2.8.0 to 3.8.0): `operation` in Pascal case (SecurityUtils.operationName)."""
    result = "Allowed" if allowed else "Denied"
    return (f"Principal = {principal} is {result} Operation = {operation} "
            f"from host = {host} on resource = {resource} for request = {api} with resourceRefCount = {refs}")


def standard_authorizer(principal: str, allowed: bool, operation: str, host: str, resource: str, api: str,
                        rule: str, refs: int = 1) -> str:
    """StandardAuthorizerData.buildAuditMessage (3.3.0 to 4.x): `operation` as AclOperation's name."""
    result = "Allowed" if allowed else "Denied"
    return (f"Principal = {principal} is {result} operation = {operation} from host = {host} on resource = "
            f"{resource} for request = {api} with resourceRefCount = {refs} based on rule {rule}")


def matching_acl(resource_type: str, name: str, pattern: str, principal: str, operation: str, permission: str,
                 host: str = "*") -> str:
    """StandardAuthorizerData.MatchingAclRule.toString and StandardAcl.toString (3.3.0 to 4.x)."""
    return (f"MatchingAcl(acl=StandardAcl(resourceType={resource_type}, resourceName={name}, patternType={pattern}, "
            f"principal={principal}, host={host}, operation={operation}, permissionType={permission}))")


def simple_acl(principal: str, allowed: bool, operation: str, host: str, resource: str) -> str:
    """SimpleAclAuthorizer's BaseAuthorizer.logAuditMessage (2.8.0 only)."""
    result = "Allowed" if allowed else "Denied"
    return f"Principal = {principal} is {result} Operation = {operation} from host = {host} on resource = {resource}"


def completed(api_key: int, api_name: str, version: int, request: Any, response: Any, *, family: str = "3.x",
              correlation: int = 7, client_id: str | None = "adminclient-1", forwarded: bool = False,
              connection: str = "10.0.0.1:9092-10.0.0.5:52314-12", principal: str = "User:alice",
              listener: str = "EXTERNAL", protocol: str = "SASL_SSL",
              software: tuple[str, str] = ("apache-kafka-java", "3.7.0"), deprecated: bool = False) -> str:
    """RequestChannel's "Completed request:" + RequestConvertToJson.requestDescMetrics (2.8.0 to 4.x): Jackson's
    compact JSON, keys in the order they are set. `family`: "2.8" (no requestApiVersionDeprecated), "3.x" (3.7+:
    requestApiVersionDeprecated when deprecated), "4.x" (null for a body not kept; connection with processor)."""
    header: dict[str, Any] = {"requestApiKey": api_key, "requestApiVersion": version, "correlationId": correlation}
    if client_id is not None:
        header["clientId"] = client_id
    header["requestApiKeyName"] = api_name
    if deprecated and family != "2.8":
        header["requestApiVersionDeprecated"] = True
    none = None if family == "4.x" else ""
    line = {"isForwarded": forwarded, "requestHeader": header,
            "request": none if request is None else request, "response": none if response is None else response,
            "connection": connection, "totalTimeMs": 1.234, "requestQueueTimeMs": 0.1, "localTimeMs": 0.9,
            "remoteTimeMs": 0.0, "throttleTimeMs": 0, "responseQueueTimeMs": 0.1, "sendTimeMs": 0.1,
            "securityProtocol": protocol, "principal": principal, "listener": listener,
            "clientInformation": {"softwareName": software[0], "softwareVersion": software[1]}}
    return "Completed request:" + json.dumps(line, separators=(",", ":"), ensure_ascii=False)
