"""The three surfaces: analyze_message, analyze_for_recall and enrich_for_save.

Each component runs only if its flag is on and fails alone: an exception in one is logged,
named in ``errors`` and the rest of the analysis goes on (a save is never blocked by it).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from cortexgraph.activation import resources
from cortexgraph.activation.config import DEFAULT_CONFIG, ActivationConfig
from cortexgraph.activation.context import ConversationContext, is_follow_up
from cortexgraph.activation.dedup import NO_DUPLICATE, DeduplicationChecker
from cortexgraph.activation.entities import EntityExtractor, speaker_of
from cortexgraph.activation.importance import ImportanceScorer
from cortexgraph.activation.intent import IntentClassifier
from cortexgraph.activation.intent_data import Intent
from cortexgraph.activation.phrases import NO_SIGNALS, PhraseDetector
from cortexgraph.activation.results import (
    Enrichment,
    MessageAnalysis,
    RecallAnalysis,
    Recommendation,
)
from cortexgraph.activation.tags import TagSuggester, to_tag
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.text_index import STOP_WORDS

log = logging.getLogger(__name__)
T = TypeVar("T")

_SAVE_LABELS = tuple(i.value for i in Intent if i.is_save)
_RECALL_FILLER = frozenset(
    """what did do does you remember recall remind tell told say said decide decided discuss
    discussed mention mentioned agree agreed again know last time we i me my our us about
    regarding anything something note notes noted saved save memories previously before earlier
    ever already still can could please think talked talk bring pull up find look search
    check refresh memory why which who when where how was were is the name""".split()
)


class Activation:
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
        return resources.spacy_pipeline(self.config.spacy_model) if self.config.use_spacy else None

    @property
    def classifier(self) -> IntentClassifier:
        return self._get("intent", lambda: IntentClassifier(embedder=self.embedder))

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
        rec, confidence = self._recommend(phrases, intent, p_save, p_recall, reasons)
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
                tags = suggestion.tags if suggestion else _entity_tags(entity_list)
                methods["tags"] = suggestion.method if suggestion else "entities"
        else:
            tags = _entity_tags(entity_list) if self.config.component_enabled("enable_tags") else ()
            methods["tags"] = "entities"
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

    def _recommend(self, phrases, intent, p_save, p_recall, reasons):
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
        tags = _entity_tags(entity_list)
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
                else _entity_tags(out_entities)[: c.max_tags]
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


def _entity_tags(entities: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for t in (to_tag(e) for e in entities) if t))


_QUERY_WORD = re.compile(r"[\w][\w'+#.-]*[\w+#]|\w")


def suggested_query(text: str) -> str:
    """The topic of a recall request: filler and stop words removed, order kept."""
    words = []
    for raw in _QUERY_WORD.findall(text.replace("\u2019", "'")):
        word = re.sub(r"'s$", "", raw)
        if word.lower() not in STOP_WORDS and word.lower() not in _RECALL_FILLER:
            words.append(word)
    return " ".join(dict.fromkeys(words))


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
    "suggested_query",
]
