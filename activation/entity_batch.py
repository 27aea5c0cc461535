"""Entities of many memories at once, for the consolidation run (never the save request).

A save keeps the cheap answer (a transcript line's speaker, or names and terms found by rules);
RelationshipDiscovery hands the memories it has not read yet to ``BatchEntityFinder.find``,
which runs spaCy over them in batches (``nlp.pipe``) and adds the people, places,
organisations, pets, events, works and things each one names, not only its speaker.
Without the spaCy model the rules run alone (capitalised names, a name that opens a sentence
and is followed by a verb, technical terms) and ``method`` says "rules".

Dates and times are left out: a date names when, not who or what, and would relate every
memory of a day. Nothing that looks like a key, token or password becomes an entity
(``activation.entities.looks_secret``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

LEFT_OUT_LABELS = frozenset({"DATE", "TIME"})
MAX_FOUND = 24  # entities kept per memory (the store allows far more; a graph needs few)

# "Thanks, Caroline!", "Hey Mel, ...", "Caroline, look at this": a name in direct address is
# the listener, not what the turn is about (a reply to Caroline is rarely about Caroline).
_GREETING = (
    r"(?:hey|hi|hello|hiya|thanks|thank you|thx|congrats|congratulations|bye|goodbye|yo|wow|"
    r"oh|aw+|yeah|yes|yep|sure|ok|okay|dear|morning|night|welcome|sorry|cheers|well|see you)"
)


def addressed_only(text: str, entity: str) -> bool:
    """True when every mention of ``entity`` in ``text`` is a form of address."""
    words = [re.escape(w) for w in entity.split()]
    if not words:
        return False
    name = r"[\s.]+".join(words)
    mentions = list(re.finditer(rf"(?<!\w){name}(?!\w)", text, re.IGNORECASE))
    if not mentions:
        return False
    for m in mentions:
        before = text[: m.start()]
        after = text[m.end() :]
        opens = re.search(rf"(?:^|[.!?,;:]|\b{_GREETING})[\s,]*$", before, re.IGNORECASE)
        closes = re.match(r"\s*(?:[,!?.;:]|[-\u2013\u2014]|$)", after)
        if not (opens and closes):
            return False
    return True


class BatchEntityFinder:
    """``find(texts)``: the entities each text names, speaker first. ``nlp``: a loaded spaCy
    pipeline, a callable returning one (loaded on the first batch), or None for rules only."""

    def __init__(self, nlp: Any = None, *, batch_size: int = 64) -> None:
        self._nlp = nlp
        self._loaded = not callable(nlp) or hasattr(nlp, "pipe")
        self._lock = threading.Lock()
        self.batch_size = batch_size

    @property
    def nlp(self) -> Any | None:
        with self._lock:
            if not self._loaded:
                self._nlp = self._nlp()
                self._loaded = True
            return self._nlp

    @property
    def method(self) -> str:
        """ "spacy+rules" or "rules" (loads the model to know)."""
        return "spacy+rules" if self.nlp is not None else "rules"

    def find(self, texts: Sequence[str]) -> list[tuple[str, ...]]:
        # Loaded with the first batch: a run whose new memories were read at save time (the
        # MCP server's background reader) never needs the extractor's rules and patterns.
        from cortexgraph.activation.entities import (
            _SPEAKER_RX,
            EntityExtractor,
            looks_secret,
            speaker_of,
        )

        nlp = self.nlp
        bodies = [_SPEAKER_RX.sub("", t, count=1) for t in texts]
        if nlp is not None:
            docs: Any = nlp.pipe(bodies, batch_size=self.batch_size, disable=["parser"])
        else:
            docs = (None for _ in bodies)
        extractor = EntityExtractor(nlp)
        out = []
        for text, body, doc in zip(texts, bodies, docs, strict=True):
            found = extractor.extract(body, doc=doc) if doc is not None else extractor.extract(body)
            names = [
                e
                for e in found.entities
                if found.labels.get(e) not in LEFT_OUT_LABELS and not addressed_only(body, e)
            ]
            speaker = speaker_of(text)
            ordered = ([speaker] if speaker else []) + names
            kept = [e for e in dict.fromkeys(ordered) if e and not looks_secret(e)]
            out.append(tuple(kept[:MAX_FOUND]))
        return out


def batch_entity_finder(spacy_model: str | None) -> BatchEntityFinder:
    """The finder the consolidation run uses: spaCy ``spacy_model`` loaded on the first batch
    (once per process, activation.resources), or rules only when ``spacy_model`` is None or
    the model cannot load."""
    if spacy_model is None:
        return BatchEntityFinder(None)
    from cortexgraph.activation import resources

    return BatchEntityFinder(lambda: resources.spacy_pipeline(spacy_model))


__all__ = ["BatchEntityFinder", "addressed_only", "batch_entity_finder"]
