"""A problem (or note) found in the workspace: what doctor checks report, and what the index's
status reports to them, in one typed shape."""

from __future__ import annotations

from dataclasses import dataclass

from .types import SEVERITIES, Severity


@dataclass(frozen=True)
class Finding:
    """One problem (or note) found in the workspace."""

    id: str
    severity: Severity
    message: str
    fixable: bool = False
    paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding {self.id}: severity must be one of {SEVERITIES}, not {self.severity!r}")

    @property
    def blocking(self) -> bool:
        """Errors and warnings make doctor exit 1; notes never do."""
        return self.severity in ("error", "warning")

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "severity": self.severity,
            "message": self.message,
            "fixable": self.fixable,
            "paths": list(self.paths),
        }
