"""Conversational activation: decide what is worth saving or searching, and fill parameters.

Public surface (used by the MCP server, the Claude Code hooks and ``cortexgraph analyze``):
``analyze_message``, ``analyze_for_recall``, ``enrich_for_save`` and the components. Nothing
loads at import time; spaCy and MiniLM load on first use and every component has a fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cortexgraph.storage.lazy_names import lazy_names

if TYPE_CHECKING:
    from cortexgraph.activation.analyze import Enrichment, MessageAnalysis, RecallAnalysis
    from cortexgraph.activation.config import ActivationConfig
    from cortexgraph.activation.context import ConversationContext
    from cortexgraph.storage.protocol import MemoryStore

# Names are imported on first use (PEP 562), so ``import activation.phrases`` or
# ``activation.monitor`` from a hook costs only that module, not numpy and the whole layer.
_LAZY = {
    "Activation": "cortexgraph.activation.analyze",
    "Enrichment": "cortexgraph.activation.analyze",
    "MessageAnalysis": "cortexgraph.activation.analyze",
    "RecallAnalysis": "cortexgraph.activation.analyze",
    "Recommendation": "cortexgraph.activation.analyze",
    "engine": "cortexgraph.activation.analyze",
    "suggested_query": "cortexgraph.activation.recall_query",
    "ActivationConfig": "cortexgraph.activation.config",
    "ConversationContext": "cortexgraph.activation.context",
    "DeduplicationChecker": "cortexgraph.activation.dedup",
    "DeduplicationResult": "cortexgraph.activation.dedup",
    "DuplicateAction": "cortexgraph.activation.dedup",
    "EntityExtractor": "cortexgraph.activation.entities",
    "ExtractedEntities": "cortexgraph.activation.entities",
    "ActivationError": "cortexgraph.activation.errors",
    "ClassifierArtefactError": "cortexgraph.activation.errors",
    "ImportanceScore": "cortexgraph.activation.importance",
    "ImportanceScorer": "cortexgraph.activation.importance",
    "IntentClassifier": "cortexgraph.activation.intent",
    "IntentPrediction": "cortexgraph.activation.intent",
    "Intent": "cortexgraph.activation.intent_data",
    "PhraseDetector": "cortexgraph.activation.phrases",
    "PhraseSignals": "cortexgraph.activation.phrases",
    "TagSuggester": "cortexgraph.activation.tags",
    "TagSuggestions": "cortexgraph.activation.tags",
}


__getattr__ = lazy_names(__name__, _LAZY, shown="activation")


def _engine(config: ActivationConfig | None) -> Any:
    from cortexgraph.activation.analyze import engine

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
    """Entities, tags and strength for a save, filled only where the caller gave none.

    Nothing is loaded when nothing is asked: every value given, or the layer switched off
    (``config.enabled``, CORTEXGRAPH_ENABLE_PREPROCESSING) returns them as they are, with a
    ``note`` saying why. An explicit empty list is kept: ``entities=[]`` means "no entities".
    """
    from cortexgraph.activation.results import Enrichment

    given = (tuple(entities or ()), tuple(tags or ()), strength, (), None)
    if tags is not None and entities is not None and strength is not None:
        return Enrichment(*given, note="none needed (tags, entities and strength given)")
    if config is not None and not config.enabled:
        return Enrichment(*given, note="off (CORTEXGRAPH_ENABLE_PREPROCESSING=false)")
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
    "Enrichment",
    "EntityExtractor",
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
