"""Rules for single fields of stored records: ids, tag lists, strengths, times, counters.

Shared by the strict record parsers (storage.models) and the store's input checks.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from cortexgraph.storage.errors import InvalidInputError

MAX_STRENGTH = 2.0
# ``fullmatch`` only: ``$`` would also match before a final newline ("abc\n").
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
# Counters (use_count, review_count ...) and unix times beyond these are damage, not data:
# saving refuses them, so loading does too.
MAX_COUNT = 10**12
MAX_TIME = 2**40  # about the year 36,800
QUOTE_CHARS = 60


def short_repr(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters: errors never echo a huge input."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        unit = "chars" if isinstance(value, str) else "bytes"
        return f"{value[:limit]!r}... ({len(value):,} {unit})"
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        text = repr(value) if not isinstance(value, int) or abs(value) < 10**limit else "<huge int>"
    else:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit + 2 else f"{text[:limit]}..."


def validate_id(value: object, what: str = "memory id") -> str:
    """Return ``value`` if it is a well-formed id, else raise InvalidInputError."""
    if not isinstance(value, str) or not ID_RE.fullmatch(value):
        raise InvalidInputError(
            f"malformed {what} {short_repr(value)}: expected a uuid such as "
            "'3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b' (letters, digits, '-', '_', '.', ':')"
        )
    return value


def validate_tags(tags: object, what: str = "tags") -> tuple[str, ...]:
    """Tags are a list of non-empty strings; order kept, duplicates dropped."""
    if tags is None:
        return ()
    if isinstance(tags, str | bytes | Mapping) or not isinstance(tags, Iterable):
        raise InvalidInputError(f"{what} must be a list of strings, got {type(tags).__name__}")
    out: list[str] = []
    for t in tags:
        if not isinstance(t, str):
            kind = type(t).__name__
            raise InvalidInputError(f"{what} must be strings; {short_repr(t)} is {kind}")
        t = t.strip()
        if not t:
            raise InvalidInputError(f"{what} must not contain empty strings")
        if t not in out:
            out.append(t)
    return tuple(out)


def validate_strength(value: object, upper: float = MAX_STRENGTH) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"strength must be a number, got {type(value).__name__}")
    if not 0.0 <= float(value) <= upper:
        raise InvalidInputError(
            f"strength must be between 0.0 and {upper}, got {short_repr(value)}"
        )
    return float(value)


def int_field(value: Any, name: str, default: int) -> int:
    """A unix time or counter: ints as they are, whole floats accepted (1.x wrote some)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number, got {short_repr(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError(f"{name} must be finite, got {value!r}")
    if not -MAX_TIME <= value <= MAX_TIME:
        raise InvalidInputError(f"{name} is out of range, got {short_repr(value)}")
    return int(value)


def count_field(value: Any, name: str) -> int:
    n = int_field(value, name, 0)
    if n < 0:
        raise InvalidInputError(f"{name} must not be negative, got {n}")
    if n > MAX_COUNT:
        raise InvalidInputError(f"{name} must be at most {MAX_COUNT:,}, got {short_repr(n)}")
    return n


def optional_int(value: Any, name: str = "value") -> int | None:
    return None if value is None else int_field(value, name, 0)


def float_field(value: Any, name: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite number, got {short_repr(value)}")
    return float(value)


def optional_str(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string or null, got {type(value).__name__}")
    return value


def or_default(value: Any, default: Any) -> Any:
    """Missing or null means the default; any other falsy value ([], 0, "") is kept, and
    rejected by the field's rule like any wrong value (``or`` would have accepted it)."""
    return default if value is None else value


def json_list(value: Any) -> Any:
    if isinstance(value, str):  # 1.x SQLite keeps entities as a JSON string
        return json.loads(value)
    return () if value is None else value


__all__ = [
    "ID_RE",
    "MAX_COUNT",
    "MAX_STRENGTH",
    "MAX_TIME",
    "QUOTE_CHARS",
    "count_field",
    "float_field",
    "int_field",
    "json_list",
    "optional_int",
    "optional_str",
    "or_default",
    "short_repr",
    "validate_id",
    "validate_strength",
    "validate_tags",
]
