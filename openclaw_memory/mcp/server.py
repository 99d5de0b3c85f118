"""The MCP server: the agent's memory as tools over stdio (official ``mcp`` SDK, 2.x), one per
operation declared with a :class:`~openclaw_memory.memory.operations.Tool`; OpenClaw's four:

- ``memory_search`` (query, maxResults, minScore): the JSON of ``search --json``, OpenClaw's keys
  (``stale: true`` with ``warning`` and ``action`` only when stale) and ``message`` when nothing matched;
- ``memory_get`` (path, from, lines: whole numbers of 1 or more, refused otherwise as OpenClaw's tool
  refuses them; maxChars, this product's own: any number, floored, below 1 read as 1): the JSON of
  ``read --json`` plus ``version`` (a read, recorded for the stale-write guard);
- ``memory_write`` (path, content or append, expect): guarded like ``write``; a blocked write is a
  tool error carrying the message that says what to do;
- ``memory_status``: the JSON of ``status --json``.
- ``memory_files``: the JSON of ``files --json``, each file with its modified time and this session's state;
- ``memory_links`` (path, broken): the JSON of ``links --json``.

One server serves one agent of one workspace, and is one session: its reads are its own
(the write guard checks what this session read), or those of the session ``--session ID`` names. When the workspace's service runs
(``openclaw-memory serve``, or ``mcp --serve`` to start it), the calls go to it and many
sessions share one index and one model; otherwise the model is loaded here once and no shard
lock is held between calls. Every failure is a tool error in the tools' words; the server
keeps serving. :mod:`.http` serves the same tools over streamable HTTP.
"""

from __future__ import annotations

import contextvars
import difflib
import json
import math
import os
import re
import secrets
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SURROGATE, BadValue, MemoryToolError, bytes_shown, cut, one_line, shown, suggested
from ..memory import OPERATIONS, to_json
from ..memory.operations import Operation, plain_type
from ..settings import command_line

if TYPE_CHECKING:
    from ..memory import Memory
    from ..settings import Settings

SERVER_NAME = "openclaw-memory"


def indexed_scope(settings: Settings) -> str:
    """Exactly what the tools see, for the tool descriptions."""
    if settings.extra_paths:
        extras = (
            "; plus these extra paths: " + ", ".join(settings.extra_paths)
            + " (every .md file under an extra folder, recursively; an extra file itself)."
        )
    else:
        extras = ". No extra paths are configured."
    return bytes_shown(
        f"Memory of agent '{settings.agent}' in workspace {settings.workspace}: MEMORY.md, USER.md (and the dream "
        f"diary DREAMS.md) at the workspace root, and every Markdown (.md) file under memory/, recursively{extras}"
    )


# A name that is not UTF-8 (a file, the workspace's folder) is held as surrogate escapes, one per byte
# (U+DC80-U+DCFF): no UTF-8 text can carry them, and the SDK's answer holding one failed, stopping
# the server. Every text sent is written without them.


def tool_json(value: Any) -> str:
    """A tool's JSON text: such a byte as its JSON escape (``\\udcff``), which gives the exact name
    back to a JSON reader, as the CLI's JSON does; the rest as it is (``é``, not ``\\u00e9``)."""
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False, indent=2))


class MemoryTools:
    """The tools' logic: each call goes to the :class:`~openclaw_memory.memory.Memory` for the MCP
    session of the call (``session_of(ctx)``; its read records are its own).

    Given ``open_memory`` (and ``settings``) instead of a memory, the memory is opened at the first
    call that needs it, and again at each call after a refusal (a state dir other users may write
    in, another user's, a service that would not start): each such call is a tool error in the CLI's
    one line, and the call after the fix works. The stdio server had answered ``initialize`` and
    ``tools/list``, then exited 2 with the reason on stderr only (``Connection closed`` for every call)."""

    def __init__(self, memory: Memory | None, *, settings: Settings | None = None,
                 open_memory: Callable[[], Memory] | None = None, session_of: Callable[[Any], str] | None = None,
                 on_read: Callable[[Any, Callable[[], None] | None], None] | None = None):
        self._memory = memory
        self._open = open_memory
        self._opening = threading.Lock()
        settings = memory.settings if memory is not None else settings
        assert settings is not None and (memory is not None or open_memory is not None)
        self.settings = settings
        # The session `--session ID` names (`mcp --session ID`): the reads the CLI recorded under it
        # count for this server's writes, and its records outlive the server, as the CLI's do; else
        # one of its own, which goes with the server. (`--session` was taken and ignored.)
        self._named = settings.session
        self._session = settings.session or f"mcp-{os.getpid()}-{secrets.token_hex(4)}"
        self.session_of = session_of or (lambda _ctx: self._session)
        # Told of each memory_get once it has run, with how to take back the read it recorded (None:
        # it recorded none), for a transport that may not deliver the answer (:mod:`.http`).
        self.on_read = on_read

    @property
    def memory(self) -> Memory:
        return self.open()

    def open(self) -> Memory:
        """The memory, opened now if it was not (a refusal raises: the calling tool's error)."""
        with self._opening:  # calls run in threads: one opens, the others wait for it
            if self._memory is None:
                assert self._open is not None
                self._memory = self._open()
            return self._memory

    def call(self, ctx, op: Operation, arguments: dict) -> dict:
        """The tool's JSON: the operation's result, shaped as OpenClaw's tool of that name shapes it."""
        assert op.tool is not None
        memory = self.memory.for_session(self.session_of(ctx))
        undo: Callable[[], None] | None = None
        try:
            value = memory.call(op, (), {**arguments, **op.tool.fixed})
            if op.name == "read" and getattr(value, "version", None):
                undo = lambda: memory.forget_read(value.path, value.version)  # noqa: E731
                if (undos := _CALL_READS.get(None)) is not None:
                    undos.append(undo)
        finally:
            if op.name == "read" and self.on_read is not None:
                self.on_read(ctx, undo)
        if op.name in ("search", "listing"):  # a command it names, as the model's shell must run it
            value = value.suggesting(command_line(self.settings, in_force=True))
        result = to_json(value)
        shape = _SHAPES.get(op.tool.name)
        return shape(memory, arguments, result) if shape is not None else result

    def close(self) -> None:
        if self._memory is None:
            return  # never opened: no read recorded (opening it now would start a service for nothing)
        if self._named is not None:  # a session named on the command line: a person may come back to it
            self._memory.close()
            return
        try:
            self._memory.for_session(self._session).end_session()
        except (MemoryToolError, OSError):
            pass  # its read records stay until the service's own sweep, or the next session's
        self._memory.close()


# The reads a tool call recorded, for its call_tool to take back when the client cancels the call
# (one list per call: set in its task, whose worker thread runs in a copy of its context).
_CALL_READS: contextvars.ContextVar[list[Callable[[], None]]] = contextvars.ContextVar("call_reads")


def take_back(undo: Callable[[], None] | None) -> None:
    """Take back a read whose answer did not reach the client (``Memory.forget_read``); a failure is one line."""
    if undo is None:
        return
    try:
        undo()
    except (MemoryToolError, OSError) as exc:
        said = exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
        _warn(f"a read whose answer did not reach the client is still recorded for the write guard: {said}")


def _search_message(memory: Memory, arguments: dict, result: dict) -> dict:
    if not result["results"]:
        min_score = arguments["min_score"]
        tool = OPERATIONS["search"].tool
        assert tool is not None
        given = [tool.argument(name) for name in ("collections", "paths", "since", "until") if arguments.get(name)]
        within = f" of those {', '.join(given)} admit" if given else ""  # (a filter that admits none is not the score's)
        result["message"] = (f"Nothing in this memory matches: no file passes the filters given ({', '.join(given)})." if result.get("filteredOut")
                             else f"Nothing in this memory matches (no file{within} scored {min_score:g} or more)." if min_score > 0
                             else "Nothing in this memory (within the filters given) answers the query.")
    return result


def _with_service(memory: Memory, arguments: dict, result: dict) -> dict:
    service = to_json(memory.service())
    if service.get("note"):  # a command it bids run acts on this server's workspace and agent (review: no flags)
        service["note"] = suggested(service["note"], command_line(memory.settings, in_force=True))
    return {**result, "service": service}


def _replay_message(memory: Memory, arguments: dict, result: dict) -> dict:
    """A replayed memory_write says in words that nothing was written now (its JSON is the first write's)."""
    if not result.get("replayed"):
        return result
    done = "appended to" if result.get("action") == "append" else "written to"
    message = (f"Replayed: nothing was {done} {result['path']} now. An earlier call with the same idempotencyKey made "
               f"version {str(result['version'])[:12]} ({result['size']} bytes), which the file still holds: this call "
               "was taken as a retry of it.")
    if arguments.get("idempotency_key") is None:
        again = "append the same text" if result.get("action") == "append" else "write the same content"
        message += (f" To {again} again on purpose, read the file first with memory_get (a read since that write "
                    "makes the next one a new write) or give the call its own idempotencyKey.")
    else:
        message += " Another write takes its own idempotencyKey."
    return {**result, "message": message}


# What a tool adds to its operation's JSON, as OpenClaw's tool of that name answers.
_SHAPES: dict[str, Callable[[Memory, dict, dict], dict]] = {"memory_search": _search_message, "memory_status": _with_service,
                                                             "memory_write": _replay_message}


@dataclass(frozen=True)
class ToolParam:
    """One argument of a tool: its JSON schema and its check, worded for the model that calls it.

    ``kind``: ``string``, ``strings`` (a list of strings), ``boolean``, ``number`` (within
    ``minimum``/``maximum``), ``integer`` and ``window``: a whole number of at least ``minimum`` (a
    window's: 1) and at most 2^53 - 1, as OpenClaw's memory tools take ``maxResults``, ``from`` and
    ``lines`` (its schema: ``type: integer, minimum: 1``, then its tool's ``readPositiveIntegerParam``);
    an integer's ``maximum`` is the most it gives (OpenClaw's schema sets none: a larger one is taken
    as it). ``dest``: the operation's parameter it gives. ``openclaw``: an argument of OpenClaw's own
    tool, whose null is read as OpenClaw reads it before its tool runs (its ``validateToolArguments``:
    0 for a number, so ``from: null`` is refused and ``minScore: null`` is 0; an enum's is refused),
    and a boolean where a number is wanted as 1 or 0; anyone else's null is the default.
    """

    name: str
    dest: str
    kind: str
    description: str
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()  # a string's allowed values (its schema's enum)
    openclaw: bool = False

    def schema(self) -> dict:
        types = {"string": "string", "strings": "array", "boolean": "boolean", "integer": "integer", "number": "number",
                 "window": "integer"}
        out: dict[str, Any] = {"type": types[self.kind], "description": self.description}
        if self.kind == "integer" and self.maximum is not None:  # no schema maximum, as OpenClaw's: the most it gives
            out["description"] += f" A larger number gives at most {self.maximum:g}."
        if self.kind == "strings":
            out["items"] = {"type": "string"}
        if self.choices:
            out["enum"] = list(self.choices)
        if self.kind == "window":
            out["minimum"] = 1
        elif self.minimum is not None:
            out["minimum"] = int(self.minimum) if self.kind == "integer" else self.minimum
        if self.maximum is not None and self.kind == "number":
            out["maximum"] = self.maximum
        if self.default is not None:
            out["default"] = self.default
        return out

    def take(self, args: dict) -> Any:
        value = args.get(self.name)
        if value is None and self.name in args and self.openclaw and not self.required:
            if self.choices:
                raise ToolArgumentError(f"`{self.name}` must be one of {', '.join(self.choices)}, not null")
            if self.kind in ("integer", "window", "number"):
                value = 0
        if value is None:
            if self.required:
                raise ToolArgumentError(f"`{self.name}` is required: {self.description}")
            return _UNSET if self.default is None else self.default
        if self.kind == "string":
            text = _text_of(value)
            if text is not None and (not self.choices or text in self.choices):
                return text
            one_of = f"one of {', '.join(self.choices)}" if self.choices else "a string"
            raise ToolArgumentError(f"`{self.name}` must be {one_of}, not {_shown(value)}")
        if self.kind == "strings":
            items = _list_text(value) if isinstance(value, str) else value
            texts = [_item_text(v) for v in items] if isinstance(items, list) else [None]
            if all(text is not None for text in texts):
                return tuple(t for t in texts if t is not None)
            raise ToolArgumentError(f"`{self.name}` must be a list of strings, not {_shown(value)}")
        if self.kind == "boolean":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value in _BOOLEAN_TEXT:
                return _BOOLEAN_TEXT[value]
            if isinstance(value, (int, float)) and value in (0, 1):  # OpenClaw's 1 and 0 (1.0, -0 too), no other number
                return value == 1
            raise ToolArgumentError(f"`{self.name}` must be true or false, not {_shown(value)}")
        given = args.get(self.name)
        if isinstance(value, bool) and self.openclaw:
            value = int(value)
        whole = self.kind in ("integer", "window")
        if isinstance(value, str):
            value = _number_text(value, whole)
        amount = value if isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value) else None
        if whole:
            return self._whole(amount, given)
        low, high = self.minimum, self.maximum
        if amount is None or (low is not None and amount < low) or (high is not None and amount > high):
            lowest, highest = (f"{v:g}" if v is not None else None for v in (low, high))
            span = f" from {lowest} to {highest}" if lowest and highest else f" of at least {lowest}" if lowest else ""
            raise ToolArgumentError(f"`{self.name}` must be a number{span}, not {_shown(given)}")
        return float(amount)

    def _whole(self, value: float | None, given: Any) -> int:
        """A whole number as OpenClaw's memory tools take one: its schema's ``must be integer`` and
        ``must be >= 1``, then its tool's ``must be a positive integer`` past 2^53 - 1."""
        low = 1 if self.kind == "window" else None if self.minimum is None else int(self.minimum)
        if value is None or not float(value).is_integer():
            least = f", {low} or more" if low is not None else ""
            raise ToolArgumentError(f"`{self.name}` must be integer (a whole number{least}), not {_shown(given)}")
        if low is not None and value < low:
            raise ToolArgumentError(f"`{self.name}` must be >= {low}, not {_shown(given)}")
        if value > _SAFE_INTEGER:
            raise ToolArgumentError(f"`{self.name}` must be a positive integer (at most {_SAFE_INTEGER}), not {_shown(given)}")
        whole = int(value)
        return whole if self.maximum is None else min(whole, int(self.maximum))


def _text_of(value: Any) -> str | None:
    """A string, or a number or boolean as OpenClaw reads one where its schema wants a string (its
    ``String()``: ``query: 2026`` searches "2026"); None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _js_number(value)
    return None


def _js_number(value: int | float) -> str:
    """A JSON number as JavaScript's ``String()`` writes it, the number OpenClaw's JSON.parse made of
    it (a double): ``1.5``, ``1e+21``, ``1e-7``, ``0.00001``, ``9007199254740992`` for
    9007199254740993, ``Infinity`` past any double (``1e400``)."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf if value > 0 else -math.inf
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number.is_integer() and abs(number) < 1e21:
        return str(int(number))
    sign = "-" if number < 0 else ""
    digits, point = _shortest_digits(abs(number))
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    exponent = point - 1
    mantissa = digits if count == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def _shortest_digits(number: float) -> tuple[str, int]:
    """The shortest digits that read back as ``number`` (> 0) and where the decimal point falls
    (``1.5``: "15", 1; ``0.001``: "1", -2), as ECMAScript's Number::toString takes them."""
    mantissa, _, exponent = repr(number).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(whole + fraction) - len((whole + fraction).lstrip("0")))
    return digits.rstrip("0") or "0", point


# An array written as a string, read as OpenClaw's validateToolArguments reads it (``paths:
# "[\"MEMORY.md\"]"``): the JSON of an array, of at most 65,536 UTF-16 units; else the string stays
# what it was and is refused. Each item where a string is wanted, as its ``String()``; a null item "".
_MAX_JSON_TEXT = 65536


def _list_text(text: str) -> Any:
    """The list ``text`` is the JSON of, or ``text`` itself where it is none."""
    if not text.strip() or len(text.encode("utf-16-le", "surrogatepass")) // 2 > _MAX_JSON_TEXT:
        return text
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return text
    return parsed if isinstance(parsed, list) else text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: Python's json reads them, JSON.parse does not


def _item_text(value: Any) -> str | None:
    """An item of a list of strings as OpenClaw takes it: a string, a number or boolean as its text,
    null as ""; None (refused) for a list or an object."""
    return "" if value is None else _text_of(value)


# A number or boolean written as a string, read as OpenClaw reads a tool call's arguments before its
# tool runs (``validateToolArguments`` of its llm-core: the schema's type decides): the text trimmed,
# a JSON number token, finite; for an integer, a safe whole one (``Number.isSafeInteger``), else the
# string stays what it was and is refused. An agent made for OpenClaw writes ``maxResults: "3"``.
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SAFE_INTEGER = 2**53 - 1
_BOOLEAN_TEXT = {"true": True, "false": False}


def _number_text(text: str, whole: bool) -> str | int | float:
    """The number ``text`` stands for (an int when ``whole``), or ``text`` itself when it is none."""
    if not _NUMBER_TEXT.fullmatch(text.strip()):
        return text
    number = float(text)  # past any float: infinite, refused below
    if not math.isfinite(number):
        return text
    if whole:
        return int(number) if number.is_integer() and abs(number) <= _SAFE_INTEGER else text
    return number


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past any float, as JSON's 1e400 is infinite to OpenClaw
        return False


def _shown(value: Any) -> str:
    return cut(json.dumps(value, ensure_ascii=False), 60)  # as the model wrote it, in JSON


_UNSET = object()


class ToolArgumentError(Exception):
    """An argument the schema does not allow, worded for the model (which argument, what was expected)."""


@dataclass(frozen=True)
class ToolSpec:
    op: Operation
    description: str
    params: tuple[ToolParam, ...]
    run: Callable[[Any, dict], dict]  # (request context, checked arguments by parameter) -> the tool's JSON

    @property
    def name(self) -> str:
        assert self.op.tool is not None
        return self.op.tool.name

    def listing(self) -> dict:
        """The tool as ``tools/list`` gives it (the JSON, without the SDK: the handshake is answered
        before the SDK is loaded; see :mod:`.stdio`)."""
        assert self.op.tool is not None
        title = self.op.tool.title
        return {
            "name": self.name,
            "title": title,
            "description": self.description,
            "inputSchema": {
                "type": "object",
                "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required],
                "additionalProperties": False,  # an argument it does not know is refused (see ``call``), as OpenClaw's own tools declare
            },
            "annotations": {"title": title, "readOnlyHint": not self.op.writes, "destructiveHint": False,
                            "idempotentHint": True, "openWorldHint": False},
        }

    def _unknown(self, name: str) -> str:
        """An argument the tool does not take, refused rather than ignored: the model meant something by
        it (``from_line`` ignored read from line 1; ``limit`` gave 6 results), and is told what to send."""
        given = cut(name, 60)
        if not self.params:
            return f"{self.name} takes no arguments, not `{given}`"
        assert self.op.tool is not None
        spellings = {spelling.lower(): p.name for p in self.params for spelling in (p.name, *self.op.tool.spellings(p.dest))}
        guess = spellings.get(name.lower()) or next(iter(difflib.get_close_matches(name, [p.name for p in self.params], 1, 0.8)), None)
        hint = f" (did you mean `{guess}`?)" if guess else ""
        return f"`{given}` is not an argument of {self.name}{hint}; its arguments: {', '.join(p.name for p in self.params)}"

    def wire(self):
        from mcp import types

        return types.Tool.model_validate(self.listing(), by_name=False)

    def call(self, ctx, arguments: dict) -> str:
        """The tool's JSON text; raises ToolArgumentError or a product error, worded."""
        for name in arguments:
            if name not in {p.name for p in self.params}:
                raise ToolArgumentError(self._unknown(name))
        taken = {p.dest: p.take(arguments) for p in self.params}
        _check_corpus(self.name, taken.pop(_CORPUS, _UNSET))
        checked = {dest: value for dest, value in taken.items() if value is not _UNSET}  # else the operation's default
        try:
            return tool_json(self.run(ctx, checked))
        except BadValue as exc:  # named as this tool names the argument (``maxResults``)
            if exc.name not in checked:
                raise
            assert self.op.tool is not None
            raise ToolArgumentError(exc.worded_as(f"`{self.op.tool.argument(exc.name)}`", tools=True)) from None


# OpenClaw's ``corpus`` argument (Tool.corpora): the memory files are the one corpus here, so
# ``memory`` and ``all`` answer from them; the wiki supplements and session transcripts that
# OpenClaw's plugins add are not indexed by this product, and asking for them alone is refused.
_CORPUS = "corpus"
_MEMORY_CORPORA = ("memory", "all")


def _corpus_param(corpora: tuple[str, ...]) -> ToolParam:
    return ToolParam(_CORPUS, _CORPUS, "string", "Which corpus to use: memory (the memory files) or all, the same "
                     "here: openclaw-memory holds no wiki supplements or session transcripts.", choices=corpora,
                     openclaw=True)


def _check_corpus(tool: str, corpus: Any) -> None:
    if corpus is not _UNSET and corpus not in _MEMORY_CORPORA:
        raise ToolArgumentError(f"{tool} with corpus `{corpus}`: openclaw-memory holds the memory files only (no wiki "
                                "supplements or session transcripts); call it with corpus `memory` or without corpus")


_KINDS = {str: "string", tuple: "strings", bool: "boolean", int: "integer", float: "number", bytes: "string"}
# The arguments of OpenClaw's own tools (its memory-tool-contract's schemas), read as it reads them.
_OPENCLAW_ARGUMENTS = {"memory_search": ("query", "maxResults", "minScore"), "memory_get": ("path", "from", "lines")}


def _tool_params(op: Operation) -> tuple[ToolParam, ...]:
    tool = op.tool
    assert tool is not None
    out = []
    for p in op.params:
        if not p.sent or (tool.only is not None and p.name not in tool.only):
            continue
        default = tool.defaults.get(p.name, None if p.required else p.default)
        default = default() if callable(default) else default
        low, high = tool.bounds.get(p.name, (None, None))
        name = tool.argument(p.name)
        out.append(ToolParam(name, p.name, tool.kinds.get(p.name) or _KINDS[plain_type(p.hint)],
                             tool.help.get(p.name, p.help), p.required, default if default != () else None, low, high,
                             openclaw=name in _OPENCLAW_ARGUMENTS.get(tool.name, ())))
    if tool.corpora:
        out.append(_corpus_param(tool.corpora))
    return tuple(out)


def tool_specs(settings: Settings, tools: MemoryTools | None) -> list[ToolSpec]:
    """The declared operations' tools; ``tools`` runs them (None: for the listing only)."""

    def runner(op: Operation) -> Callable[[Any, dict], dict]:
        def run(ctx, arguments: dict) -> dict:
            if tools is None:
                raise RuntimeError("these tool specs only list the tools")
            return tools.call(ctx, op, arguments)

        return run

    scope = indexed_scope(settings)
    return [ToolSpec(op, op.tool.description.replace("{scope}", scope), _tool_params(op), runner(op))
            for op in OPERATIONS.values() if op.tool is not None]


def tool_error_text(exc: BaseException, settings: Settings | None = None) -> str | None:
    """A failure as the model reads it; None for one that is not the caller's or the product's. A
    command it names is run with the server's settings flags (``settings``): the model's shell may
    not have its environment."""
    if isinstance(exc, ToolArgumentError):
        return str(exc)
    if isinstance(exc, MemoryToolError):
        if settings is not None:
            exc.suggesting(command_line(settings, in_force=True))
        return exc.worded_for_tools()
    if isinstance(exc, OSError):  # refused (symlink, FIFO...) or unreadable
        reason = exc.strerror or str(exc)
        return f"{exc.filename}: {reason}" if exc.filename else reason
    return None


def internal_error(tool: str, exc: BaseException) -> str:
    """A failure no layer worded (a bug): one line on the server's stderr, its log (stdio's, and the
    service's, where ``serve`` prints its log lines), with the exception's type and text; for the
    model, a tool error naming the type only. It was a JSON-RPC error carrying the exception's text
    (this process's source paths) and a traceback on stderr."""
    _say("error", f"internal error in {tool} ({type(exc).__name__}: {cut(str(exc), 500)}); answered as a tool error, "
                  "the server keeps serving")
    return f"internal error in {tool}: {type(exc).__name__}; the server keeps serving (its log on stderr says more)"


def build_server(tools: MemoryTools, on_listed: Callable[[], None] | None = None):
    """The MCP server (the SDK's low-level ``Server``): the four tools bound to ``tools``, and only
    them (no resources or prompts are advertised). ``on_listed`` runs after the first tools/list."""
    import anyio
    import anyio.lowlevel
    from mcp import types
    from mcp.server.lowlevel import Server

    from .. import __version__

    specs = {spec.name: spec for spec in tool_specs(tools.settings, tools)}
    listed: list[bool] = []

    async def list_tools(ctx, params) -> types.ListToolsResult:
        if on_listed is not None and not listed:
            listed.append(True)
            on_listed()
        return types.ListToolsResult(tools=[spec.wire() for spec in specs.values()])

    async def call_tool(ctx, params) -> types.CallToolResult:
        spec = specs.get(params.name)
        try:
            if spec is None:
                raise ToolArgumentError(f"there is no tool {shown(params.name, 60)}; the tools are {', '.join(specs)}")
            arguments = params.arguments or {}
            reads: list[Callable[[], None]] = []
            _CALL_READS.set(reads)  # this call's task only
            try:
                text = await anyio.to_thread.run_sync(lambda: spec.call(ctx, arguments))
                await anyio.lowlevel.checkpoint_if_cancelled()  # a cancel that came while the thread ran (it waits for it)
            except anyio.get_cancelled_exc_class():
                # The client cancelled the call (notifications/cancelled: it gave up waiting), and no
                # answer goes out: a read it recorded would let the session write over a version it
                # never saw. (The thread ran to its end: the cancel waits for it.)
                with anyio.CancelScope(shield=True):
                    for undo in reads:
                        await anyio.to_thread.run_sync(take_back, undo)
                raise
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        except Exception as exc:  # noqa: BLE001 - every failure is a tool error, the server keeps serving
            worded = tool_error_text(exc, tools.settings)
            if worded is None:  # a bug: said to the model as a tool error, with no path of this process in it
                worded = internal_error(params.name, exc)
            return types.CallToolResult(content=[types.TextContent(type="text", text=bytes_shown(worded))], is_error=True)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=server_instructions(tools.settings),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def server_instructions(settings: Settings) -> str:
    return f"{indexed_scope(settings)} Read a file with memory_get before changing it with memory_write."


def serve(settings: Settings, *, start_service: bool = False) -> None:
    """Serve over stdin/stdout until the client closes the connection.

    When the workspace's service runs (or ``start_service`` starts it), every call goes
    to it; otherwise the tools run in this process. ``initialize`` is answered first, before
    any of that (see :mod:`.stdio`).
    """
    from .. import __version__
    from ..memory import open_memory
    from .stdio import serve_stdio

    opened: list[MemoryTools] = []

    def make_server():
        # A notice naming a command (the service started: `openclaw-memory status` shows it) names it
        # as the host's shell must run it: with the settings this server was given, flags or environment.
        tools = MemoryTools(None, settings=settings, open_memory=lambda: open_memory(
            settings, notice=lambda message: _warn(suggested(message, command_line(settings, in_force=True))),
            start_service=start_service, shard_idle_s=0))
        opened.append(tools)
        try:
            tools.open()
        except (MemoryToolError, OSError) as exc:  # each tool call says it to the model, and tries again
            _warn(f"{tool_error_text(exc, settings)} (each tool call says so until it is fixed)")

        def warm() -> None:
            # Not before tools/list: loading the model competes for the interpreter while the
            # client waits for its first answers. The agent's first call follows by seconds at least.
            threading.Thread(target=_warm_quietly, args=(tools,), name="model-warm-up", daemon=True).start()

        return build_server(tools, on_listed=warm)

    def close() -> None:
        for tools in opened:
            tools.close()

    serve_stdio(make_server, name=SERVER_NAME, version=__version__, instructions=server_instructions(settings),
                tools=[spec.listing() for spec in tool_specs(settings, None)], after=close)


def _warn(message: str) -> None:
    _say("warning", message)


def _say(level: str, message: str) -> None:
    """One line on the server's stderr, its log (a name it quotes must not drive the terminal)."""
    try:
        sys.stderr.write(f"{level}: {one_line(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # no stderr (closed, gone): the answer goes out all the same


def _warm_quietly(tools: MemoryTools) -> None:
    # A failure here (no index, busy index, settings refused) shows up, worded, at the first tool call instead.
    try:
        tools.memory.warm()
    except (MemoryToolError, OSError):
        pass
