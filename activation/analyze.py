"""The three surfaces: analyze_message, analyze_for_recall and enrich_for_save.

Each component runs only if its flag is on and fails alone (activation.components): an
exception in one is logged, named in ``errors`` and the rest of the analysis goes on (a save is
never blocked by it).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from cortexgraph.activation.config import DEFAULT_CONFIG, ActivationConfig
from cortexgraph.activation.context import ConversationContext, is_follow_up, is_question
from cortexgraph.activation.dedup import NO_DUPLICATE
from cortexgraph.activation.intent import IntentPrediction
from cortexgraph.activation.intent_data import Intent
from cortexgraph.activation.phrases import NO_SIGNALS, PhraseSignals
from cortexgraph.activation.recall_query import suggested_query
from cortexgraph.activation.results import (
    Enrichment,
    MessageAnalysis,
    RecallAnalysis,
    Recommendation,
)
from cortexgraph.activation.save_enrichment import SaveEnrichment
from cortexgraph.activation.tags import entity_tags
from cortexgraph.storage.protocol import MemoryStore

_SAVE_LABELS = tuple(i.value for i in Intent if i.is_save)
_DISABLED = "preprocessing is disabled"


@dataclass(frozen=True, slots=True)
class _Reading:
    """A message as the analysers read it: the text (with the turns before it, for a
    follow-up), its embedding, its phrase signals and its intent."""

    text: str
    vector: np.ndarray | None
    phrases: PhraseSignals
    intent: IntentPrediction | None


def _disabled_message() -> MessageAnalysis:
    return MessageAnalysis(
        should_save=False,
        action_recommendation=Recommendation.NONE,
        confidence=0.0,
        intent=None,
        suggested_entities=(),
        suggested_tags=(),
        suggested_strength=1.0,
        deduplication=NO_DUPLICATE,
        phrases=NO_SIGNALS,
        reasoning=(_DISABLED,),
    )


class Activation(SaveEnrichment):
    """The three surfaces over one config's components (activation.components); a save's
    enrichment (``enrich_for_save``) is in activation.save_enrichment."""

    def analyze_message(
        self,
        message: str,
        *,
        store: MemoryStore | None = None,
        context: ConversationContext | None = None,
        session_id: str = "default",
    ) -> MessageAnalysis:
        if not self.config.enabled:
            return _disabled_message()
        errors: dict[str, str] = {}
        reasons: list[str] = []
        reading = self._read_message(message, context, session_id, errors, reasons)
        intent = reading.intent
        p_save = sum(intent.probabilities.get(k, 0.0) for k in _SAVE_LABELS) if intent else 0.0
        p_recall = intent.probabilities.get(Intent.RECALL_INFO.value, 0.0) if intent else 0.0
        rec, confidence = self._recommend(
            reading.phrases, intent, p_save, p_recall, reasons, question=is_question(message)
        )
        saving = rec in (Recommendation.MUST_SAVE, Recommendation.SHOULD_SAVE)
        doc = self._parse(reading.text, errors)
        ents = self._entities(reading.text, errors, doc)
        entity_list = ents.entities if ents else ()
        methods = {
            "intent": intent.method if intent else "off",
            "entities": ents.method if ents else "off",
        }
        dedup = NO_DUPLICATE
        if saving and store is not None:
            found = self._duplicate_of(message, store, reading.vector, errors)
            dedup = NO_DUPLICATE if found is None else found
            if dedup.is_duplicate and dedup.best is not None:
                rec = Recommendation.DUPLICATE_DETECTED
                reasons.append(
                    f"similar to memory {dedup.best.memory_id} "
                    f"({dedup.best.similarity:.2f}): {dedup.recommendation.value}"
                )
        tags, methods["tags"] = self._message_tags(reading, entity_list, doc, errors, saving)
        strength = 1.0
        if saving or rec is Recommendation.DUPLICATE_DETECTED:
            strength = self._message_strength(reading, errors, reasons)
        return MessageAnalysis(
            should_save=saving and rec is not Recommendation.DUPLICATE_DETECTED,
            action_recommendation=rec,
            confidence=confidence,
            intent=intent,
            suggested_entities=entity_list,
            suggested_tags=tags[: self.config.max_tags],  # CORTEXGRAPH_TAG_SUGGESTION_TOP_K
            suggested_strength=strength,
            deduplication=dedup,
            phrases=reading.phrases,
            reasoning=tuple(reasons),
            methods=methods,
            errors=errors,
        )

    def _read_message(
        self,
        message: str,
        context: ConversationContext | None,
        session_id: str,
        errors: dict[str, str],
        reasons: list[str],
    ) -> _Reading:
        """Phrases, embedding and intent of a message; a short follow-up is read with the
        previous turns, and a preference spread over recent turns is read as one."""
        text = message
        if (
            context is not None
            and self.config.enable_context
            and is_follow_up(message)
            and context.turns(session_id)
        ):
            text = context.window(message, session_id=session_id, turns=2)
            reasons.append("short follow-up: analysed with the previous turns")
        phrases = self._run(
            "phrases", "enable_phrases", errors, lambda: self.phrases.detect(message), NO_SIGNALS
        )
        vector = self._vector(text, errors)
        intent = self._run(
            "intent", "enable_intent", errors, lambda: self.classifier.predict(text, vector), None
        )
        if context is not None and self.config.enable_context and text == message:
            intent, text, vector = self._with_window(
                message, intent, context, session_id, errors, reasons
            ) or (intent, text, vector)
        return _Reading(text=text, vector=vector, phrases=phrases, intent=intent)

    def _message_tags(
        self,
        reading: _Reading,
        entities: tuple[str, ...],
        doc: Any,
        errors: dict[str, str],
        saving: bool,
    ) -> tuple[tuple[str, ...], str]:
        """The tags to suggest and how they were found. KeyBERT runs only for a message that
        will be saved (it is the costliest step); the others get their entities' tags."""
        enabled = self.config.component_enabled("enable_tags")
        if not saving:
            return (tuple(entity_tags(entities)) if enabled else ()), "entities"
        suggestion = self._run(
            "tags",
            "enable_tags",
            errors,
            lambda: self.tags.suggest(
                reading.text,
                entities=entities,
                max_tags=self.config.max_tags,
                message_vector=reading.vector,
                doc=doc,
            ),
            None,
        )
        if not enabled:
            return (), "off"
        if suggestion:
            return tuple(suggestion.tags), suggestion.method
        return tuple(entity_tags(entities)), "entities"

    def _message_strength(
        self, reading: _Reading, errors: dict[str, str], reasons: list[str]
    ) -> float:
        """The strength to save it with (1.0 when importance scoring is off or fails)."""
        intent, phrases = reading.intent, reading.phrases
        score = self._run(
            "importance",
            "enable_importance",
            errors,
            lambda: self.importance.score(
                intent=intent.intent if intent else None,
                keyword_boost=phrases.importance_boost,
                explicit_save=phrases.save_request,
            ),
            None,
        )
        if score is None:
            return 1.0
        reasons.append(f"strength {score.strength}: {score.explanation}")
        return score.strength

    def _with_window(self, message, intent, context, session_id, errors, reasons):
        """A preference spread over several messages: classify the recent user turns together
        and use that verdict when it is a confident save and the single message was not."""
        window = context.window(message, session_id=session_id, turns=2)
        if window == message or intent is None or intent.intent.is_save:
            return None
        vector = self._vector(window, errors)
        joint = self._run(
            "intent", "enable_intent", errors, lambda: self.classifier.predict(window, vector), None
        )
        if joint is None or not joint.intent.is_save:
            return None
        if joint.confidence < max(self.config.save_confidence, intent.confidence):
            return None
        reasons.append(f"recent turns together read as {joint.intent.value}")
        return joint, window, vector

    def _recommend(self, phrases, intent, p_save, p_recall, reasons, *, question=False):
        c = self.config
        if phrases.save_request:
            reasons.append(f"explicit save request: {', '.join(phrases.matched_phrases)}")
            return Recommendation.MUST_SAVE, max(phrases.confidence, p_save)
        if phrases.recall_request:
            reasons.append(f"explicit recall request: {', '.join(phrases.matched_phrases)}")
            return Recommendation.SHOULD_SEARCH, max(phrases.confidence, p_recall)
        if intent is not None and p_recall >= c.search_confidence and p_recall > p_save:
            reasons.append(f"intent RECALL_INFO ({p_recall:.2f})")
            return Recommendation.SHOULD_SEARCH, p_recall
        if question and p_save >= 0.3:
            # "Should we use Postgres or MySQL for billing?" asks; the answer may be worth
            # keeping, the question is not.
            reasons.append(f"a question, not something to keep (P(save-worthy) {p_save:.2f})")
            return Recommendation.NONE, 1.0 - p_save
        if intent is not None and p_save >= c.save_confidence:
            reasons.append(f"intent {intent.intent.value}; P(save-worthy) {p_save:.2f}")
            return Recommendation.SHOULD_SAVE, p_save
        if phrases.importance_marker and p_save >= 0.3:
            reasons.append(f"importance marker with P(save-worthy) {p_save:.2f}")
            return Recommendation.SHOULD_SAVE, max(0.6, p_save)
        if phrases.excluded_phrases:
            reasons.append(f"excluded phrasing: {'; '.join(phrases.excluded_phrases)}")
        if intent is not None:
            reasons.append(f"intent {intent.intent.value} ({intent.confidence:.2f}): nothing to do")
        return Recommendation.NONE, 1.0 - max(p_save, p_recall)

    def analyze_for_recall(
        self,
        message: str,
        *,
        context: ConversationContext | None = None,
        session_id: str = "default",
    ) -> RecallAnalysis:
        errors: dict[str, str] = {}
        if not self.config.enabled:
            return RecallAnalysis(
                should_search=False,
                confidence=0.0,
                suggested_query="",
                suggested_entities=(),
                suggested_tags=(),
                reasoning=(_DISABLED,),
            )
        text = message
        reasons = []
        if (
            context is not None
            and self.config.enable_context
            and context.turns(session_id)
            and (is_follow_up(message) or not suggested_query(message))
        ):
            # "what did we decide last time?" names no topic: the turns before it do.
            text = context.window(message, session_id=session_id, turns=2)
            if text != message:
                reasons.append("no topic of its own: read with the previous turns")
        phrases = self._run(
            "phrases", "enable_phrases", errors, lambda: self.phrases.detect(message), NO_SIGNALS
        )
        intent = self._run(
            "intent",
            "enable_intent",
            errors,
            lambda: self.classifier.predict(text, self._vector(text, errors)),
            None,
        )
        p_recall = intent.probabilities.get(Intent.RECALL_INFO.value, 0.0) if intent else 0.0
        if phrases.recall_request:
            should, confidence = True, max(phrases.confidence, p_recall)
            reasons.append(f"explicit recall request: {', '.join(phrases.matched_phrases)}")
        else:
            should = p_recall >= self.config.search_confidence
            confidence = p_recall if should else 1.0 - p_recall
            reasons.append(f"P(RECALL_INFO) {p_recall:.2f}")
        ents = self._entities(text, errors, self._parse(text, errors))
        entity_list = ents.entities if ents else ()
        query = suggested_query(text)
        tags = entity_tags(entity_list)
        return RecallAnalysis(
            should_search=should,
            confidence=confidence,
            suggested_query=query,
            suggested_entities=entity_list,
            suggested_tags=tags,
            reasoning=tuple(reasons),
            errors=errors,
        )


_engines: dict[ActivationConfig, Activation] = {}
_engines_lock = threading.Lock()


def engine(config: ActivationConfig | None = None) -> Activation:
    """One shared ``Activation`` per config (its models load once)."""
    config = config or DEFAULT_CONFIG
    with _engines_lock:
        if config not in _engines:
            _engines[config] = Activation(config)
        return _engines[config]


__all__ = [
    "Activation",
    "Enrichment",
    "MessageAnalysis",
    "RecallAnalysis",
    "Recommendation",
    "engine",
]
