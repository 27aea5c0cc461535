"""Conversational activation: decide what is worth saving or searching, and fill parameters.

Public surface (used by the MCP server, the Claude Code hooks and ``cortexgraph analyze``):
``analyze_message``, ``analyze_for_recall``, ``enrich_for_save`` and the components. Nothing
loads at import time; spaCy and MiniLM load on first use and every component has a fallback.
"""

from __future__ import annotations

from collections.abc import Sequence

from activation.analyze import (
    Activation,
    Enrichment,
    MessageAnalysis,
    RecallAnalysis,
    Recommendation,
    engine,
    suggested_query,
)
from activation.config import ActivationConfig
from activation.context import ConversationContext
from activation.dedup import DeduplicationChecker, DeduplicationResult, DuplicateAction
from activation.entities import EntityExtractor, ExtractedEntities
from activation.errors import ActivationError, ClassifierArtefactError
from activation.importance import ImportanceScore, ImportanceScorer
from activation.intent import IntentClassifier, IntentPrediction
from activation.intent_data import Intent
from activation.phrases import PhraseDetector, PhraseSignals
from activation.tags import TagSuggester, TagSuggestions
from storage.base import MemoryStore


def analyze_message(
    message: str,
    *,
    store: MemoryStore | None = None,
    context: ConversationContext | None = None,
    config: ActivationConfig | None = None,
    session_id: str = "default",
) -> MessageAnalysis:
    """Should this message be saved (or searched for), and with which parameters?"""
    return engine(config).analyze_message(
        message, store=store, context=context, session_id=session_id
    )


def analyze_for_recall(
    message: str,
    *,
    context: ConversationContext | None = None,
    config: ActivationConfig | None = None,
    session_id: str = "default",
) -> RecallAnalysis:
    """Is this a request to recall something, and what should be searched for?"""
    return engine(config).analyze_for_recall(message, context=context, session_id=session_id)


def enrich_for_save(
    content: str,
    *,
    tags: Sequence[str] | None,
    entities: Sequence[str] | None,
    strength: float | None,
    store: MemoryStore | None = None,
    config: ActivationConfig | None = None,
) -> Enrichment:
    """Entities, tags and strength for a save, filled only where the caller gave none."""
    return engine(config).enrich_for_save(
        content, tags=tags, entities=entities, strength=strength, store=store
    )


__all__ = [
    "Activation",
    "ActivationConfig",
    "ActivationError",
    "ClassifierArtefactError",
    "ConversationContext",
    "DeduplicationChecker",
    "DeduplicationResult",
    "DuplicateAction",
    "EntityExtractor",
    "Enrichment",
    "ExtractedEntities",
    "ImportanceScore",
    "ImportanceScorer",
    "Intent",
    "IntentClassifier",
    "IntentPrediction",
    "MessageAnalysis",
    "PhraseDetector",
    "PhraseSignals",
    "RecallAnalysis",
    "Recommendation",
    "TagSuggester",
    "TagSuggestions",
    "analyze_for_recall",
    "analyze_message",
    "enrich_for_save",
    "suggested_query",
]
