"""The components the activation surfaces share, built once per config, each failing alone.

A component runs only if its flag is on; an exception in one is logged and named in ``errors``,
and the caller goes on with its fallback (activation.analyze builds the three surfaces on this).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from cortexgraph.activation import resources
from cortexgraph.activation.config import DEFAULT_CONFIG, ActivationConfig, spacy_package
from cortexgraph.activation.dedup import DeduplicationChecker, DeduplicationResult
from cortexgraph.activation.entities import EntityExtractor
from cortexgraph.activation.importance import ImportanceScorer
from cortexgraph.activation.intent import IntentClassifier, load_model
from cortexgraph.activation.phrases import PhraseDetector
from cortexgraph.activation.tags import TagSuggester
from cortexgraph.storage.protocol import MemoryStore

log = logging.getLogger(__name__)
T = TypeVar("T")


class ActivationComponents:
    """Components built once per config; models come from ``activation.resources``."""

    def __init__(self, config: ActivationConfig = DEFAULT_CONFIG) -> None:
        self.config = config
        self.phrases = PhraseDetector()
        self.importance = ImportanceScorer()
        self._lazy: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _get(self, name: str, build: Callable[[], T]) -> T:
        with self._lock:
            if name not in self._lazy:
                self._lazy[name] = build()
            return self._lazy[name]

    @property
    def embedder(self) -> Any | None:
        return resources.embedder() if self.config.use_embeddings else None

    @property
    def nlp(self) -> Any | None:
        if not self.config.use_spacy:
            return None
        return resources.spacy_pipeline(spacy_package(self.config.spacy_model))

    @property
    def classifier(self) -> IntentClassifier:
        path = self.config.intent_model_path  # CORTEXGRAPH_INTENT_MODEL_PATH
        return self._get(
            "intent",
            lambda: IntentClassifier(
                load_model(Path(path)) if path else None, embedder=self.embedder
            ),
        )

    @property
    def entities(self) -> EntityExtractor:
        return self._get("entities", lambda: EntityExtractor(self.nlp))

    @property
    def rule_entities(self) -> EntityExtractor:
        """Names and technical terms found without spaCy (the save path's default)."""
        return self._get("rule-entities", lambda: EntityExtractor(None))

    @property
    def tags(self) -> TagSuggester:
        return self._get("tags", lambda: TagSuggester(self.embedder))

    @property
    def dedup(self) -> DeduplicationChecker:
        c = self.config
        return self._get(
            "dedup",
            lambda: DeduplicationChecker(
                self.embedder, threshold=c.duplicate_threshold, merge_threshold=c.merge_threshold
            ),
        )

    # -- component runners: each returns (value or fallback) and records failures ----------
    def _run(
        self, name: str, flag: str, errors: dict[str, str], fn: Callable[[], T], fallback: T
    ) -> T:
        if not self.config.component_enabled(flag):
            return fallback
        try:
            return fn()
        except Exception as exc:  # one component never fails the whole call
            log.warning("activation component %s failed: %s", name, exc, exc_info=True)
            errors[name] = f"{type(exc).__name__}: {exc}"
            return fallback

    def _vector(self, text: str, errors: dict[str, str]) -> np.ndarray | None:
        embedder = self.embedder
        if not self.config.enabled or embedder is None:
            return None
        return self._run(
            "embedding", "use_embeddings", errors, lambda: embedder.embed([text])[0], None
        )

    def _parse(self, text: str, errors: dict[str, str]) -> Any | None:
        """One spaCy parse shared by entities and tags."""
        nlp = self.nlp
        if nlp is None or not (
            self.config.component_enabled("enable_entities")
            or self.config.component_enabled("enable_tags")
        ):
            return None
        return self._run("spacy", "use_spacy", errors, lambda: nlp(text), None)

    def _entities(self, text: str, errors: dict[str, str], doc: Any = None):
        return self._run(
            "entities",
            "enable_entities",
            errors,
            lambda: self.entities.extract(text, doc=doc),
            None,
        )

    def _duplicate_of(
        self, text: str, store: MemoryStore, vector: np.ndarray | None, errors: dict[str, str]
    ) -> DeduplicationResult | None:
        """The duplicate check of ``text`` against the store; None when off or failed."""
        return self._run(
            "dedup",
            "enable_dedup",
            errors,
            lambda: self.dedup.check(text, store, vector=vector),
            None,
        )


__all__ = ["ActivationComponents"]
