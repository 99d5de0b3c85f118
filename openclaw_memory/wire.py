"""The API's own result objects as JSON, rebuilt exactly on the other side.

The service sends its answers in this form, so the CLI renders the same frozen dataclasses
whether they were computed in-process or by the service (its output is identical either way);
the idempotency store keeps a write's first result in it. Values are JSON with a few tagged forms:
``{"~c": "module:Class", "f": {...}}`` a dataclass, ``{"~n": ..., "v": [...]}`` a NamedTuple,
``{"~t": [...]}`` a tuple, ``{"~p": "..."}`` a path, ``{"~b": "base64"}`` bytes, and
``{"~m": {...}}`` a dict (so a dict whose keys look like tags stays a dict). Floats survive
JSON exactly (shortest repr). Only classes of this package are rebuilt.

Standard library only: the CLI imports this on its fast path.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
from pathlib import PurePath

_PACKAGE = "openclaw_memory."


def encode(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        return {"~c": f"{cls.__module__}:{cls.__qualname__}", "f": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        cls = type(value)
        return {"~n": f"{cls.__module__}:{cls.__qualname__}", "v": [encode(v) for v in value]}
    if isinstance(value, tuple):
        return {"~t": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"~m": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, PurePath):
        return {"~p": str(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"~b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        return {"~t": [encode(v) for v in sorted(value)]}
    raise TypeError(f"cannot send a {type(value).__name__} over the service socket")


def _class(name: str):
    module, _, qualname = name.partition(":")
    if not module.startswith(_PACKAGE):
        raise ValueError(f"refusing to rebuild {name}: not a class of this package")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def decode(value):
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "~c" in value:
        cls = _class(value["~c"])
        fields = {k: decode(v) for k, v in value["f"].items()}
        init = {f.name for f in dataclasses.fields(cls) if f.init}
        obj = cls(**{k: v for k, v in fields.items() if k in init})
        for k, v in fields.items():
            if k not in init:
                object.__setattr__(obj, k, v)
        return obj
    if "~n" in value:
        return _class(value["~n"])(*(decode(v) for v in value["v"]))
    if "~t" in value:
        return tuple(decode(v) for v in value["~t"])
    if "~m" in value:
        return {k: decode(v) for k, v in value["~m"].items()}
    if "~p" in value:
        from pathlib import Path

        return Path(value["~p"])
    if "~b" in value:
        return base64.b64decode(value["~b"])
    raise ValueError(f"unknown value on the service socket: {sorted(value)}")
