"""The activation layer's PhraseDetector for the hooks.

A plain import: ``cortexgraph.activation`` imports its members on first use (PEP 562), so this
costs only ``activation/phrases.py`` (``re`` and a dataclass), not numpy or the models. Same
patterns, same exclusions, one source of truth.
"""

from __future__ import annotations

from cortexgraph.activation.phrases import PhraseDetector


def phrase_detector() -> PhraseDetector:
    return PhraseDetector()


__all__ = ["phrase_detector"]
