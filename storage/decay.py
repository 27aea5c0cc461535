"""Temporal decay: how strongly a memory is still held at a moment in time.

    score = (use_count + 1) ** beta * f(dt) * strength

gc's one rule (``forgettable``), used by the MCP ``gc`` tool and the DecayAnalyzer alike: an
active memory below the forget threshold may go unless something spares it (``spared_by``): it
is core, a promotion candidate, used ``valuable_use_count`` times or more, or held at
``valuable_strength`` or more.

``f`` is one of three forgetting curves (each tested against its own formula):

    exponential     exp(-lambda * dt)
    power_law       (1 + dt / t0) ** -alpha, t0 set so f(half_life) = 0.5   (default)
    two_component   w * exp(-lf * dt) + (1 - w) * exp(-ls * dt)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryStatus

DAY = 86_400.0
LN2 = math.log(2.0)


class DecayModel(StrEnum):
    EXPONENTIAL = "exponential"
    POWER_LAW = "power_law"
    TWO_COMPONENT = "two_component"


@dataclass(frozen=True, slots=True)
class DecayConfig:
    model: DecayModel = DecayModel.POWER_LAW
    decay_lambda: float = 2.673e-6  # per second: a 3-day half-life
    beta: float = 0.6
    pl_alpha: float = 1.1
    pl_halflife_days: float = 3.0
    tc_lambda_fast: float = LN2 / (0.5 * DAY)  # 12-hour half-life
    tc_lambda_slow: float = LN2 / (7.0 * DAY)  # 7-day half-life
    tc_weight_fast: float = 0.7
    forget_threshold: float = 0.05
    promote_threshold: float = 0.65
    # A score alone promotes a memory recalled at least this often: a brand-new memory scores
    # 1.0 (strength 1.0, no decay yet), and 1.x's bare score test promoted every save.
    promote_score_min_uses: int = 2
    promote_use_count: int = 5
    promote_time_window_days: int = 14
    danger_zone_min: float = 0.15
    danger_zone_max: float = 0.35
    # A memory used this often, or held this strongly, is worth reinforcing rather than losing.
    valuable_use_count: int = 3
    valuable_strength: float = 1.2

    def __post_init__(self) -> None:
        if not isinstance(self.model, DecayModel):
            try:
                object.__setattr__(self, "model", DecayModel(self.model))
            except ValueError as exc:
                choices = ", ".join(m.value for m in DecayModel)
                raise InvalidInputError(
                    f"unknown decay model {self.model!r}; choose one of {choices}"
                ) from exc
        if self.pl_halflife_days <= 0 or self.pl_alpha <= 0:
            raise InvalidInputError("power-law half-life and alpha must be positive")
        if not 0.0 <= self.tc_weight_fast <= 1.0:
            raise InvalidInputError("tc_weight_fast must be between 0 and 1")

    @property
    def pl_t0(self) -> float:
        """Seconds: the t0 that gives the power law its configured half-life."""
        return self.pl_halflife_days * DAY / (math.pow(2.0, 1.0 / self.pl_alpha) - 1.0)


def forgetting_curve(dt_seconds: float, config: DecayConfig) -> float:
    """f(dt) in [0, 1]; dt below zero (clock skew) counts as zero."""
    dt = max(0.0, dt_seconds)
    if config.model is DecayModel.EXPONENTIAL:
        return math.exp(-config.decay_lambda * dt)
    if config.model is DecayModel.POWER_LAW:
        return math.pow(1.0 + dt / config.pl_t0, -config.pl_alpha)
    w = config.tc_weight_fast
    return w * math.exp(-config.tc_lambda_fast * dt) + (1.0 - w) * math.exp(
        -config.tc_lambda_slow * dt
    )


def decay_score(
    use_count: int, last_used: float, strength: float, now: float, config: DecayConfig
) -> float:
    return (
        math.pow(use_count + 1, config.beta) * forgetting_curve(now - last_used, config) * strength
    )


def memory_score(memory: Memory, now: float, config: DecayConfig) -> float:
    return decay_score(memory.use_count, memory.last_used, memory.strength, now, config)


def should_forget(memory: Memory, now: float, config: DecayConfig) -> bool:
    return memory_score(memory, now, config) < config.forget_threshold


def promotion_reason(memory: Memory, now: float, config: DecayConfig) -> str | None:
    """Why this memory deserves long-term storage, or None if it does not (yet).

    The one promotion rule (the LTMPromoter, ``promote_memory``'s auto-detect and the MCP tool
    all ask it): a memory earns long-term storage through use over time, never the moment it
    is saved. Its score reaches ``promote_threshold`` after at least ``promote_score_min_uses``
    recalls, or it was used ``promote_use_count`` times within ``promote_time_window_days``
    of its creation (1.x's two criteria; 1.x's score test alone passed every new memory)."""
    score = memory_score(memory, now, config)
    if score >= config.promote_threshold and memory.use_count >= config.promote_score_min_uses:
        return (
            f"score {score:.2f} >= {config.promote_threshold} "
            f"with {memory.use_count} uses (>= {config.promote_score_min_uses})"
        )
    age_days = (now - memory.created_at) / DAY
    if memory.use_count >= config.promote_use_count and age_days <= config.promote_time_window_days:
        return (
            f"used {memory.use_count} times within {age_days:.1f} days "
            f"(>= {config.promote_use_count} in {config.promote_time_window_days})"
        )
    return None


def in_danger_zone(score: float, config: DecayConfig) -> bool:
    return config.danger_zone_min <= score <= config.danger_zone_max


def is_valuable(memory: Memory, config: DecayConfig) -> bool:
    """Worth reinforcing rather than losing: core, used often, or held strongly."""
    return (
        memory.is_core
        or memory.use_count >= config.valuable_use_count
        or memory.strength >= config.valuable_strength
    )


def spared_by(memory: Memory, now: float, config: DecayConfig) -> str | None:
    """Why gc keeps this memory however low its score, or None when nothing spares it."""
    if memory.is_core:
        return "core"
    reason = promotion_reason(memory, now, config)
    if reason is not None:
        return f"promotion candidate ({reason})"
    if memory.use_count >= config.valuable_use_count:
        return f"used {memory.use_count} times (>= {config.valuable_use_count})"
    if memory.strength >= config.valuable_strength:
        return f"strength {memory.strength:g} (>= {config.valuable_strength:g})"
    return None


def forgettable(memory: Memory, now: float, config: DecayConfig) -> bool:
    """gc's rule: active, below the forget threshold, and not spared."""
    return (
        memory.status is MemoryStatus.ACTIVE
        and should_forget(memory, now, config)
        and spared_by(memory, now, config) is None
    )


def gc_candidates(
    memories: Iterable[Memory], now: float, config: DecayConfig
) -> list[tuple[float, Memory]]:
    """(score, memory) for every memory gc may forget, weakest first (ties by id)."""
    doomed = [(memory_score(m, now, config), m) for m in memories if forgettable(m, now, config)]
    return sorted(doomed, key=lambda sm: (sm[0], sm[1].id))


def crossing_time(memory: Memory, threshold: float, config: DecayConfig) -> float:
    """The moment (unix seconds) the memory's score falls to ``threshold`` by time alone.

    Closed form for the exponential and power-law curves (f is inverted), bisection for the
    two-component curve (monotone); ``-inf`` when it is already at or below the threshold at
    ``last_used``, ``inf`` when it never gets there (threshold <= 0). A run at ``now`` that
    last looked at ``since`` sees the memory cross when ``since < crossing_time <= now``."""
    peak = math.pow(memory.use_count + 1, config.beta) * memory.strength
    if threshold <= 0.0:
        return math.inf
    if peak <= threshold:
        return -math.inf
    target = threshold / peak  # f(dt) = target, 0 < target < 1
    if config.model is DecayModel.EXPONENTIAL:
        if config.decay_lambda <= 0:
            return math.inf
        return memory.last_used + (-math.log(target) / config.decay_lambda)
    if config.model is DecayModel.POWER_LAW:
        return memory.last_used + config.pl_t0 * (math.pow(target, -1.0 / config.pl_alpha) - 1.0)
    lo, hi = 0.0, DAY
    while forgetting_curve(hi, config) > target:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if forgetting_curve(mid, config) > target:
            lo = mid
        else:
            hi = mid
    return memory.last_used + hi


def decay_thresholds(config: DecayConfig, *extra: float) -> tuple[float, ...]:
    """The scores whose crossing changes what a decay run says of a memory: the danger zone's
    edges, the forget threshold, the promotion threshold, and ``extra`` (urgency bars)."""
    bars = {
        config.danger_zone_max,
        config.danger_zone_min,
        config.forget_threshold,
        config.promote_threshold,
        *extra,
    }
    return tuple(sorted(b for b in bars if b > 0.0))


__all__ = [
    "DAY",
    "DecayConfig",
    "DecayModel",
    "crossing_time",
    "decay_score",
    "decay_thresholds",
    "forgettable",
    "forgetting_curve",
    "gc_candidates",
    "in_danger_zone",
    "is_valuable",
    "memory_score",
    "promotion_reason",
    "should_forget",
    "spared_by",
]
