"""The three surfaces: analyze_message, analyze_for_recall and enrich_for_save.

Each component runs only if its flag is on and fails alone (activation.components): an
exception in one is logged, named in ``errors`` and the rest of the analysis goes on (a save is
never blocked by it).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from cortexgraph.activation.components import ActivationComponents
from cortexgraph.activation.config import DEFAULT_CONFIG, ActivationConfig
from cortexgraph.activation.context import ConversationContext, is_follow_up, is_question
from cortexgraph.activation.dedup import NO_DUPLICATE
from cortexgraph.activation.entities import speaker_of
from cortexgraph.activation.intent_data import Intent
from cortexgraph.activation.phrases import NO_SIGNALS
from cortexgraph.activation.recall_query import suggested_query
from cortexgraph.activation.results import (
    Enrichment,
    MessageAnalysis,
    RecallAnalysis,
    Recommendation,
)
from cortexgraph.activation.tags import entity_tags
from cortexgraph.storage.protocol import MemoryStore

_SAVE_LABELS = tuple(i.value for i in Intent if i.is_save)


class Activation(ActivationComponents):
    """The three surfaces over one config's components (activation.components)."""

    def analyze_message(
        self,
        message: str,
        *,
        store: MemoryStore | None = None,
        context: ConversationContext | None = None,
        session_id: str = "default",
    ) -> MessageAnalysis:
        errors: dict[str, str] = {}
        reasons: list[str] = []
        if not self.config.enabled:
            return MessageAnalysis(
                False,
                Recommendation.NONE,
                0.0,
                None,
                (),
                (),
                1.0,
                NO_DUPLICATE,
                NO_SIGNALS,
                ("preprocessing is disabled",),
            )
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
        p_save = sum(intent.probabilities.get(k, 0.0) for k in _SAVE_LABELS) if intent else 0.0
        p_recall = intent.probabilities.get(Intent.RECALL_INFO.value, 0.0) if intent else 0.0
        rec, confidence = self._recommend(
            phrases, intent, p_save, p_recall, reasons, question=is_question(message)
        )
        saving = rec in (Recommendation.MUST_SAVE, Recommendation.SHOULD_SAVE)
        doc = self._parse(text, errors)
        ents = self._entities(text, errors, doc)
        entity_list = ents.entities if ents else ()
        methods = {
            "intent": intent.method if intent else "off",
            "entities": ents.method if ents else "off",
        }
        dedup = NO_DUPLICATE
        if saving and store is not None:
            dedup = self._run(
                "dedup",
                "enable_dedup",
                errors,
                lambda: self.dedup.check(message, store, vector=vector),
                NO_DUPLICATE,
            )
            if dedup.is_duplicate and dedup.best is not None:
                rec = Recommendation.DUPLICATE_DETECTED
                reasons.append(
                    f"similar to memory {dedup.best.memory_id} "
                    f"({dedup.best.similarity:.2f}): {dedup.recommendation.value}"
                )
        tags: tuple[str, ...]
        if saving:
            # KeyBERT only for messages that will be saved: it is the costliest step.
            suggestion = self._run(
                "tags",
                "enable_tags",
                errors,
                lambda: self.tags.suggest(
                    text,
                    entities=entity_list,
                    max_tags=self.config.max_tags,
                    message_vector=vector,
                    doc=doc,
                ),
                None,
            )
            if not self.config.component_enabled("enable_tags"):
                tags, methods["tags"] = (), "off"
            else:
                tags = suggestion.tags if suggestion else entity_tags(entity_list)
                methods["tags"] = suggestion.method if suggestion else "entities"
        else:
            tags = entity_tags(entity_list) if self.config.component_enabled("enable_tags") else ()
            methods["tags"] = "entities"
        tags = tuple(tags)[: self.config.max_tags]  # CORTEXGRAPH_TAG_SUGGESTION_TOP_K
        strength = 1.0
        if saving or rec is Recommendation.DUPLICATE_DETECTED:
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
            if score is not None:
                strength = score.strength
                reasons.append(f"strength {score.strength}: {score.explanation}")
        return MessageAnalysis(
            should_save=saving and rec is not Recommendation.DUPLICATE_DETECTED,
            action_recommendation=rec,
            confidence=confidence,
            intent=intent,
            suggested_entities=entity_list,
            suggested_tags=tuple(tags),
            suggested_strength=strength,
            deduplication=dedup,
            phrases=phrases,
            reasoning=tuple(reasons),
            methods=methods,
            errors=errors,
        )

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
            return RecallAnalysis(False, 0.0, "", (), (), ("preprocessing is disabled",))
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
        return RecallAnalysis(should, confidence, query, entity_list, tags, tuple(reasons), errors)

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
        if not self.config.enabled:
            return Enrichment(out_entities, out_tags, strength, (), None, errors)
        c = self.config
        heavy = c.save_keyphrase_tags and tags is None
        vector = self._vector(content, errors) if heavy else None
        doc = self._parse(content, errors) if c.save_spacy and (entities is None or heavy) else None
        if entities is None:
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
            if names:
                out_entities = tuple(dict.fromkeys(names))
                applied.append("entities")
        if tags is None and c.component_enabled("enable_tags"):
            suggestion = (
                self._run(
                    "tags",
                    "enable_tags",
                    errors,
                    lambda: self.tags.suggest(
                        content,
                        entities=out_entities,
                        max_tags=c.max_tags,
                        message_vector=vector,
                        doc=doc,
                    ),
                    None,
                )
                if heavy
                else None
            )
            out_tags = (
                suggestion.tags
                if suggestion is not None
                else entity_tags(out_entities)[: c.max_tags]
            )
            if out_tags:
                applied.append("tags")
        out_strength = strength
        if strength is None and c.save_strength:

            def score() -> float:
                phrases = self.phrases.detect(content)
                intent = (
                    self.classifier.predict(content, vector)
                    if c.enable_intent and vector is not None
                    else None
                )
                return self.importance.score(
                    intent=intent.intent if intent else None,
                    keyword_boost=phrases.importance_boost,
                    explicit_save=phrases.save_request,
                ).strength

            out_strength = self._run("importance", "enable_importance", errors, score, None)
            if out_strength is not None:
                applied.append("strength")
        duplicate = None
        if store is not None and vector is not None:
            duplicate = self._run(
                "dedup",
                "enable_dedup",
                errors,
                lambda: self.dedup.check(content, store, vector=vector),
                None,
            )
        return Enrichment(out_entities, out_tags, out_strength, tuple(applied), duplicate, errors)


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
