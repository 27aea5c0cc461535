"""A save's enrichment: what ``save_memory`` fills in by itself (entities, tags, strength)
when the caller leaves it out, and the duplicate check that comes with KeyBERT's embedding.

Each component runs only if its flag is on and fails alone (activation.components).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cortexgraph.activation.components import ActivationComponents
from cortexgraph.activation.entities import speaker_of
from cortexgraph.activation.results import Enrichment
from cortexgraph.activation.tags import entity_tags
from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.protocol import MemoryStore


class SaveEnrichment(ActivationComponents):
    """``enrich_for_save`` over one config's components, in named steps."""

    def enrich_for_save(
        self,
        content: str,
        *,
        tags: Sequence[str] | None,
        entities: Sequence[str] | None,
        strength: float | None,
        store: MemoryStore | None = None,
    ) -> Enrichment:
        """Fill what the caller left out (None). An explicit value always wins, and an explicit
        empty list means "none": ``entities=[]`` extracts nothing, ``tags=[]`` suggests nothing.

        The request path runs no model by default: a transcript line's speaker is its subject
        (first entity), the rules find names and technical terms, phrases give the strength.
        spaCy and KeyBERT (``save_spacy``, ``save_keyphrase_tags``) cost 20-100 ms a save and
        did not improve recall through the MCP path (docs/retrieval.md). ``store`` is given
        for the duplicate check, which runs only with ``save_keyphrase_tags`` (it needs the
        same embedding).
        """
        errors: dict[str, str] = {}
        applied: list[str] = []
        out_entities = tuple(entities) if entities is not None else ()
        out_tags = tuple(tags) if tags is not None else ()
        out_strength = strength
        duplicate = None
        c = self.config
        # What is filled in is a suggestion, so it fits the store: a name the store would
        # refuse (a 300-character path) or entities past its count failed the whole save.
        limits = store.config if store is not None else StoreConfig()
        if c.enabled:
            heavy = c.save_keyphrase_tags and tags is None
            vector = self._vector(content, errors) if heavy else None
            spacy = c.save_spacy and (entities is None or heavy)
            doc = self._parse(content, errors) if spacy else None
            found = self._save_entities(content, doc, errors) if entities is None else ()
            if found := _within(found, limits.max_entities, limits.max_entity_chars):
                out_entities = found
                applied.append("entities")
            if tags is None and c.component_enabled("enable_tags"):
                out_tags = _within(
                    self._save_tags(content, out_entities, vector, doc, errors, heavy),
                    limits.max_tags,
                    limits.max_tag_chars,
                )
                if out_tags:
                    applied.append("tags")
            if strength is None and c.save_strength:
                out_strength = self._run(
                    "importance",
                    "enable_importance",
                    errors,
                    lambda: self._save_strength(content, vector),
                    None,
                )
                if out_strength is not None:
                    applied.append("strength")
            if store is not None and vector is not None:
                duplicate = self._duplicate_of(content, store, vector, errors)
        return Enrichment(
            entities=out_entities,
            tags=out_tags,
            strength=out_strength,
            enrichment_applied=tuple(applied),
            duplicate=duplicate,
            errors=errors,
        )

    def _save_entities(self, content: str, doc: Any, errors: dict[str, str]) -> tuple[str, ...]:
        """A save's entities: a transcript line's speaker first (its subject), then what the
        extractor (the rules, or spaCy with ``save_spacy``) finds."""
        c = self.config
        speaker = speaker_of(content) if c.save_subject else None
        extractor = self.entities if c.save_spacy else self.rule_entities
        found = (
            self._run(
                "entities",
                "enable_entities",
                errors,
                lambda: extractor.extract(content, doc=doc),
                None,
            )
            if speaker is None or c.save_transcript_mentions
            else None
        )
        names = ((speaker,) if speaker else ()) + (found.entities if found else ())
        return tuple(dict.fromkeys(names))

    def _save_tags(
        self,
        content: str,
        entities: tuple[str, ...],
        vector: np.ndarray | None,
        doc: Any,
        errors: dict[str, str],
        heavy: bool,
    ) -> tuple[str, ...]:
        """A save's tags: KeyBERT's with ``save_keyphrase_tags``, else its entities' tags."""
        c = self.config
        suggestion = (
            self._run(
                "tags",
                "enable_tags",
                errors,
                lambda: self.tags.suggest(
                    content,
                    entities=entities,
                    max_tags=c.max_tags,
                    message_vector=vector,
                    doc=doc,
                ),
                None,
            )
            if heavy
            else None
        )
        if suggestion is not None:
            return tuple(suggestion.tags)
        return tuple(entity_tags(entities)[: c.max_tags])

    def _save_strength(self, content: str, vector: np.ndarray | None) -> float:
        """A save's strength from its phrases and (with an embedding) its intent."""
        phrases = self.phrases.detect(content)
        intent = (
            self.classifier.predict(content, vector)
            if self.config.enable_intent and vector is not None
            else None
        )
        return self.importance.score(
            intent=intent.intent if intent else None,
            keyword_boost=phrases.importance_boost,
            explicit_save=phrases.save_request,
        ).strength


def _within(values: Sequence[str], max_items: int, max_chars: int) -> tuple[str, ...]:
    """``values`` as the store takes them: none longer than ``max_chars``, at most
    ``max_items``, in their order."""
    return tuple(v for v in values if len(v) <= max_chars)[:max_items]


__all__ = ["SaveEnrichment"]
