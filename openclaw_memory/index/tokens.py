"""Token counting in the embedding model's own word pieces (``tokenizers``, no torch).

The chunker measures its budget with the very tokenizer the model uses, so that no text past the
model's window is ever embedded: sentence-transformers truncates a longer input silently.

The window is the model's ``max_seq_length`` minus the special tokens the model adds to every
input ([CLS] and [SEP] for BERT models). all-MiniLM-L6-v2 has ``max_seq_length`` 256 *including*
those two, so its window is 254 word pieces of text.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path

import regex

from openclaw_memory.errors import UsageError
from openclaw_memory.index.models import resolve_model

# An extended grapheme cluster (UAX #29): an over-long line is cut only between these.
_GRAPHEME = regex.compile(r"\X", regex.DOTALL)
# Pre-tokenizers that split on whitespace: with them the count of lines joined by newlines is
# exactly the sum of the lines' counts, which lets the chunker count each line once.
_ADDITIVE_PRE_TOKENIZERS = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}
# Lines whose count is kept (~150 bytes each): enough for the lines many notes share (headings,
# template lines), while memory stays flat in the corpus. It lives as long as the loaded model
# (a service's, for its lifetime); 500,000 lines held about 35 MB at 10,000 daily notes.
_CACHE_LIMIT = 16_384


class TokenCounter:
    """Counts word pieces (special tokens excluded) of one model's tokenizer."""

    def __init__(self, tokenizer, window: int, model_path: str):
        tokenizer.no_truncation()  # the packaged tokenizer.json truncates at 128 and pads
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self.window = window
        self.model_path = model_path
        self.additive = _is_additive(tokenizer)
        self._cache: dict[str, int] = {}  # line -> count, across files (at most _CACHE_LIMIT)

    def count(self, text: str) -> int:
        """Number of word pieces in ``text`` (without [CLS]/[SEP])."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many lines in one parallel batch; a line seen before is not encoded again."""
        cache = self._cache
        missing = list({t for t in texts if t not in cache and t.strip()})
        if missing:
            if len(cache) + len(missing) > _CACHE_LIMIT:
                cache.clear()
            encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
            for text, enc in zip(missing, encode(missing, add_special_tokens=False)):
                cache[text] = len(enc.ids)
        return [cache.get(t, 0) for t in texts]

    def split_to_fit(self, text: str, budget: int) -> list[str]:
        """Cut ``text`` into consecutive pieces of at most ``budget`` tokens each.

        The pieces concatenate back to ``text``. Cuts fall at token starts moved back to a grapheme
        boundary (preferring whitespace in the second half of a piece), so no grapheme, and so no
        surrogate pair, is broken. Only a single grapheme larger than the whole budget (a long
        chain of ZWJ emoji) is cut between code points, as nothing else can keep the budget.
        """
        if budget < 1:
            raise UsageError("The token budget must be at least 1.")
        if self.count(text) <= budget:
            return [text]
        offsets = [start for start, _ in self._tokenizer.encode(text, add_special_tokens=False).offsets]
        bounds = [0] + [m.end() for m in _GRAPHEME.finditer(text)]
        pieces: list[str] = []
        start = 0
        while start < len(text):
            # Only a rest about the budget's size is copied and counted again: doing it for every
            # piece made a 100 KB line take seconds and a 5 MB one minutes.
            if len(offsets) - bisect_right(offsets, start - 1) <= budget + _RECOUNT_SLACK:
                rest = text[start:]
                if self.count(rest) <= budget:
                    pieces.append(rest)
                    break
            cut = self._largest_fitting_cut(text, start, budget, offsets, bounds)
            pieces.append(text[start:cut])
            start = cut
        return pieces

    def _largest_fitting_cut(self, text: str, start: int, budget: int, offsets: list[int], bounds: list[int]) -> int:
        first = bisect_right(offsets, start - 1)  # first token starting at or after ``start``
        take = budget
        while take > 0:
            index = first + take
            limit = offsets[index] if index < len(offsets) else len(text)
            cut = _grapheme_cut(text, start, limit, bounds)
            if cut > start and self.count(text[start:cut]) <= budget:
                return cut
            # Re-tokenised alone, a piece can need more tokens than in context (a word cut
            # between word pieces): give back one token and retry.
            take -= 1
        return _code_point_cut(self, text, start, budget)


# A piece counted alone can need a few tokens more than in its context, never this many fewer.
_RECOUNT_SLACK = 16


def _grapheme_cut(text: str, start: int, limit: int, bounds: list[int]) -> int:
    """The best grapheme boundary in (start, limit]: after whitespace in the second half, else the last."""
    hi = bisect_right(bounds, limit) - 1
    if hi < 0 or bounds[hi] <= start:
        return start
    floor = start + (limit - start) // 2
    j = hi
    while j >= 0 and bounds[j] > floor:
        if text[bounds[j] - 1].isspace():
            return bounds[j]
        j -= 1
    return bounds[hi]


def _code_point_cut(counter: TokenCounter, text: str, start: int, budget: int) -> int:
    """Longest prefix of ``text[start:]`` within budget, cut between code points (never empty)."""
    lo, hi = start + 1, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[start:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _is_additive(tokenizer) -> bool:
    """Whether counts add up over lines: the pre-tokenizer splits on whitespace, and the newlines
    that join lines (and the heading path) neither merge words nor yield tokens themselves."""
    spec = json.loads(tokenizer.to_str()).get("pre_tokenizer") or {}
    kinds = [spec.get("type")] + [p.get("type") for p in spec.get("pretokenizers", []) if isinstance(p, dict)]
    if not any(kind in _ADDITIVE_PRE_TOKENIZERS for kind in kinds):
        return False
    word = len(tokenizer.encode("a", add_special_tokens=False).ids)
    probes = tokenizer.encode_batch(["a\na", "a\n\na"], add_special_tokens=False)
    return all(len(e.ids) == 2 * word for e in probes)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def model_window(model_path: str | Path, special_tokens: int) -> int:
    """Text tokens the model embeds without truncation: its sequence limit minus special tokens."""
    folder = Path(model_path)
    limits = []
    st_limit = _read_json(folder / "sentence_bert_config.json").get("max_seq_length")
    if isinstance(st_limit, int) and st_limit > 0:
        limits.append(st_limit)
    else:
        tok_limit = _read_json(folder / "tokenizer_config.json").get("model_max_length")
        # transformers writes a huge sentinel (1e30) when the tokenizer sets no limit.
        if isinstance(tok_limit, int) and 0 < tok_limit < 1_000_000:
            limits.append(tok_limit)
    positions = _read_json(folder / "config.json").get("max_position_embeddings")
    if isinstance(positions, int) and positions > 0:
        limits.append(positions)
    if not limits:
        raise UsageError(f"Cannot tell the input length limit of the model in {folder} (no max_seq_length).")
    window = min(limits) - special_tokens
    if window < 8:
        raise UsageError(f"The model in {folder} accepts only {window} text tokens, too few to index.")
    return window


def load_token_counter(model_name: str) -> TokenCounter:
    """The token counter of ``model_name`` (an alias, a local folder or a cached model)."""
    from tokenizers import Tokenizer

    path = resolve_model(model_name)
    tokenizer_file = Path(path) / "tokenizer.json"
    if not tokenizer_file.is_file():
        raise UsageError(
            f"The model in {path} has no tokenizer.json (a fast tokenizer), which openclaw-memory needs "
            "to measure chunks; choose a model that ships one."
        )
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    window = model_window(path, tokenizer.num_special_tokens_to_add(False))
    return TokenCounter(tokenizer, window, path)
