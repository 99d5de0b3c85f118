"""What doctor reports: findings, repairs, and the context checks share.

A check is a plain function ``(CheckContext) -> list[Finding]``; a repair is a
:class:`RepairSpec` keyed by the id of the finding it fixes. Both are listed by
module in :mod:`.checks` and :mod:`.repairs`, so later parts add their own.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..findings import Finding
from ..types import REPAIR_STATUSES, RepairStatus

if TYPE_CHECKING:
    from ..files.root import RootMemoryFiles
    from ..files.scan import ScanResult
    from ..prompt import PromptSection
    from ..settings import Settings
    from .vouched import Vouched


def symlink_target(path: str) -> str:
    """`` (pointing to X)`` for a finding about a symlink, or nothing when it cannot be read."""
    try:
        return f" (pointing to {os.readlink(path)})"
    except OSError:
        return ""


@dataclass(frozen=True)
class Repair:
    """What one repair did (or why it did not)."""

    id: str  # the id of the finding it addresses
    action: str
    status: RepairStatus
    detail: str
    paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in REPAIR_STATUSES:
            raise ValueError(f"repair {self.id}: status must be one of {REPAIR_STATUSES}, not {self.status!r}")


class CheckContext:
    """Settings plus the workspace views several checks need, each computed once."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.workspace = str(settings.workspace)
        # What the checks worked out that the product caches (the link table in the state
        # database, the database's last clean check in state-checked.json): stored by the runner
        # once every check has read, only where a plain doctor may write it.
        self.cache_writes: list[Callable[[], None]] = []

    @cached_property
    def roots(self) -> RootMemoryFiles:
        from ..files.root import detect_root_memory_files

        return detect_root_memory_files(self.workspace)

    @cached_property
    def scan(self) -> ScanResult:
        from ..files.scan import scan_workspace

        return scan_workspace(self.settings)

    @cached_property
    def prompt(self) -> PromptSection:
        """The startup-prompt memory section ``prompt`` would print now (its checkpoint aside): what
        it cuts and which files it does not load, for the prompt checks."""
        from ..prompt import build_prompt_section

        limits = self.settings.prompt
        return build_prompt_section(self.scan, file_cap=limits.file_chars, total_cap=limits.total_chars,
                                    workspace_spelled=self.settings.workspace_spelled,
                                    startup=limits.startup)

    @cached_property
    def vouched(self) -> Vouched | None:
        """What the state database vouches for of the scan's Markdown files (their text, their link
        rows), shared by the UTF-8 and link checks; None where it cannot say (damaged, locked:
        check_state's finding), and each check then looks at every file itself."""
        from ..errors import MemoryToolError
        from .vouched import Vouched

        try:
            return Vouched.read(self.settings, [f for f in self.scan.files if f.kind == "markdown"])
        except MemoryToolError:
            return None

    def rel(self, path: str) -> str:
        from ..files.paths import display_path

        return display_path(os.fspath(path), self.workspace)


Check = Callable[[CheckContext], "list[Finding]"]


@dataclass(frozen=True)
class RepairSpec:
    """How to fix one kind of finding: its action name, a one-line description for the prompt, and the fix."""

    action: str
    describe: Callable[[Finding], str]
    apply: Callable[[Settings, Finding], Repair]
