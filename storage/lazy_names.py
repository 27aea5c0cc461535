"""A package's names loaded on first use (PEP 562), so that importing the package loads only
what a caller reaches for: one ``__getattr__`` for every package that defers its exports.

Generic import plumbing, no storage logic: it lives here because ``storage`` is the one package
every other may import (tests/test_architecture.py).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, sources: Mapping[str, str], shown: str | None = None
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: a name in ``sources`` (name -> the module that
    defines it) is imported on first use and kept in the package, so later uses find it
    directly; any other name is an AttributeError naming ``shown`` (default: ``package``)."""

    def __getattr__(name: str) -> Any:
        module = sources.get(name)
        if module is None:
            raise AttributeError(f"module {shown or package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


__all__ = ["lazy_names"]
