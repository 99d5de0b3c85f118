"""What is logged in the service's process (the HTTP endpoint's lines, uvicorn's, Starlette's, the MCP
SDK's) printed as the product's own lines on stderr. A module of its own: ``logging`` costs 6 ms to
import, which every command paid when the CLI's serve command held this."""

from __future__ import annotations

import logging
import sys
from contextlib import contextmanager

from ..errors import one_line

# The libraries that log only while MCP over HTTP serves (uvicorn, Starlette, the MCP SDK): their
# lines say so, as the product's own do.
_HTTP_LOGGERS = ("uvicorn", "starlette", "sse_starlette", "mcp")


class _LogLine(logging.Formatter):
    """A log record as one of the product's own lines on stderr: ``warning: ...`` or ``error: ...``,
    on one line, escaped (uvicorn printed ``WARNING:  Invalid HTTP request received.`` in its own
    format, and a record's traceback ran over many lines)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        if record.name.split(".")[0] in _HTTP_LOGGERS:
            message = f"MCP over HTTP: {message}"
        return f"{'error' if record.levelno >= logging.ERROR else 'warning'}: {one_line(message)}"


@contextmanager
def log_lines():
    """Warnings and errors logged in this process (the HTTP endpoint's, the libraries') as one line each."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_LogLine())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
