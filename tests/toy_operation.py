"""An operation declared outside the package, as a plug-in (or a new operation) would declare it:
imported by tests/test_operations.py and by the service process that test starts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openclaw_memory.memory.operations import OPERATIONS, Cli, Tool, operation

if TYPE_CHECKING:
    from openclaw_memory.settings import Settings


@dataclass(frozen=True)
class Echo:
    text: str
    agent: str
    pid: int  # which process answered


def echo(settings: Settings, text: str, times: int = 1, shout: bool = False) -> Echo:
    said = text * times
    return Echo(said.upper() if shout else said, settings.agent, os.getpid())


def declare() -> None:
    """Declare ``echo`` (once per process)."""
    if "echo" in OPERATIONS:
        return

    @operation(impl="toy_operation:echo", service=True,
               help={"text": "What to say.", "times": "How many times.", "shout": "In capitals."},
               cli=Cli("echo"), tool=Tool("memory_echo", "Echo", "Says the text back, for {scope}"))
    def echo(self, text: str, *, times: int = 1, shout: bool = False) -> Echo:
        """Say the text back."""
        ...


def forget() -> None:
    from openclaw_memory.memory.local import LocalMemory
    from openclaw_memory.memory.remote import ServiceMemory

    OPERATIONS.pop("echo", None)
    for cls in (LocalMemory, ServiceMemory):
        if "echo" in vars(cls):
            delattr(cls, "echo")
