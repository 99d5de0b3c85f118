"""Rendering helpers shared by the commands: JSON to stdout, messages to stderr."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable


def print_json(data, *, one_line: bool = False) -> None:
    indent = None if one_line else 2
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A file name that is not UTF-8 (surrogate-escaped): \udcXX escapes keep the JSON valid
        # UTF-8 and give the exact name back to a JSON reader.
        text = json.dumps(data, ensure_ascii=True, indent=indent)
    sys.stdout.write(text + "\n")


def reported(result, json_out: bool, warnings: Iterable[str] | None = None) -> bool:
    """Warn ``warnings`` (default: the result's own), then print the result's JSON when asked:
    True when it was printed (the command has nothing more to show)."""
    for message in result.warnings if warnings is None else warnings:
        warn(message)
    if json_out:
        from ..memory import to_json

        print_json(to_json(result))
    return json_out


# Control characters other than tab, newline and carriage return: a terminal would act on them (ESC sequences, bells).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ANY_CONTROL = re.compile("[\x00-\x1f\x7f]")  # a path is one line: tab and line ends too


def _escaped(match: re.Match) -> str:
    return f"\\x{ord(match.group()):02x}"


def no_controls(text: str) -> str:
    """``text`` with its control characters (but tab and line ends) shown as ``\\xNN``: a file's text
    or name must not drive the terminal it is printed on."""
    return _CONTROL.sub(_escaped, text)


def printable(path: str) -> str:
    """A path safe to print, one line: bytes that are not UTF-8 and control characters (a newline
    in a file name) become ``\\xNN``."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _ANY_CONTROL.sub(_escaped, text)


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {no_controls(message)}\n")


def error(message: str, as_json: bool, *, one_line: bool = False) -> None:
    if as_json:
        print_json({"error": message}, one_line=one_line)
    sys.stderr.write(f"error: {no_controls(message)}\n")


def stderr_console():
    from rich.console import Console

    return Console(stderr=True)

