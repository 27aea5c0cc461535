"""Each forgetting curve against its own formula, and the promotion criteria."""

from __future__ import annotations

import math

import pytest

from cortexgraph.storage import InvalidInputError
from cortexgraph.storage.decay import (
    DAY,
    DecayConfig,
    DecayModel,
    decay_score,
    forgetting_curve,
    in_danger_zone,
    memory_score,
    promotion_reason,
    should_forget,
)
from cortexgraph.storage.models import Memory

NOW = 1_704_067_200.0
TIMES = [0.0, 3600.0, 0.5 * DAY, DAY, 3 * DAY, 7 * DAY, 30 * DAY, 365 * DAY]


@pytest.mark.parametrize("dt", TIMES)
def test_exponential_matches_formula(dt):
    cfg = DecayConfig(model=DecayModel.EXPONENTIAL, decay_lambda=2.673e-6)
    assert forgetting_curve(dt, cfg) == pytest.approx(math.exp(-2.673e-6 * dt), rel=1e-12)


def test_exponential_default_lambda_is_a_three_day_half_life():
    cfg = DecayConfig(model="exponential")
    assert forgetting_curve(3 * DAY, cfg) == pytest.approx(0.5, abs=1e-3)


@pytest.mark.parametrize("half_life", [1.0, 3.0, 10.0])
@pytest.mark.parametrize("alpha", [0.5, 1.1, 2.0])
def test_power_law_t0_gives_the_configured_half_life(half_life, alpha):
    cfg = DecayConfig(model=DecayModel.POWER_LAW, pl_alpha=alpha, pl_halflife_days=half_life)
    assert forgetting_curve(half_life * DAY, cfg) == pytest.approx(0.5, rel=1e-12)
    t0 = cfg.pl_t0
    assert t0 == pytest.approx(half_life * DAY / (2 ** (1 / alpha) - 1))
    for dt in TIMES:
        assert forgetting_curve(dt, cfg) == pytest.approx((1 + dt / t0) ** (-alpha), rel=1e-12)


def test_power_law_has_a_heavier_tail_than_exponential():
    pl, ex = DecayConfig(model="power_law"), DecayConfig(model="exponential")
    assert forgetting_curve(30 * DAY, pl) > 10 * forgetting_curve(30 * DAY, ex)
    assert forgetting_curve(DAY, pl) < forgetting_curve(DAY, ex)


@pytest.mark.parametrize("dt", TIMES)
def test_two_component_matches_formula(dt):
    cfg = DecayConfig(model=DecayModel.TWO_COMPONENT)
    lf, ls = math.log(2) / (0.5 * DAY), math.log(2) / (7 * DAY)
    expected = 0.7 * math.exp(-lf * dt) + 0.3 * math.exp(-ls * dt)
    assert forgetting_curve(dt, cfg) == pytest.approx(expected, rel=1e-12)


def test_two_component_custom_weight():
    cfg = DecayConfig(
        model="two_component", tc_weight_fast=0.2, tc_lambda_fast=1e-5, tc_lambda_slow=1e-7
    )
    dt = 2 * DAY
    assert forgetting_curve(dt, cfg) == pytest.approx(
        0.2 * math.exp(-1e-5 * dt) + 0.8 * math.exp(-1e-7 * dt)
    )


def test_the_three_models_really_differ():
    values = {m: forgetting_curve(2 * DAY, DecayConfig(model=m)) for m in DecayModel}
    assert len({round(v, 6) for v in values.values()}) == 3


def test_negative_age_counts_as_zero():
    for m in DecayModel:
        assert forgetting_curve(-100.0, DecayConfig(model=m)) == 1.0


@pytest.mark.parametrize("model", list(DecayModel))
def test_score_is_use_count_beta_times_curve_times_strength(model):
    cfg = DecayConfig(model=model, beta=0.6)
    got = decay_score(use_count=4, last_used=NOW - 2 * DAY, strength=1.5, now=NOW, config=cfg)
    assert got == pytest.approx(5**0.6 * forgetting_curve(2 * DAY, cfg) * 1.5)


def _memory(**kw):
    base = {"id": "m1", "content": "x", "created_at": int(NOW), "last_used": int(NOW)}
    base.update(kw)
    return Memory(**base)


def test_promotion_by_score_needs_use_never_the_moment_it_is_saved():
    cfg = DecayConfig()
    m = _memory(use_count=2)  # 3 ** 0.6 = 1.93 >= 0.65
    assert "score" in promotion_reason(m, NOW, cfg)
    # A brand-new memory scores 1.0 and one recalled once 1.52: neither has earned it yet.
    assert memory_score(_memory(), NOW, cfg) >= cfg.promote_threshold
    assert promotion_reason(_memory(), NOW, cfg) is None
    assert promotion_reason(_memory(use_count=1), NOW, cfg) is None
    assert promotion_reason(_memory(use_count=1), NOW, DecayConfig(promote_score_min_uses=1))


def test_promotion_by_use_count_within_window():
    cfg = DecayConfig()
    old_use = int(NOW - 10 * DAY)
    m = _memory(created_at=int(NOW - 13 * DAY), last_used=old_use, use_count=5, strength=0.1)
    assert memorable_score_below_threshold(m, cfg)
    assert "used 5 times" in promotion_reason(m, NOW, cfg)
    assert promotion_reason(m.with_changes(use_count=4), NOW, cfg) is None
    late = m.with_changes(created_at=int(NOW - 15 * DAY))
    assert promotion_reason(late, NOW, cfg) is None


def memorable_score_below_threshold(m, cfg):
    return decay_score(m.use_count, m.last_used, m.strength, NOW, cfg) < cfg.promote_threshold


def test_promotion_thresholds_come_from_config():
    m = _memory(use_count=2, strength=0.26)  # score 3 ** 0.6 * 0.26 = 0.50
    assert promotion_reason(m, NOW, DecayConfig()) is None
    assert promotion_reason(m, NOW, DecayConfig(promote_threshold=0.4)) is not None


def test_forget_threshold_and_danger_zone():
    cfg = DecayConfig(model="exponential")
    assert should_forget(_memory(last_used=int(NOW - 30 * DAY)), NOW, cfg)
    assert not should_forget(_memory(), NOW, cfg)
    assert in_danger_zone(0.2, cfg) and not in_danger_zone(0.5, cfg)
    assert not in_danger_zone(0.1, cfg)


def test_bad_decay_config_is_rejected():
    with pytest.raises(InvalidInputError, match="choose one of"):
        DecayConfig(model="linear")
    with pytest.raises(InvalidInputError):
        DecayConfig(pl_halflife_days=0)
    with pytest.raises(InvalidInputError):
        DecayConfig(tc_weight_fast=1.5)
