"""A problem (or note) found in the workspace: what doctor checks report, and what the index's
status reports to them, in one typed shape."""

from __future__ import annotations

from dataclasses import dataclass

from .types import SEVERITIES, Severity
from .wire import key


@dataclass(frozen=True)
class Finding:
    """One problem (or note) found in the workspace."""

    id: str
    severity: Severity
    message: str
    fixable: bool = False
    paths: tuple[str, ...] = ()
    fix_hint: str = key(omit=lambda f: not f.fix_hint, default="")  # the last line of ``message`` when it says to run doctor --fix

    def without_fix_hint(self) -> str:
        """The message as shown once ``doctor --fix`` tried this repair and could not: no hint to try again."""
        if self.fix_hint and self.message.endswith(self.fix_hint):
            return self.message[: -len(self.fix_hint)].rstrip("\n")
        return self.message

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding {self.id}: severity must be one of {SEVERITIES}, not {self.severity!r}")

    @property
    def blocking(self) -> bool:
        """Errors and warnings make doctor exit 1; notes never do."""
        return self.severity in ("error", "warning")
