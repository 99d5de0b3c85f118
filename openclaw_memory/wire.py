"""The product's data as JSON and back, by its declared type: what ``--json`` prints, what crosses
the service socket and what the data dir keeps (a write's first result, for its idempotency key).
One shape for all three: a result prints exactly what the service sends.

A dataclass is an object of its fields with camelCase keys; a NamedTuple, tuple, list or set an
array; bytes ``{"base64": "..."}``; a path a string; a date its ISO string (``2026-11-30``). A field's :func:`key` may rename it, round
it, leave it out when it does not apply, or merge a nested result's keys into its own; a class's
``JSON_DERIVED`` names properties printed after the fields (left out when None; readers skip them). Nothing on the
wire names a type: the reader says which type it expects (the return type of the
:class:`~openclaw_memory.memory.Memory` method it called) and the JSON is read into that type
only, field by field, checking each value against its annotation. Unknown keys are ignored (a
newer peer may send more); a missing field takes its default.

Standard library only: the CLI imports this on its fast path.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import functools
import importlib
import math
import os
import types
import typing
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any, Literal, Union

JsonValue = Any

# Names that modules import only for type checkers, resolved when a field's annotation needs them.
_DEFERRED = {
    "SyncSummary": "openclaw_memory.index.results",
    "Settings": "openclaw_memory.settings",
}


class WireError(ValueError):
    """JSON that is not a value of the expected type: ``where`` in it (``value``, ``value[1]``) and
    the ``problem`` there (``must be a string, not 3``; empty where no one type was expected)."""

    def __init__(self, message: str, where: str = "", problem: str = ""):
        super().__init__(message)
        self.where, self.problem = where, problem


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_SHAPE = "openclaw_memory.wire"


@dataclasses.dataclass(frozen=True)
class _Shape:
    name: str | None  # the JSON key; None: camel(field name)
    omit: Callable[[Any], bool] | None  # given the whole object: True leaves the key out
    digits: int | None
    flatten: bool  # a nested dataclass whose keys are this object's
    hidden: bool  # meaningful only in the process that made it: never in the JSON (readers: the default)


def key(name: str | None = None, *, omit: Callable[[Any], bool] | None = None, digits: int | None = None,
        flatten: bool = False, hidden: bool = False, **field_args: Any) -> Any:
    """A dataclass field with its JSON shape: ``name`` (the key), ``omit`` (a test on the object: the
    key is left out, and a reader takes the field's default), ``digits`` (a float rounded to that
    many places), ``flatten`` (a nested result's keys printed among this object's), ``hidden``
    (never in the JSON: a path or stat only the process that made the value can use)."""
    metadata = {_SHAPE: _Shape(name, omit, digits, flatten, hidden)}
    return dataclasses.field(metadata=metadata, **field_args)


@functools.cache
def _layout(cls: Any) -> tuple[tuple[str, str, _Shape | None], ...]:
    """Per field: its name, its JSON key and its shape (None: the plain camelCase key)."""
    out = []
    for f in dataclasses.fields(cls):
        shape = f.metadata.get(_SHAPE)
        out.append((f.name, (shape.name if shape and shape.name else camel(f.name)), shape))
    return tuple(out)


def _object_of(value: Any) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {}
    cls: Any = type(value)
    for name, json_key, shape in _layout(cls):
        item = getattr(value, name)
        if shape is not None:
            if shape.hidden or (shape.omit is not None and shape.omit(value)):
                continue
            if shape.flatten:
                if item is not None:
                    out.update(_object_of(item))
                continue
            if shape.digits is not None and item is not None:
                item = round(item, shape.digits)
        out[json_key] = to_json(item)
    for name in getattr(value, "JSON_DERIVED", ()):
        derived = getattr(value, name)
        if derived is not None:  # a derived key that does not apply is left out
            out[camel(name)] = to_json(derived)
    return out


def to_json(value: Any) -> JsonValue:
    """``value`` as JSON data (see the module docstring)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _object_of(value)
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [to_json(v) for v in sorted(value)]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, os.PathLike):  # a Path, or any object that is one
        return os.fsdecode(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"cannot send a {type(value).__name__} over the service socket")


def from_json(data: JsonValue, hint: Any) -> Any:
    """JSON ``data`` read as a value of type ``hint``; WireError when it is not one."""
    try:
        return _load(data, hint, "value")
    except RecursionError:
        raise WireError("nested deeper than the reader goes") from None


def as_declared(value: Any, hint: Any) -> Any:
    """A Python value read as a reader of the socket reads it: ``value`` as JSON, read back as ``hint``
    (WireError when it is not of that type). A caller in this process then takes what the service
    takes: a path (a Path) where a str goes, a list for a tuple, and not one string for a tuple of
    strings (iterated, its characters were the values). A number JSON cannot hold (NaN, infinity) is
    checked as a number and kept as it is: what it means is the operation's to say, which it says in
    the caller's process (no request can carry it)."""
    if isinstance(value, float) and not math.isfinite(value):
        from_json(0.0, hint)
        return value
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
    if type(value) in (str, bytes) and type(value) in options:
        return value  # as it reads back (a note's text is the common case: no copy of it made)
    if isinstance(value, dt.datetime) and dt.date in options:
        value = value.date()  # (a datetime is a date to Python: its day, as `prompt(today=datetime.now())` meant)
    try:
        data = to_json(value)
    except TypeError:  # no JSON holds it: the reader refuses it as it is, naming it
        data = value
    return from_json(data, hint)


def _fail(where: str, expected: str, data: Any) -> typing.NoReturn:
    # (cut before repr: a 5 MB note's text tried as bytes first was copied whole to show 80 characters)
    shown = repr(data[:80] if isinstance(data, (str, bytes)) else data)
    raise WireError(f"{where}: expected {expected}, not {shown[:80]}", where, f"must be {expected}, not {shown[:80]}")


def _load(data: Any, hint: Any, where: str) -> Any:
    if hint is Any or hint is object:
        return data
    if hint is None or hint is type(None):
        if data is not None:
            _fail(where, "null", data)
        return None
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if data is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _load(data, option, where)
            except WireError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        raise WireError(f"{where}: none of {len(errors)} types fits", where)
    if origin is Literal:
        if data not in typing.get_args(hint):
            _fail(where, " or ".join(map(repr, typing.get_args(hint))), data)
        return data
    if hint is bool:
        if not isinstance(data, bool):
            _fail(where, "true or false", data)
        return data
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            _fail(where, "a whole number", data)
        return data
    if hint is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            _fail(where, "a number", data)
        try:
            number = float(data)
        except OverflowError:  # an integer past any float
            number = math.inf
        if not math.isfinite(number):  # 1e400 reads as infinity: no JSON value, and none a reader can use
            _fail(where, "a finite number", data)
        return number
    if hint is str:
        if not isinstance(data, str):
            _fail(where, "a string", data)
        return data
    if hint in (bytes, bytearray):
        if not (isinstance(data, dict) and set(data) == {"base64"} and isinstance(data["base64"], str)):
            _fail(where, '{"base64": ...}', data)
        try:
            return base64.b64decode(data["base64"], validate=True)
        except ValueError:
            _fail(where, "base64 data", data["base64"])
    if hint in (Path, PurePath):
        if not isinstance(data, str):
            _fail(where, "a path", data)
        return Path(data)
    if hint is dt.date:
        if not isinstance(data, str):
            _fail(where, "a date (YYYY-MM-DD)", data)
        try:
            return dt.date.fromisoformat(data)
        except ValueError:
            _fail(where, "a date (YYYY-MM-DD)", data)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _load_dataclass(data, hint, where)
    if isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields"):
        if not isinstance(data, list) or len(data) != len(hint._fields):
            _fail(where, f"an array of {len(hint._fields)}", data)
        hints = _hints(hint)
        return hint(*(_load(v, hints[name], f"{where}.{name}") for name, v in zip(hint._fields, data)))
    if origin in (tuple, list, set, frozenset) or hint in (tuple, list, set, frozenset):
        if not isinstance(data, list):
            _fail(where, "an array", data)
        args = typing.get_args(hint)
        container = origin or hint
        if container is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(data):
                _fail(where, f"an array of {len(args)}", data)
            return tuple(_load(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(data, args)))
        item = args[0] if args else Any
        values = [_load(v, item, f"{where}[{i}]") for i, v in enumerate(data)]
        return values if container is list else container(values)
    if origin is dict or hint is dict:
        if not isinstance(data, dict):
            _fail(where, "an object", data)
        args = typing.get_args(hint)
        value_hint = args[1] if args else Any
        return {k: _load(v, value_hint, f"{where}.{k}") for k, v in data.items()}
    raise WireError(f"{where}: {hint!r} is not a type the wire carries")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """Every field's type (NamedTuples: all at once, they are small and local)."""
    return typing.get_type_hints(cls, globalns=vars(importlib.import_module(cls.__module__)))


@functools.cache
def _field_hint(cls: type, name: str) -> Any:
    """One field's type, evaluated when a value of it is read: a name its module imports only for type
    checkers is imported then (an index result inside a write's result loads the index's module only
    when there is one)."""
    annotation = next(f.type for f in dataclasses.fields(cls) if f.name == name)
    if not isinstance(annotation, str):
        return annotation
    namespace = dict(vars(importlib.import_module(cls.__module__)))
    try:
        return eval(annotation, namespace)  # noqa: S307 - the package's own annotations, never data
    except NameError as exc:
        missing = exc.name or ""
        where = _DEFERRED.get(missing)
        if where is None:
            raise
        namespace[missing] = getattr(importlib.import_module(where), missing)
        return eval(annotation, namespace)  # noqa: S307


def _load_dataclass(data: Any, cls: type, where: str) -> Any:
    if not isinstance(data, dict):
        _fail(where, f"an object ({cls.__name__})", data)
    init: dict[str, Any] = {}
    late: dict[str, Any] = {}
    for f, (_, json_key, shape) in zip(dataclasses.fields(cls), _layout(cls)):
        if shape is not None and shape.hidden:
            continue
        if shape is not None and shape.flatten:
            nested = _flattened(data, _field_hint(cls, f.name))
            value = None if nested is None else _load(data, nested, where)
            (init if f.init else late)[f.name] = value
            continue
        if json_key not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.init:
                _fail(f"{where}.{json_key}", "a value", None)
            continue
        if data[json_key] is None and _admits_none(f.type):
            value = None
        else:
            value = _load(data[json_key], _field_hint(cls, f.name), f"{where}.{json_key}")
        (init if f.init else late)[f.name] = value
    obj = cls(**init)
    for name, value in late.items():
        object.__setattr__(obj, name, value)
    return obj


def _flattened(data: dict, hint: Any) -> Any:
    """The dataclass a flattened field holds, or None when ``data`` lacks one of its required keys."""
    options = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    cls = options[0]
    required = [json_key for f, (_, json_key, _) in zip(dataclasses.fields(cls), _layout(cls))
                if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    return cls if all(k in data for k in required) else None


def _admits_none(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return any(part.strip() == "None" for part in annotation.split("|"))
    return type(None) in typing.get_args(annotation)

