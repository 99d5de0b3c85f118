"""What a search returns: plain frozen dataclasses, with nothing to import.

Kept apart from :mod:`.search` so that a process that only shows results (the CLI, answered by the
service) does not load the search code (its term patterns are compiled at import).
"""

from __future__ import annotations

from dataclasses import dataclass

# The calibrated score below which nothing answers (index.search: CALIBRATION); here, not there, so
# the CLI's flag spec and the MCP tool read it without loading the search code.
DEFAULT_MIN_SCORE = 0.03


@dataclass(frozen=True)
class HitPassage:
    """One passage of a result: its exact lines in the result's file, its text and its own score."""

    start_line: int  # 1-based, inclusive
    end_line: int
    score: float
    snippet: str

    def to_json(self, path: str) -> dict:
        return {
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": round(self.score, 4),
            "snippet": self.snippet,
            "citation": f"{path}#L{self.start_line}-L{self.end_line}",
        }


@dataclass(frozen=True)
class SearchHit:
    """One result: a file, with its best passage (``start_line``, ``end_line``, ``snippet``,
    ``citation``) and, in ``passages``, that passage and up to two more of the same file."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str  # collection name
    also_in: tuple[str, ...] = ()  # other files with exactly this passage
    passages: tuple[HitPassage, ...] = ()  # best first; the first is the passage above

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def to_json(self) -> dict:
        data = {
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": round(self.score, 4),
            "snippet": self.snippet,
            "source": self.source,
            "citation": self.citation,
            "passages": [p.to_json(self.path) for p in self.passages],
        }
        if self.also_in:
            data["alsoIn"] = list(self.also_in)
        return data


@dataclass(frozen=True)
class SearchResult:
    results: tuple[SearchHit, ...]
    mode: str
    stale: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()  # the query's words, as the keyword side matched them

    def term_spans(self, line: str) -> list[tuple[int, int]]:
        """Where the query's words occur in a line of a snippet (for highlighting), in order, not overlapping."""
        from .terms import term_patterns

        lowered = line.lower()
        spans = sorted((m.start(), m.end()) for p in term_patterns(list(self.terms)) for m in p.finditer(lowered))
        kept: list[tuple[int, int]] = []
        for start, end in spans:
            if not kept or start >= kept[-1][1]:
                kept.append((start, end))
        return kept

    def to_json(self) -> dict:
        return {"results": [r.to_json() for r in self.results], "mode": self.mode, "stale": list(self.stale)}
