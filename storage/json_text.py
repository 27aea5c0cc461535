"""Records as compact JSON text: orjson's speed, json's verdicts.

Every write encodes its record once (and the merge, promotion and beads paths write tens of
thousands a run): orjson does a memory record in ~1.2 µs where ``json.dumps`` takes ~14 µs.
The two differ on a few values: orjson writes NaN and infinity as ``null`` where json refuses
them (or writes ``NaN``), and it writes a plain ``Enum`` or a ``UUID`` that json refuses. So
orjson only gets values made of plain JSON types (``plain_json``); anything else, and anything
orjson itself refuses (an int past 64 bits, a non-string key, a ``str`` subclass, a lone
surrogate), goes to json, which accepts or refuses it exactly as before.
"""

from __future__ import annotations

import json
import math
from types import ModuleType
from typing import Any

orjson: ModuleType | None
try:  # a dependency (reads a big store's lines ~2x as fast as json too; jsonl_lines)
    import orjson
except ImportError:  # pragma: no cover
    orjson = None

# Exact types whose JSON text is the same from both encoders (bool is not an int subclass
# here: type() is exact). Floats are plain only when finite.
_PLAIN_LEAVES = frozenset({str, int, bool, type(None)})
_CONTAINERS = frozenset({dict, list, tuple})
_JSON_KINDS = _PLAIN_LEAVES | _CONTAINERS | {float}
# Deeper than any record the store accepts (record_limits.MAX_JSON_DEPTH is 32) and below
# orjson's own recursion limit (254).
_MAX_LEVELS = 64


def plain_json(value: Any) -> bool:
    """True if ``value`` holds only dicts, lists, tuples, str, int, bool, None and finite
    floats (exact types), no deeper than ``_MAX_LEVELS``: what orjson and json write alike."""
    kind = type(value)
    if kind not in _CONTAINERS:
        return kind in _PLAIN_LEAVES or (kind is float and math.isfinite(value))
    level = [value]
    for _ in range(_MAX_LEVELS):
        nested: list[Any] = []
        for node in level:
            children = node.values() if type(node) is dict else node
            kinds = set(map(type, children))  # one C pass a container: records have few
            if kinds <= _PLAIN_LEAVES:
                continue
            if not kinds <= _JSON_KINDS:
                return False
            if float in kinds and not all(math.isfinite(c) for c in children if type(c) is float):
                return False
            if not kinds.isdisjoint(_CONTAINERS):
                nested += [c for c in children if type(c) in _CONTAINERS]
        if not nested:
            return True
        level = nested
    return False


def dumps_compact(value: Any, *, allow_nan: bool = False) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan)``:
    the same JSON (a float may be spelled differently: ``1e-05`` / ``0.00001``), or the same
    exception, at orjson's speed for plain values."""
    if orjson is not None and plain_json(value):
        try:
            text: bytes = orjson.dumps(value)
            return text.decode()
        except TypeError:  # orjson.JSONEncodeError: a huge int, a non-str key, a surrogate
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan)


__all__ = ["dumps_compact", "orjson", "plain_json"]
