"""Conversational activation: decide what is worth saving or searching, and fill parameters.

Public surface (used by the MCP server, the Claude Code hooks and ``cortexgraph analyze``):
``analyze_message``, ``analyze_for_recall``, ``enrich_for_save`` and the components. Nothing
loads at import time; spaCy and MiniLM load on first use and every component has a fallback.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activation.analyze import Enrichment, MessageAnalysis, RecallAnalysis
    from activation.config import ActivationConfig
    from activation.context import ConversationContext
    from storage.base import MemoryStore

# Names are imported on first use (PEP 562), so ``import activation.phrases`` or
# ``activation.monitor`` from a hook costs only that module, not numpy and the whole layer.
_LAZY = {
    "Activation": "activation.analyze",
    "Enrichment": "activation.analyze",
    "MessageAnalysis": "activation.analyze",
    "RecallAnalysis": "activation.analyze",
    "Recommendation": "activation.analyze",
    "engine": "activation.analyze",
    "suggested_query": "activation.analyze",
    "ActivationConfig": "activation.config",
    "ConversationContext": "activation.context",
    "DeduplicationChecker": "activation.dedup",
    "DeduplicationResult": "activation.dedup",
    "DuplicateAction": "activation.dedup",
    "EntityExtractor": "activation.entities",
    "ExtractedEntities": "activation.entities",
    "ActivationError": "activation.errors",
    "ClassifierArtefactError": "activation.errors",
    "ImportanceScore": "activation.importance",
    "ImportanceScorer": "activation.importance",
    "IntentClassifier": "activation.intent",
    "IntentPrediction": "activation.intent",
    "Intent": "activation.intent_data",
    "PhraseDetector": "activation.phrases",
    "PhraseSignals": "activation.phrases",
    "TagSuggester": "activation.tags",
    "TagSuggestions": "activation.tags",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'activation' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _engine(config: ActivationConfig | None) -> Any:
    from activation.analyze import engine

    return engine(config)


def analyze_message(
    message: str,
    *,
    store: MemoryStore | None = None,
    context: ConversationContext | None = None,
    config: ActivationConfig | None = None,
    session_id: str = "default",
) -> MessageAnalysis:
    """Should this message be saved (or searched for), and with which parameters?"""
    return _engine(config).analyze_message(
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
    return _engine(config).analyze_for_recall(message, context=context, session_id=session_id)


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
    return _engine(config).enrich_for_save(
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
