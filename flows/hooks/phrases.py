"""The activation layer's PhraseDetector, loaded without the rest of ``activation``.

``import activation.phrases`` runs ``activation/__init__.py``, which imports the whole layer
(numpy, the embedding module: ~110 ms), far too much for a hook that runs before every prompt.
``activation/phrases.py`` itself needs only ``re``, so it is loaded here from its file under a
private name. Same patterns, same exclusions, one source of truth.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_NAME = "_cortexgraph_hook_phrases"


def phrases_module() -> ModuleType:
    loaded = sys.modules.get("cortexgraph.activation.phrases") or sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("activation")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the activation package is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "phrases.py"
    file_spec = importlib.util.spec_from_file_location(_NAME, path)
    if file_spec is None or file_spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(file_spec)
    sys.modules[_NAME] = module  # dataclasses looks the module up while building classes
    file_spec.loader.exec_module(module)
    return module


def phrase_detector():  # activation.phrases.PhraseDetector
    return phrases_module().PhraseDetector()


__all__ = ["phrase_detector", "phrases_module"]
