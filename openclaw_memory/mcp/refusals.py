"""Plain words for JSON-RPC messages the MCP SDK cannot take.

The SDK words such a message in its validator's terms (``JSONRPCRequest.method``, a union's
whole dump, or ``Invalid request parameters`` with nothing said, as for params one of MCP's own
methods does not take): stdio and HTTP answer these reasons instead, with the request's id when it
has one.
"""

from __future__ import annotations

import json
import re

INVALID_REQUEST, INVALID_PARAMS = -32600, -32602
ID_IN_USE = "its id {id} belongs to a request not answered yet (MCP never reuses a request id within a session)"
ODD_ID = "its id must be a string or an integer (null, fractions, booleans, arrays and objects are not request ids)"
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def has_request_id(message: dict) -> bool:
    """Whether a JSON-RPC message carries a request id (a string or a whole number)."""
    return isinstance(message.get("id"), (int, str)) and not isinstance(message.get("id"), bool)


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_ID_VALUE = re.compile(r'\s*:\s*(-?[0-9]{1,300}(?![0-9.eE])|"(?:[^"\\]|\\.)*")')


def top_level_id(text: str) -> int | str | None:
    """The request id of a message no parser here can read whole (nested past its depth, or cut
    short), found by its tokens in one pass: a client waits for an answer with its id."""
    if not text.lstrip().startswith("{"):
        return None
    depth = 0
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
        elif mark in "]}":
            depth -= 1
        elif depth == 1 and mark == '"id"' and (value := _ID_VALUE.match(text, token.end())):
            try:
                found = json.loads(value.group(1))
            except ValueError:  # an escape JSON does not allow
                return None
            return found if isinstance(found, (int, str)) else None
    return None


def surrogate_reason(parsed: object) -> str | None:
    """Why a message holding a lone UTF-16 surrogate cannot be taken (no UTF-8 text holds one); None
    when it holds none. One of U+DC80-U+DCFF is how the tools' JSON writes a byte of a file name that
    is not UTF-8 (``memory_files`` lists such a file so), which an agent may give back."""
    text = json.dumps(parsed, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = text[exc.start]
        if "\udc80" <= char <= "\udcff":
            return (f"it holds \\u{ord(char):04x}, the escape of a byte of a file name that is not UTF-8: no tool call "
                    "can name such a file (JSON carries Unicode text); rename the file to reach it over MCP (the CLI "
                    "reads and writes it)")
        return "it holds a lone UTF-16 surrogate (half a character, as a split emoji); send whole characters"
    return None


def lone_surrogate_reason(body: bytes, parsed: object) -> str | None:
    """:func:`surrogate_reason` for a body as it came, looked into only when it has such an escape."""
    return surrogate_reason(parsed) if _SURROGATE_ESCAPE.search(body) else None


def message_problem(data: object) -> tuple[int, str] | None:
    """(code, reason) when ``data``, one parsed JSON-RPC message, cannot be taken; None when it can."""
    if isinstance(data, list):
        return INVALID_REQUEST, "a batch (a JSON array of messages) is not supported: send one message at a time"
    if not isinstance(data, dict):
        return INVALID_REQUEST, f"a message is a JSON object, not {_kind(data)}"
    if data.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'its "jsonrpc" member must be "2.0"'
    if "method" not in data:
        if "result" in data or "error" in data:
            return None  # a response to a request of the server's
        return INVALID_REQUEST, 'it has no "method" (a request names the method it calls)'
    if "id" in data and not has_request_id(data):
        # The SDK takes a request whose id is null, a fraction, a boolean or an object for a
        # notification: it would run unanswered.
        return INVALID_REQUEST, ODD_ID
    if not isinstance(data["method"], str):
        return INVALID_REQUEST, f'its "method" must be a string, not {_kind(data["method"])}'
    params = data.get("params")
    if params is not None and not isinstance(params, dict):
        return INVALID_PARAMS, f'its "params" must be an object, not {_kind(params)}'
    if data["method"] == "tools/call":
        return tool_call_problem(params or {})
    return None


def tool_call_problem(params: dict) -> tuple[int, str] | None:
    """(code, reason) when the params of a ``tools/call`` cannot name a tool and its arguments."""
    if not isinstance(params.get("name"), str):
        return INVALID_PARAMS, 'its "params" must hold "name", the tool to call (a string)'
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        return INVALID_PARAMS, f'its "params.arguments" must be an object of the tool\'s arguments, not {_kind(arguments)}'
    return None


def params_problem(method: str, version: str, params: dict | None) -> tuple[int, str] | None:
    """(code, reason) when the params of a request of one of MCP's own methods are not what that
    method takes in the protocol ``version`` (the SDK's own check, which it answers only with
    "Invalid request parameters"): where, and what. None when they are, or when the method is
    not MCP's or not in that version (the SDK answers that one: method not found)."""
    from mcp_types import methods
    from pydantic import ValidationError

    if method not in methods.SPEC_CLIENT_METHODS:
        return None
    try:
        methods.validate_client_request(method, version, params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _where(first.get("loc", ()), {"params": params})
        said = _MODEL.sub("an object", str(first.get("msg")))
        return INVALID_PARAMS, f"{where}: {said}" if where else said
    except (KeyError, ValueError):  # a method this version does not have, or a version it does not know
        return None
    return None


_MODEL = re.compile(r"a valid dictionary or instance of \w+")  # the validator names its model classes


def _where(loc: tuple, data: object) -> str:
    """The member a validator's complaint is about, as the message names it: its path through the
    message's objects, without the union members the validator tried (``progressToken.str``)."""
    parts = []
    for part in loc:
        if not isinstance(data, dict) or not isinstance(part, str):
            break
        parts.append(part)
        data = data.get(part)
    return ".".join(parts)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
