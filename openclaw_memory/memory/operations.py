"""Each operation on an agent's memory, declared once: :func:`operation` on a method of the
:class:`~openclaw_memory.memory.base.Memory` protocol.

The method's signature is the declaration of its parameters (names, types, defaults) and of its
result type; the decorator adds what the signature cannot say: the function that does the work
(``impl``, imported on first use), whether the workspace's service answers it, a line of help per
parameter, and how each front-end spells it (:class:`Cli`, :class:`Tool`). From that one place:

- the memory in this process and through the service (:mod:`.local`, :mod:`.remote`) answer
  exactly the declared operations, and nothing else (an undeclared name is an AttributeError);
- the service reads a request's arguments into the declared types and calls ``impl`` (no method is
  looked up by a name a request gives);
- the CLI's command and its flags (:mod:`openclaw_memory.cli.spec`), and the MCP tool's schema and
  argument checks (:mod:`openclaw_memory.mcp.server`).

One name per concept: a parameter's Python name is its socket key (camelCase, :mod:`~openclaw_memory.wire`)
and, unless a front-end declares another spelling here (OpenClaw's ``maxResults``, ``--from``), its CLI
flag (``--kebab-case``) and MCP argument (camelCase).

Standard library only, and the types resolve on first use: the CLI imports this on its fast path
(hence no ``from __future__ import annotations`` here: a named tuple compiles each string annotation).
"""

import builtins
import functools
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType, UnionType
from typing import Any, Literal, NamedTuple

from ..wire import WireError, as_declared, camel

_EMPTY: Mapping[str, Any] = MappingProxyType({})
REQUIRED = inspect.Parameter.empty


class Cli(NamedTuple):
    """The operation as a command: ``command`` ("search", "watchdog snapshot"), and the flag
    spellings that differ from ``--kebab-name`` (the first is shown; the others are accepted, e.g.
    OpenClaw's ``--force`` for ``--full``). A ``bool`` parameter whose default is True is turned off
    by its flag (``--no-sync``). ``hidden``: parameters the command line does not give."""

    command: str
    flags: Mapping[str, tuple[str, ...]] = _EMPTY
    hidden: tuple[str, ...] = ()
    args: tuple[str, ...] | None = None  # the parameters given as arguments, in order (default: the required ones)
    also: tuple[str, ...] = ()  # names people type for it (a shell habit, OpenClaw's tool): suggested, not accepted
    # Another command's name with a switch that spells this one too: ("restore", "--all") for rollback.
    spelled: tuple[str, str] | None = None


ToolKind = Literal["string", "strings", "integer", "number", "window", "boolean"]


class Tool(NamedTuple):
    """The operation as an MCP tool. ``names``: OpenClaw's argument names where its tool fixes them
    (``maxResults`` for ``limit``); ``only``: the parameters the tool takes (the others keep their
    defaults; None: every one a JSON value can give); ``fixed``: arguments the tool always passes;
    ``kinds``, ``bounds`` and ``defaults``: the schema where the Python type does not say it."""

    name: str
    title: str
    description: str
    names: Mapping[str, str] = _EMPTY
    only: tuple[str, ...] | None = None
    fixed: Mapping[str, Any] = _EMPTY
    kinds: Mapping[str, ToolKind] = _EMPTY
    bounds: Mapping[str, tuple[float | None, float | None]] = _EMPTY
    defaults: Mapping[str, Any] = _EMPTY  # a value, or a function giving it (what only the tool's listing pays for)
    help: Mapping[str, str] = _EMPTY  # a parameter's help, worded for the model, where it differs
    # OpenClaw's ``corpus`` argument, with the values its tool of that name lists: the MCP tool takes
    # it (an OpenClaw agent sends it) and answers from the memory files, the one corpus here.
    corpora: tuple[str, ...] = ()

    def argument(self, param: str) -> str:
        """The tool's name for a parameter: OpenClaw's where declared, else its JSON key."""
        return self.names.get(param) or camel(param)

    def spellings(self, param: str) -> tuple[str, ...]:
        """Every name a caller may use for a parameter by mistake: the tool's, Python's, the JSON key."""
        return self.argument(param), param, camel(param)


class Param(NamedTuple):
    name: str
    hint: Any  # the resolved type
    default: Any  # REQUIRED when there is none
    help: str

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def wire_hint(self) -> Any:
        """The type its JSON is read as on the socket: a closed set of words as any string, so that the
        service's answer to a bad one is the product's own message (``--mode must be one of ...``)."""
        return _loose(self.hint)

    @property
    def sent(self) -> bool:
        """Whether it crosses the socket: a callback (progress, a question to the user) only runs in
        the caller's process."""
        return not _is_callback(self.hint)


class Operation:
    """One declared operation (see the module docstring). Named tuples and a plain class, not
    dataclasses: every command defines them at start-up, and a frozen dataclass costs several
    times as much to define."""

    def __init__(self, name: str, declared: Callable[..., Any], impl: str, on: Literal["memory", "settings"],
                 service: bool, writes: bool, changes_notes: bool, help: Mapping[str, str], cli: Cli | None,
                 tool: Tool | None):
        self.name = name
        self.declared = declared  # the protocol's method
        self.impl = impl  # "module:function" under openclaw_memory, called as function(memory or settings, **args)
        self.on = on
        self.service = service  # the workspace's service answers it (else it runs in the caller's process, on purpose)
        self.writes = writes  # it changes files or state (the MCP tool's readOnlyHint)
        # It may change memory files: one the service stopped answering in the middle of may be made
        # (the caller is told so; an index or a session's end is simply done again).
        self.changes_notes = changes_notes
        self.help = help
        self.cli = cli
        self.tool = tool

    def __repr__(self) -> str:
        return f"Operation({self.name!r})"

    @property
    def summary(self) -> str:
        # The docstring's first paragraph on one line (not inspect.getdoc: every command pays for this).
        return " ".join((self.declared.__doc__ or "").strip().split("\n\n")[0].split())

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.declared)

    @functools.cached_property
    def params(self) -> tuple[Param, ...]:
        # Read from the function's code, not inspect.signature: every command builds its parser from
        # these, and the signatures of two dozen operations cost a light command about 2 ms.
        code = self.declared.__code__
        names = code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]  # after self
        positional = code.co_varnames[1 : code.co_argcount]
        defaults = dict(zip(positional[len(positional) - len(self.declared.__defaults__ or ()):],
                            self.declared.__defaults__ or ()))
        defaults.update(self.declared.__kwdefaults__ or {})
        notes = self.declared.__annotations__
        return tuple(Param(name, _resolve(notes.get(name), self.declared), defaults.get(name, REQUIRED),
                           self.help.get(name, "")) for name in names)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    @functools.cached_property
    def result(self) -> Any:
        return _resolve(self.signature.return_annotation, self.declared)

    @functools.cached_property
    def function(self) -> Callable[..., Any]:
        module, _, name = self.impl.partition(":")
        return getattr(importlib.import_module(module, "openclaw_memory"), name)

    def arguments(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """A call's arguments by name, defaults filled in (TypeError, as Python words it, for a call
        the declaration does not allow)."""
        bound = self.signature.bind(None, *args, **kwargs)
        bound.apply_defaults()
        return dict(list(bound.arguments.items())[1:])

    def checked(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """A call's :meth:`arguments`, each read by its declared type as the service reads it from the
        socket (:func:`~openclaw_memory.wire.as_declared`, by ``wire_hint``): the one check of every
        call, in this process and before a call is sent, so that both modes answer a value of the
        wrong type alike, with BadValue naming the parameter (one string for a tuple of strings was
        iterated: ``paths="memory/*.md"`` matched every file by its ``*``; through the service the
        refusal blamed the service, then ran in-process with the same wrong answer)."""
        arguments = self.arguments(args, kwargs)
        for param in self.params:
            if param.sent and param.name in arguments:
                try:
                    arguments[param.name] = as_declared(arguments[param.name], param.wire_hint)
                except WireError as exc:
                    from ..errors import BadValue

                    raise BadValue(param.name, _problem(exc, param.wire_hint, arguments[param.name])) from None
        return arguments

    def run(self, memory: Any, arguments: Mapping[str, Any]) -> Any:
        """Do it here, for ``memory`` (a :class:`~.local.LocalMemory`)."""
        return self.function(memory.settings if self.on == "settings" else memory, **arguments)


OPERATIONS: dict[str, Operation] = {}


_Method = typing.TypeVar("_Method", bound=Callable[..., Any])


def operation(*, impl: str, on: Literal["memory", "settings"] = "settings", service: bool = False, writes: bool = False,
              changes_notes: bool = False, help: Mapping[str, str] = _EMPTY, cli: Cli | None = None,
              tool: Tool | None = None) -> Callable[[_Method], _Method]:
    """Declare the decorated method of :class:`~.base.Memory` an operation (see the module docstring);
    the method is returned as it is, so that type checkers see its signature in a caller's code."""

    def declare(method: _Method) -> _Method:
        name = method.__name__
        if name in OPERATIONS:
            raise ValueError(f"the operation {name!r} is declared twice")
        if changes_notes and not writes:
            raise ValueError(f"the operation {name!r} changes notes but is not declared writes=True")
        OPERATIONS[name] = Operation(name, method, impl, on, service, writes, changes_notes, MappingProxyType(dict(help)),
                                     cli, tool)
        return method

    return declare


def method_of(cls: type, name: str) -> Callable[..., Any]:
    """The declared operation ``name`` as a method of ``cls`` (a memory: it runs it through
    ``cls.call``), named and documented as declared; set on the class at its first use, so one
    declared after the class (a plug-in, a test) is a method too. An undeclared name is an
    AttributeError: never a fallback."""
    op = OPERATIONS.get(name)
    if op is None:
        raise AttributeError(f"{cls.__name__!r} has no operation {name!r}")
    call = cls.call  # type: ignore[attr-defined]

    def bound(self: Any, *args: Any, **kwargs: Any) -> Any:
        return call(self, op, args, kwargs)

    method = functools.wraps(op.declared)(bound)
    setattr(cls, name, method)
    return method


# -- types -------------------------------------------------------------------------------------


class _Names(dict):
    """The names a declaration's annotations use, imported when first needed (the result types live
    with their domains; most commands never load them)."""

    not_ours: set[str] = set(vars(builtins))

    def __missing__(self, name: str) -> Any:
        if name in self.not_ours:
            raise KeyError(name)  # a builtin, or a name of the declaring module: found there
        import openclaw_memory
        from openclaw_memory import types

        try:
            value = getattr(types, name, None) or getattr(openclaw_memory, name)
        except AttributeError:
            self.not_ours.add(name)
            raise KeyError(name) from None
        self[name] = value
        return value


_NAMES = _Names()


def _resolve(annotation: Any, where: Callable[..., Any]) -> Any:
    if not isinstance(annotation, str):
        return None if annotation is inspect.Signature.empty else annotation
    return eval(_compiled(annotation), where.__globals__, _NAMES)  # noqa: S307 - a declaration's own annotation


@functools.cache
def _compiled(annotation: str) -> Any:
    return compile(annotation, "<annotation>", "eval")  # the same few ("str | None", "bool") again and again


def _is_callback(hint: Any) -> bool:
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, UnionType) else (hint,)
    return any(typing.get_origin(a) in (Callable, typing.get_origin(Callable[..., Any])) or a is Callable for a in args)


def _loose(hint: Any) -> Any:
    if typing.get_origin(hint) is Literal:
        return str
    if typing.get_origin(hint) in (typing.Union, UnionType):
        return functools.reduce(lambda a, b: a | b, [_loose(a) for a in typing.get_args(hint)])
    return hint


def _problem(refusal: WireError, hint: Any, value: Any) -> str:
    """A reader's refusal as BadValue's problem, which follows the parameter's name: ``must be a
    string, not 3``, ``item 2 must be ...`` (where it is an item of the value)."""
    from ..errors import shown

    if not refusal.problem:  # a union none of whose types fits (a write's content): named whole
        return f"must be {hint}, not {shown(value)}" if refusal.where else str(refusal)
    index = refusal.where.removeprefix("value")
    return f"item {int(index[1:-1]) + 1} {refusal.problem}" if index[1:-1].isdigit() else refusal.problem


def plain_type(hint: Any) -> Any:
    """The type a front-end reads a value as: ``int | None`` -> int, ``tuple[str, ...]`` -> tuple."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] if typing.get_origin(hint) in (typing.Union, UnionType) else [hint]
    first = args[0] if args else hint
    return typing.get_origin(first) or first
