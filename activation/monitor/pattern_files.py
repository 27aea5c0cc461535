"""Pattern files: the shipped ``patterns.yaml`` plus the user's own, and the hook's JSON cache.

A user pattern with a shipped id replaces it; ``enabled: false`` turns one off.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from cortexgraph.activation.monitor.errors import PatternConfigError
from cortexgraph.activation.monitor.pattern_parsing import parse_pattern, parse_patterns
from cortexgraph.activation.monitor.patterns import PatternSet, PatternSpec

SHIPPED = Path(__file__).with_name("patterns.yaml")


def _read_yaml(path: Path) -> Any:
    import yaml  # only when patterns are (re)parsed; the hook usually reads the JSON cache

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except yaml.YAMLError as exc:
        raise PatternConfigError(f"{path}: not valid YAML: {exc}") from exc


def load_patterns(extra: Sequence[Path] = (), *, shipped: Path = SHIPPED) -> list[PatternSpec]:
    """Shipped patterns, then each existing file of ``extra`` (later files win by id)."""
    by_id: dict[str, PatternSpec] = {}
    for path in (shipped, *extra):
        if path != shipped and not path.is_file():
            continue
        specs, disabled = parse_patterns(_read_yaml(path), str(path))
        for pid in disabled:
            by_id.pop(pid, None)
        for spec in specs:
            by_id[spec.id] = spec
    return sorted(by_id.values(), key=lambda s: (-s.priority, s.id))


def patterns_to_json(specs: Iterable[PatternSpec]) -> str:
    return json.dumps([s.to_json() for s in specs], ensure_ascii=False)


def patterns_from_json(text: str) -> list[PatternSpec]:
    """Patterns from ``patterns_to_json`` output (the hook's cache, no YAML import)."""
    out = []
    for raw in json.loads(text):
        source = raw.pop("source", "shipped")
        out.append(parse_pattern(raw, source))
    return out


def load_pattern_set(extra: Sequence[Path] = (), cache: Path | None = None) -> PatternSet:
    """``load_patterns`` with an optional JSON cache keyed by the files' sizes and mtimes."""
    paths = [SHIPPED, *(p for p in extra if p.is_file())]
    key = ";".join(f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in paths)
    if cache is not None:
        try:
            data = json.loads(cache.read_text(encoding="utf-8"))
            if data.get("key") == key:
                return PatternSet(
                    tuple(patterns_from_json(data["patterns"])), tuple(map(str, paths))
                )
        except (OSError, ValueError, KeyError, TypeError, PatternConfigError):
            pass
    specs = load_patterns([p for p in paths if p != SHIPPED])
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(".tmp")
            tmp.write_text(json.dumps({"key": key, "patterns": patterns_to_json(specs)}), "utf-8")
            tmp.replace(cache)
        except OSError:
            pass  # a cache we cannot write only costs a YAML parse next time
    return PatternSet(tuple(specs), tuple(map(str, paths)))


__all__ = [
    "SHIPPED",
    "load_pattern_set",
    "load_patterns",
    "patterns_from_json",
    "patterns_to_json",
]
