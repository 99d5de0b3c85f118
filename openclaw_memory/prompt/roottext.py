"""A bootstrap file's text as OpenClaw's cut needs it, read in blocks: never the whole file.

The cut (:func:`.bootstrap.trim_bootstrap_content`) needs the text's length without trailing
white space (UTF-16 code units) and at most a per-file cap's worth of its head and of its
tail. So a file is decoded block by block (invalid UTF-8 as U+FFFD, as :func:`decode_lossy`),
keeping its first ``keep`` characters, the last ``keep`` before its trailing white space, and
counts: a 500 MB ``MEMORY.md`` costs the cap, not the file.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass

from ..files.jstext import JS_WHITESPACE, utf16_len

BLOCK = 1 << 20


@dataclass(frozen=True)
class RootText:
    """``text``: the file's text without trailing white space, or, when that is longer than twice
    ``keep``, its first ``keep`` and last ``keep`` characters joined (all a cut ever takes).
    ``chars``: the whole text's UTF-16 length without trailing white space (OpenClaw's raw)."""

    text: str
    chars: int


def read_root_text(fd: int, keep: int) -> tuple[RootText, bool]:
    """The text of the open file ``fd`` (read to its end) for cuts of at most ``keep`` code units,
    and whether it was not valid UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    bad = False
    head = ""  # the first `keep` characters
    tail = ""  # the last `keep` characters up to the last one that is not white space
    spaces = ""  # the last `keep` characters of the white space after that
    space_run = 0  # that white space's length (one code unit a character: all of it is in the BMP)
    chars = units = 0  # all characters so far, and their UTF-16 length
    while True:
        block = os.read(fd, BLOCK)
        final = not block
        pending = decoder.getstate()[0]  # bytes of a sequence split by the last block
        try:
            text = decoder.decode(block, final)
        except UnicodeDecodeError:
            bad = True
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            text = decoder.decode(pending + block, final)
        if text:
            if len(head) < keep:
                head += text[: keep - len(head)]
            chars += len(text)
            units += utf16_len(text)
            body = text.rstrip(JS_WHITESPACE)
            if body:
                tail = (tail + spaces + body)[-keep:]
                spaces, space_run = "", 0
            after = text[len(body):]
            spaces = (spaces + after)[-keep:]
            space_run += len(after)
        if final:
            break
    kept = chars - space_run  # characters without the trailing white space
    if kept <= keep:
        whole = head[:kept]
    elif kept <= 2 * keep:
        whole = head + tail[2 * keep - kept:]
    else:
        whole = head + tail  # abridged: the middle is never shown
    return RootText(whole, units - space_run), bad
