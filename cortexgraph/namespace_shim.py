"""``cortexgraph.agents`` (and its submodules) as aliases of the top-level ``agents`` package.

cortexgraph 1.x documents ``from cortexgraph.agents import Scheduler`` and
``from cortexgraph.agents.beads_integration import ...``. Until the packages move under the
``cortexgraph.`` namespace (setuptools package-dir mapping), this meta-path finder makes
``cortexgraph.agents[.x]`` the very module object ``agents[.x]`` (no second copy, so classes stay
identical). Delete this module, and its two lines in cortexgraph/__init__.py, once the mapping
lands: ``cortexgraph.agents`` is then the agents package itself.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

ALIASED = ("agents",)


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: object, target: object = None):  # noqa: ANN201
        head, _, rest = fullname.partition(".")
        if head != "cortexgraph" or rest.split(".", 1)[0] not in ALIASED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        real = importlib.import_module(spec.name.partition(".")[2])
        self._specs[spec.name] = real.__spec__
        return real

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the alias spec on the real module; give it its own back.
        alias = module.__spec__.name if module.__spec__ is not None else ""
        if alias in self._specs:
            module.__spec__ = self._specs.pop(alias)


def install() -> None:
    # First in line: the path finder would otherwise load a second copy of agents/x.py under
    # the alias name, through the aliased package's __path__.
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())


__all__ = ["install"]
