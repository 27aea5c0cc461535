"""Pattern declarations: shipped YAML, user files that add/replace/disable, typed errors."""

from __future__ import annotations

import pytest

from cortexgraph.activation.monitor import PatternConfigError, load_pattern_set, load_patterns
from cortexgraph.activation.monitor.pattern_files import SHIPPED
from cortexgraph.activation.monitor.pattern_parsing import parse_pattern

MINIMAL = {
    "id": "my-loop",
    "name": "Mine",
    "trigger": {"detector": "repeated_error", "threshold": 2},
    "window": {"calls": 5},
    "interventions": [{"id": "stop", "next_step": "Stop."}],
}


def test_shipped_patterns_cover_the_four_detectors():
    specs = load_patterns()
    assert {s.trigger.detector for s in specs} == {
        "repeated_call",
        "repeated_error",
        "sequence",
        "rapid_retry",
    }
    for s in specs:
        assert s.name and s.description and s.interventions and s.keywords


def test_user_file_adds_replaces_and_disables(tmp_path):
    user = tmp_path / "patterns.yaml"
    user.write_text(
        "patterns:\n"
        "  - id: rapid-retry\n    enabled: false\n"
        "  - id: repeated-error\n    name: Mine\n    trigger: {detector: repeated_error, "
        "threshold: 5}\n    window: {calls: 10}\n    intervention: Take a break.\n"
        "  - id: extra\n    trigger: {detector: repeated_call, threshold: 2}\n"
        "    window: {calls: 4}\n    interventions: [{id: a, next_step: A}]\n",
        encoding="utf-8",
    )
    specs = {s.id: s for s in load_patterns([user])}
    assert "rapid-retry" not in specs and "extra" in specs
    assert specs["repeated-error"].trigger.threshold == 5
    assert specs["repeated-error"].interventions[0].next_step == "Take a break."
    assert specs["repeated-error"].source == str(user)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": "Bad Id"}, "lower-case"),
        ({"trigger": {"detector": "psychic"}}, "trigger.detector"),
        ({"trigger": {"detector": "repeated_error", "threshold": 1}}, "threshold"),
        ({"trigger": {"detector": "repeated_error", "treshold": 3}}, "treshold"),
        ({"window": {"calls": 1}}, "window.calls"),
        ({"interventions": []}, "intervention"),
        ({"colour": "red"}, "colour"),
        ({"trigger": {"detector": "sequence", "steps": [{"tool": "Edit"}]}}, "two steps"),
        (
            {"trigger": {"detector": "sequence", "steps": [{"tool": "("}, {"tool": "x"}]}},
            "not a valid regex",
        ),
        (
            {
                "trigger": {
                    "detector": "sequence",
                    "steps": [{"tool": "a", "outcome": "meh"}, {"tool": "b"}],
                }
            },
            "outcome",
        ),
    ],
)
def test_bad_declarations_say_what_to_fix(change, message):
    with pytest.raises(PatternConfigError, match=message):
        parse_pattern({**MINIMAL, **change}, "user.yaml")


def test_broken_yaml_is_a_typed_error(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("patterns: [ {id: x", encoding="utf-8")
    with pytest.raises(PatternConfigError, match="not valid YAML"):
        load_patterns([bad])


def test_cache_is_used_and_invalidated_when_a_file_changes(tmp_path):
    cache = tmp_path / "cache.json"
    user = tmp_path / "patterns.yaml"
    first = load_pattern_set([user], cache=cache)
    assert cache.is_file() and first.get("extra") is None
    assert load_pattern_set([user], cache=cache).patterns == first.patterns
    user.write_text(
        "patterns:\n  - id: extra\n    trigger: {detector: repeated_call, "
        "threshold: 2}\n    window: {calls: 4}\n    intervention: Go.\n",
        encoding="utf-8",
    )
    assert load_pattern_set([user], cache=cache).get("extra") is not None


def test_shipped_file_is_inside_the_package():
    assert SHIPPED.is_file() and SHIPPED.parent.name == "monitor"
