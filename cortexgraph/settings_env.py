"""The environment's names for the settings: which CORTEXGRAPH_* (and 1.x's LTM_*) variables the
product reads, a warning for one it does not (a misspelt name never passes silently), and a
rejected value
described by the variable the user set. Apart from ``settings`` so that module stays the
settings themselves.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Mapping
from typing import TextIO

from pydantic import AliasChoices, ValidationError

from cortexgraph.settings import Settings

# CORTEXGRAPH_* variables read outside ``Settings`` (by the hooks, the plugin wrapper, the
# benches); every other known name comes from Settings' fields and aliases.
OTHER_ENV_NAMES = frozenset(
    {
        "CORTEXGRAPH_HOOK_STATE_DIR",
        "CORTEXGRAPH_BEHAVIOR_MONITOR",
        "CORTEXGRAPH_PYTHON",
        "CORTEXGRAPH_REFERENCE_VENV",
    }
)
ENV_PREFIX = "CORTEXGRAPH_"
# The vault's variables keep 1.x's unprefixed names (LTM_VAULT_PATH, LTM_PROMOTED_FOLDER): a
# misspelt one would silently leave the vault at its default, beside the store.
ENV_PREFIXES = (ENV_PREFIX, "LTM_")


def known_env_names() -> frozenset[str]:
    """Every CORTEXGRAPH_* and LTM_* name the product reads: Settings' fields (prefix + name)
    and their validation aliases, plus ``OTHER_ENV_NAMES``. Derived, so a new field is known
    at once."""
    names = set(OTHER_ENV_NAMES)
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias] if alias else []
        if not choices:
            names.add(f"{ENV_PREFIX}{name}".upper())
        names.update(str(c).upper() for c in choices if isinstance(c, str))
    return frozenset(n for n in names if n.startswith(ENV_PREFIXES))


def unknown_env_warnings(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per CORTEXGRAPH_* or LTM_* variable that nothing reads, naming the closest
    known one."""
    env = os.environ if environ is None else environ
    known = known_env_names()
    out = []
    for key in sorted(k for k in env if k.upper().startswith(ENV_PREFIXES)):
        if key.upper() in known:
            continue
        close = difflib.get_close_matches(key.upper(), sorted(known), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        out.append(f"cortexgraph: unknown setting {key} is ignored{hint}")
    return out


def warn_unknown_env(
    environ: Mapping[str, str] | None = None, stream: TextIO | None = None
) -> list[str]:
    """Print ``unknown_env_warnings`` on stderr (where a process starts: MCP server, CLIs,
    hooks), so a misspelt variable never passes silently. Returns the lines printed."""
    lines = unknown_env_warnings(environ)
    for line in lines:
        print(line, file=stream or sys.stderr)
    return lines


def env_name(field: str, environ: Mapping[str, str] | None = None) -> str:
    """The environment variable that sets ``field`` (or the alias pydantic reports): of a
    field's several names, the one set in ``environ`` (the process's by default)."""
    env = {k.upper() for k in (os.environ if environ is None else environ)}
    names = [field]
    info = Settings.model_fields.get(field)
    if info is None:  # pydantic reported an alias: the field's other names too
        info = next(
            (f for f in Settings.model_fields.values() if _choices(f.validation_alias, field)),
            None,
        )
    if info is not None:
        names = _choices(info.validation_alias, field) or [f"{ENV_PREFIX}{field}"]
    upper = [n.upper() for n in names]
    return next((n for n in upper if n in env), upper[0])


def _choices(alias: object, field: str) -> list[str]:
    """The names in an ``AliasChoices`` that holds ``field`` (or any, if ``field`` is a field
    name, not an alias); [] otherwise."""
    if not isinstance(alias, AliasChoices):
        return []
    names = [str(c) for c in alias.choices if isinstance(c, str)]
    is_alias = field.upper() in {n.upper() for n in names}
    return names if is_alias or field in Settings.model_fields else []


# What is allowed, where pydantic's message says only what is wrong.
_ALLOWED = {
    "bool_parsing": "expected true or false (or 1/0, yes/no, on/off)",
    "float_parsing": "expected a number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
}


def describe_invalid(exc: ValidationError) -> str:
    """One line for every rejected value: ``NAME='value' is not allowed: what is``."""
    parts = []
    for error in exc.errors(include_url=False):
        loc = error.get("loc") or ("?",)
        name = env_name(str(loc[0]))
        msg = _ALLOWED.get(str(error.get("type")), str(error.get("msg", "invalid")))
        msg = msg[:1].lower() + msg[1:]
        value = error.get("input")
        shown = repr(value) if isinstance(value, str | int | float) else "(this value)"
        parts.append(f"{name}={shown} is not allowed: {msg}")
    return "; ".join(parts) or f"invalid settings: {exc}"


__all__ = [
    "ENV_PREFIX",
    "ENV_PREFIXES",
    "OTHER_ENV_NAMES",
    "describe_invalid",
    "env_name",
    "known_env_names",
    "unknown_env_warnings",
    "warn_unknown_env",
]
