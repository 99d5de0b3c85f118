"""The ``hash`` embedding backend: vectors derived from the text's words, no model at all.

Each word (lower-cased, Unicode word characters) and each pair of neighbouring words is hashed
into one of the vector's dimensions with a sign, and the counts are L2-normalised. The same text
always gives the same vector, a text shares dimensions with the texts that share its words, and a
query equal to a chunk finds it first. It knows nothing of meaning: paraphrases and other
languages are missed. It exists for machines without the model and, above all, for tests that are
about anything but ranking quality (they run in milliseconds instead of loading a model). The
chunker still counts tokens with the configured model's tokenizer, so chunks are the same.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import xxhash

from openclaw_memory.index.models import canonical_model_name

if TYPE_CHECKING:
    import numpy as np

DIM = 384  # all-MiniLM-L6-v2's width: a store built for either has the same shape
_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    backend = "hash"

    def __init__(self, model_name: str):
        self.model_name = canonical_model_name(model_name)
        self.dim = DIM

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """One L2-normalised float32 row per text (``batch_size`` is accepted for the protocol)."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            features = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
            for feature in features:
                h = xxhash.xxh3_64_intdigest(feature.encode("utf-8", "surrogatepass"))
                out[row, h % self.dim] += 1.0 if (h >> 63) else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
            else:
                out[row, 0] = 1.0  # a text without words still gets a unit vector
        return out
