"""A save's enrichment says what it filled, and which component could not run and why."""

from __future__ import annotations

from cortexgraph.activation import ActivationConfig, enrich_for_save
from cortexgraph.activation.analyze import Activation


def test_the_label_names_what_was_filled_and_what_could_not_run(no_models, monkeypatch):
    activation = Activation(no_models)

    def boom(*args, **kwargs):
        raise RuntimeError("model exploded")

    monkeypatch.setattr(activation.rule_entities, "extract", boom)  # the save path's extractor
    e = activation.enrich_for_save(
        "It is critical that we chose Typer for the CLI.", tags=None, entities=None, strength=None
    )
    assert e.label.startswith("filled ") and "strength" in e.label
    assert "unavailable: entities (" in e.label and "model exploded" in e.label


def test_nothing_is_analysed_when_everything_is_given_or_the_layer_is_off(no_models):
    given = enrich_for_save("x", tags=["a"], entities=["b"], strength=1.5, config=no_models)
    assert given.label == "none needed (tags, entities and strength given)"
    assert (given.tags, given.entities, given.strength) == (("a",), ("b",), 1.5)
    off = enrich_for_save(
        "x", tags=None, entities=None, strength=None, config=ActivationConfig(enabled=False)
    )
    assert off.label == "off (CORTEXGRAPH_ENABLE_PREPROCESSING=false)"
    assert off.enrichment_applied == () and off.strength is None
    ran = enrich_for_save("ok", tags=[], entities=[], strength=None, config=no_models)
    assert ran.note == "" and ran.label in {"filled strength", "nothing to fill"}
