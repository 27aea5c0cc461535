"""Tag suggestions: KeyBERT keyphrases over the offline MiniLM, merged with entity tags.

KeyBERT ranks candidate 1-2 word phrases (stop words out) against the message embedding with
MMR for diversity. Candidates come from the message itself; their vectors are cached per
process, so repeated vocabulary costs nothing. Without the model a frequency ranking over
the same candidates runs and ``method`` says so. Tags are Obsidian-friendly: lower-case,
words joined by '-', no spaces or '#'.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cortexgraph.storage.embeddings import Embedder
from cortexgraph.storage.text_index import STOP_WORDS

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.'-]*[A-Za-z0-9+#]|[A-Za-z]")
# Conversation words that rank well against a message yet make useless tags.
_CHAT_WORDS = frozenset(
    """remember forget note save store record please keep mind decided decide agreed going
    want like prefer really actually update correction told tell said say think know things
    thing stuff okay sure yes use using go important critical crucial essential later
    write down make let's lets now new old always never""".split()
)


def to_tag(text: str) -> str:
    """'Machine Learning' -> 'machine-learning'; keeps '/', '_' and '-' (Obsidian tags)."""
    text = text.strip().lower().replace("#", "").replace("'", "")
    text = re.sub(r"[^\w/+.-]+", "-", text)
    return re.sub(r"-{2,}", "-", text).strip("-./")


def entity_tags(entities: Sequence[str]) -> tuple[str, ...]:
    """Each entity name as a tag, once, in order ('Machine Learning' -> 'machine-learning')."""
    return tuple(dict.fromkeys(t for t in (to_tag(e) for e in entities) if t))


@dataclass(frozen=True, slots=True)
class TagSuggestions:
    tags: tuple[str, ...]
    keyphrases: tuple[tuple[str, float], ...]
    method: str  # "keybert", "frequency" or "entities"

    def to_json(self) -> dict[str, Any]:
        return {
            "tags": list(self.tags),
            "method": self.method,
            "keyphrases": [[k, round(s, 4)] for k, s in self.keyphrases],
        }


def candidates(text: str) -> list[str]:
    """1-2 word phrases without stop words, in order of appearance."""
    words = [w.lower().strip(".'") for w in _WORD.findall(text)]
    ok = [w if w not in STOP_WORDS and w not in _CHAT_WORDS and len(w) > 1 else None for w in words]
    out = [w for w in ok if w]
    out += [f"{a} {b}" for a, b in itertools.pairwise(ok) if a and b]
    return list(dict.fromkeys(out))


_NOUNS = frozenset({"NOUN", "PROPN"})


def noun_candidates(doc: Any) -> list[str]:
    """From a spaCy Doc: nouns and proper nouns, and adjective/noun + noun pairs."""
    out: list[str] = []
    tokens = [t for t in doc if not t.is_punct and not t.is_space]
    for i, tok in enumerate(tokens):
        word = tok.text.lower()
        usable = not tok.is_stop and len(word) > 1 and word not in _CHAT_WORDS
        if usable and tok.pos_ in _NOUNS:
            out.append(word)
        if i + 1 < len(tokens):
            nxt = tokens[i + 1]
            if (
                usable
                and tok.pos_ in (*_NOUNS, "ADJ")
                and nxt.pos_ in _NOUNS
                and not nxt.is_stop
                and nxt.text.lower() not in _CHAT_WORDS
            ):
                out.append(f"{word} {nxt.text.lower()}")
    return list(dict.fromkeys(out))


class _VectorCache:
    """LRU of phrase vectors: tags for a stream of messages reuse most of their vocabulary."""

    def __init__(self, embedder: Embedder, size: int = 20_000) -> None:
        self.embedder = embedder
        self.size = size
        self._lock = threading.Lock()
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = [t for t in texts if t not in self._vectors]
        if missing:
            vecs = self.embedder.embed(missing)
            with self._lock:
                for t, v in zip(missing, vecs, strict=True):
                    self._vectors[t] = v
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        with self._lock:
            for t in texts:
                self._vectors.move_to_end(t)
            return np.stack([self._vectors[t] for t in texts])


class TagSuggester:
    def __init__(self, embedder: Embedder | None = None, *, diversity: float = 0.5) -> None:
        self.embedder = embedder
        self.diversity = diversity
        self._cache = _VectorCache(embedder) if embedder is not None else None
        self._keybert: Any = None

    def _kw(self) -> Any:
        if self._keybert is None:
            from keybert import KeyBERT
            from keybert.backend import BaseEmbedder

            class _PassedIn(BaseEmbedder):
                """Every vector is passed to KeyBERT by us: it must never load a model."""

                def embed(self, documents: Any, verbose: bool = False) -> np.ndarray:
                    raise RuntimeError("TagSuggester passes all embeddings to KeyBERT")

            self._keybert = KeyBERT(model=_PassedIn())
        return self._keybert

    def suggest(
        self,
        text: str,
        *,
        entities: Sequence[str] = (),
        max_tags: int = 5,
        message_vector: np.ndarray | None = None,
        doc: Any | None = None,
    ) -> TagSuggestions:
        """``doc``: the spaCy parse of ``text``; its nouns make better candidates."""
        cands = noun_candidates(doc) if doc is not None else candidates(text)
        phrases: list[tuple[str, float]] = []
        method = "entities"
        if cands and max_tags > 0:
            if self._cache is not None and _keybert_installed():
                doc = (
                    message_vector.reshape(1, -1)
                    if message_vector is not None
                    else self._cache.embedder.embed([text])
                )
                words = self._cache.embed(cands)
                phrases = self._kw().extract_keywords(
                    text,
                    candidates=cands,
                    keyphrase_ngram_range=(1, 2),
                    stop_words=None,
                    use_mmr=True,
                    diversity=self.diversity,
                    top_n=max_tags,
                    doc_embeddings=doc,
                    word_embeddings=words,
                )
                method = "keybert"
            else:
                phrases = _by_frequency(cands, text, max_tags)
                method = "frequency"
        tags: list[str] = []
        for source in [*entities, *(p for p, _ in phrases)]:
            tag = to_tag(source)
            # Skip a bigram tag when both its words are already tags, and vice versa.
            if tag and tag not in tags and not _redundant(tag, tags):
                tags.append(tag)
        return TagSuggestions(tuple(tags[: max(max_tags, len(entities))]), tuple(phrases), method)


def _keybert_installed() -> bool:
    """KeyBERT comes with the full extra; without it tags are ranked by frequency."""
    from importlib.util import find_spec

    return find_spec("keybert") is not None


def _redundant(tag: str, tags: list[str]) -> bool:
    parts = tag.split("-")
    return any(tag in t.split("-") for t in tags) or (
        len(parts) > 1 and all(p in tags for p in parts)
    )


def _by_frequency(cands: list[str], text: str, top_n: int) -> list[tuple[str, float]]:
    lowered = text.lower()
    scored = [(c, lowered.count(c) * (1.5 if " " in c else 1.0)) for c in cands]
    scored.sort(key=lambda p: -p[1])
    return scored[:top_n]


__all__ = [
    "TagSuggester",
    "TagSuggestions",
    "candidates",
    "entity_tags",
    "noun_candidates",
    "to_tag",
]
