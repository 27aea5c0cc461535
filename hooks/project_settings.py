"""Per-project plugin settings: YAML frontmatter of ``.claude/cortexgraph.local.md`` (and of
the plugin spec's ``.claude/mnemograph.local.md``, applied before ours).

    ---
    auto_context_on_start: true
    detect_recall_patterns: true
    prompt_to_save: true
    context_depth: shallow     # shallow | medium
    max_inject_chars: 2000
    auto_commit: false         # commit the store's changes to its git repo at session end
    ask_running_server: true   # recall through the running MCP server's search when there is one
    ---

Values come, lowest first, from the defaults, the plugin's options (``userConfig`` in
plugin.json, which Claude Code hands to hooks as ``CLAUDE_PLUGIN_OPTION_<KEY>``), then this file.
Each key stands alone: a known key with a good value applies, an unknown key or a bad value is
named in a warning on stderr and the rest of the file still applies. Only a file that cannot
be read as settings at all (bad YAML, no frontmatter, not a mapping) means defaults, with why.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TextIO

SETTINGS_FILE = Path(".claude") / "cortexgraph.local.md"
# The plugin spec's name for the same file (mnemograph): read too, ours applied after it.
SPEC_SETTINGS_FILE = Path(".claude") / "mnemograph.local.md"
MIN_INJECT, MAX_INJECT = 200, 10_000
DEPTHS = ("shallow", "medium")
OPTION_PREFIX = "CLAUDE_PLUGIN_OPTION_"  # how Claude Code passes userConfig values to hooks
_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off", ""}


class PluginSettingsError(ValueError):
    """The settings file exists but cannot be used."""


@dataclass(frozen=True, slots=True)
class PluginSettings:
    auto_context_on_start: bool = True
    detect_recall_patterns: bool = True
    prompt_to_save: bool = True
    context_depth: str = "shallow"  # the plugin spec's default
    max_inject_chars: int = 2000
    auto_commit: bool = False
    # Ask the running MCP server's search first (cortexgraph.recall_endpoint).
    ask_running_server: bool = True

    @property
    def items(self) -> int:
        """Memories in a context block."""
        return 5 if self.context_depth == "shallow" else 10

    @property
    def preview_chars(self) -> int:
        return 160 if self.context_depth == "shallow" else 300

    @classmethod
    def from_mapping(cls, data: Any) -> PluginSettings:
        """Strict: the first problem raises (``apply_mapping`` applies what it can)."""
        out, problems = apply_mapping(cls(), data)
        if problems:
            raise PluginSettingsError(problems[0])
        return out


def _problem(key: str, value: Any, base: PluginSettings) -> str | None:
    expected = type(getattr(base, key))
    if expected is bool and not isinstance(value, bool):
        return f"{key} must be true or false, got {value!r}"
    if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
        return f"{key} must be a whole number, got {value!r}"
    if expected is str and not isinstance(value, str):
        return f"{key} must be text, got {value!r}"
    if key == "context_depth" and value not in DEPTHS:
        return f"context_depth must be one of {DEPTHS}, got {value!r}"
    if key == "max_inject_chars" and not MIN_INJECT <= value <= MAX_INJECT:
        return f"max_inject_chars must be {MIN_INJECT}-{MAX_INJECT}, got {value}"
    return None


def apply_mapping(base: PluginSettings, data: Any) -> tuple[PluginSettings, list[str]]:
    """``base`` with every known, valid key of ``data`` applied, and a line per key that was
    not (unknown, with the closest known name; or a bad value, which keeps ``base``'s)."""
    if data is None:
        return base, []
    if not isinstance(data, dict):
        raise PluginSettingsError("frontmatter must be a mapping of settings")
    known = [f.name for f in fields(PluginSettings)]
    out, problems = base, []
    for key, value in data.items():
        name = str(key)
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else f"; known: {sorted(known)}"
            problems.append(f"unknown setting {name!r} ignored{hint}")
            continue
        problem = _problem(name, value, base)
        if problem:
            problems.append(f"{problem}; keeping {getattr(out, name)!r}")
            continue
        out = replace(out, **{name: value})
    return out, problems


def plugin_options(environ: Mapping[str, str]) -> tuple[PluginSettings, list[str]]:
    """The plugin-wide values the user gave when enabling the plugin (userConfig)."""
    data: dict[str, Any] = {}
    for f in fields(PluginSettings):
        raw = environ.get(OPTION_PREFIX + f.name.upper())
        if raw is None:
            continue
        text = raw.strip()
        if isinstance(f.default, bool):
            low = text.lower()
            data[f.name] = True if low in _TRUE else False if low in _FALSE else text
        elif isinstance(f.default, int):
            data[f.name] = int(text) if text.lstrip("-").isdigit() else text
        else:
            data[f.name] = text
    return apply_mapping(PluginSettings(), data)


def parse_settings_text(text: str) -> PluginSettings:
    """Settings from the file's text, strictly: raises PluginSettingsError on any problem
    (the hooks use ``load_project_settings``, which applies what it can)."""
    return PluginSettings.from_mapping(frontmatter(text))


def frontmatter(text: str) -> Any:
    """The parsed YAML frontmatter (None when there is none); PluginSettingsError if broken."""
    stripped = text.lstrip("\ufeff")
    if not stripped.startswith("---"):
        if stripped.strip():
            raise PluginSettingsError("no YAML frontmatter: the file must start with '---'")
        return None
    parts = stripped.split("\n")
    try:
        end = next(i for i, line in enumerate(parts[1:], 1) if line.strip() == "---")
    except StopIteration as exc:
        raise PluginSettingsError("frontmatter is not closed with a '---' line") from exc
    import yaml  # only when a settings file exists (~10 ms)

    try:
        return yaml.safe_load("\n".join(parts[1:end]))
    except yaml.YAMLError as exc:
        raise PluginSettingsError(f"frontmatter is not valid YAML: {exc}") from exc
    except RecursionError:  # the parser recurses per level: deep nesting is a broken file
        raise PluginSettingsError("frontmatter nests too deeply to be settings") from None


def load_project_settings(
    project_dir: Path | None, stderr: TextIO | None = None, environ: Mapping[str, str] | None = None
) -> PluginSettings:
    """Defaults < plugin options < the project's file; each problem named on stderr."""
    err = stderr or sys.stderr
    base, problems = plugin_options(os.environ if environ is None else environ)
    for problem in problems:
        print(f"cortexgraph: plugin option {problem}", file=err)
    if project_dir is None:
        return base
    settings = base
    for name in (SPEC_SETTINGS_FILE, SETTINGS_FILE):  # both may exist: ours wins
        settings = _apply_file(settings, project_dir / name, err)
    return settings


def _apply_file(base: PluginSettings, path: Path, err: TextIO) -> PluginSettings:
    """``base`` with the file's settings applied (``base`` when it is missing or unusable)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return base
    except (OSError, UnicodeDecodeError) as exc:
        print(f"cortexgraph: cannot read {path} ({exc}); using default settings", file=err)
        return base
    try:
        settings, problems = apply_mapping(base, frontmatter(text))
    except PluginSettingsError as exc:
        print(f"cortexgraph: {path}: {exc}; using default settings", file=err)
        return base
    for problem in problems:
        print(f"cortexgraph: {path}: {problem}", file=err)
    return settings


__all__ = [
    "OPTION_PREFIX",
    "SETTINGS_FILE",
    "SPEC_SETTINGS_FILE",
    "PluginSettings",
    "PluginSettingsError",
    "apply_mapping",
    "frontmatter",
    "load_project_settings",
    "parse_settings_text",
    "plugin_options",
]
