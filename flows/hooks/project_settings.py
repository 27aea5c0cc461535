"""Per-project plugin settings: YAML frontmatter of ``.claude/cortexgraph.local.md``.

    ---
    auto_context_on_start: true
    detect_recall_patterns: true
    prompt_to_save: true
    context_depth: medium      # shallow | medium
    max_inject_chars: 2000
    ---

A missing file means defaults. A broken file (bad YAML, unknown key, wrong type, out of range)
also means defaults, and says why on stderr: a typo must not silence the plugin.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TextIO

SETTINGS_FILE = Path(".claude") / "cortexgraph.local.md"
MIN_INJECT, MAX_INJECT = 200, 10_000
DEPTHS = ("shallow", "medium")


class PluginSettingsError(ValueError):
    """The settings file exists but cannot be used."""


@dataclass(frozen=True, slots=True)
class PluginSettings:
    auto_context_on_start: bool = True
    detect_recall_patterns: bool = True
    prompt_to_save: bool = True
    context_depth: str = "medium"
    max_inject_chars: int = 2000

    @property
    def items(self) -> int:
        """Memories in a context block."""
        return 5 if self.context_depth == "shallow" else 10

    @property
    def preview_chars(self) -> int:
        return 160 if self.context_depth == "shallow" else 300

    @classmethod
    def from_mapping(cls, data: Any) -> PluginSettings:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise PluginSettingsError("frontmatter must be a mapping of settings")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(map(str, data)) - known)
        if unknown:
            raise PluginSettingsError(f"unknown setting(s) {unknown}; known: {sorted(known)}")
        out = cls()
        for key, value in data.items():
            expected = type(getattr(out, key))
            if expected is bool and not isinstance(value, bool):
                raise PluginSettingsError(f"{key} must be true or false, got {value!r}")
            if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
                raise PluginSettingsError(f"{key} must be a whole number, got {value!r}")
            if expected is str and not isinstance(value, str):
                raise PluginSettingsError(f"{key} must be text, got {value!r}")
            out = replace(out, **{key: value})
        if out.context_depth not in DEPTHS:
            raise PluginSettingsError(f"context_depth must be one of {DEPTHS}, "
                                      f"got {out.context_depth!r}")  # fmt: skip
        if not MIN_INJECT <= out.max_inject_chars <= MAX_INJECT:
            raise PluginSettingsError(f"max_inject_chars must be {MIN_INJECT}-{MAX_INJECT}, "
                                      f"got {out.max_inject_chars}")  # fmt: skip
        return out


def parse_settings_text(text: str) -> PluginSettings:
    """Settings from the file's text; raises PluginSettingsError when it cannot be used."""
    stripped = text.lstrip("\ufeff")
    if not stripped.startswith("---"):
        if stripped.strip():
            raise PluginSettingsError("no YAML frontmatter: the file must start with '---'")
        return PluginSettings()
    parts = stripped.split("\n")
    try:
        end = next(i for i, line in enumerate(parts[1:], 1) if line.strip() == "---")
    except StopIteration as exc:
        raise PluginSettingsError("frontmatter is not closed with a '---' line") from exc
    import yaml  # only when a settings file exists (~10 ms)

    try:
        data = yaml.safe_load("\n".join(parts[1:end]))
    except yaml.YAMLError as exc:
        raise PluginSettingsError(f"frontmatter is not valid YAML: {exc}") from exc
    except RecursionError:  # the parser recurses per level: deep nesting is a broken file
        raise PluginSettingsError("frontmatter nests too deeply to be settings") from None
    return PluginSettings.from_mapping(data)


def load_project_settings(project_dir: Path | None, stderr: TextIO | None = None) -> PluginSettings:
    """Settings of the project at ``project_dir``; defaults (with a note on stderr) if broken."""
    if project_dir is None:
        return PluginSettings()
    path = project_dir / SETTINGS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return PluginSettings()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"cortexgraph: cannot read {path} ({exc}); using default settings",
              file=stderr or sys.stderr)  # fmt: skip
        return PluginSettings()
    try:
        return parse_settings_text(text)
    except PluginSettingsError as exc:
        print(f"cortexgraph: {path}: {exc}; using default settings", file=stderr or sys.stderr)
        return PluginSettings()


__all__ = [
    "SETTINGS_FILE",
    "PluginSettings",
    "PluginSettingsError",
    "load_project_settings",
    "parse_settings_text",
]
