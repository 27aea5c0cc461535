"""What kind of repository a project is, for patterns limited by ``context_filters``.

Read from marker files at the project's root only (a dozen ``stat`` calls, no walk), so the
hook can afford it on every tool call. Several values may hold at once (a Python service with
a Dockerfile is ``language: python`` and ``repo_type: service``).

    language    python, typescript, javascript, rust, go, java, kotlin, ruby, php, csharp,
                elixir, swift
    repo_type   monorepo, service, infrastructure, docs, library
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cortexgraph.storage.errors import InvalidInputError

LANGUAGE_MARKERS: dict[str, tuple[str, ...]] = {
    "python": ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile"),
    "typescript": ("tsconfig.json",),
    "javascript": ("package.json",),
    "rust": ("Cargo.toml",),
    "go": ("go.mod",),
    "java": ("pom.xml", "build.gradle"),
    "kotlin": ("build.gradle.kts",),
    "ruby": ("Gemfile",),
    "php": ("composer.json",),
    "elixir": ("mix.exs",),
    "swift": ("Package.swift",),
}
REPO_TYPE_MARKERS: dict[str, tuple[str, ...]] = {
    "monorepo": (
        "pnpm-workspace.yaml",
        "lerna.json",
        "nx.json",
        "turbo.json",
        "go.work",
        "rush.json",
    ),
    "service": (
        "Dockerfile",
        "docker-compose.yml",
        "docker-compose.yaml",
        "compose.yaml",
        "Procfile",
    ),
    "infrastructure": ("main.tf", "terragrunt.hcl", "Chart.yaml", "Pulumi.yaml"),
    "docs": ("mkdocs.yml", "docusaurus.config.js", "book.toml"),
}


def project_profile(project_dir: Path | None) -> dict[str, frozenset[str]]:
    """``{"language": {...}, "repo_type": {...}}``; empty sets when nothing is recognised."""
    if project_dir is None or not project_dir.is_dir():
        return {}

    def has(names: tuple[str, ...]) -> bool:
        return any((project_dir / n).exists() for n in names)

    languages = {lang for lang, names in LANGUAGE_MARKERS.items() if has(names)}
    if any(project_dir.glob("*.csproj")) or any(project_dir.glob("*.sln")):
        languages.add("csharp")
    kinds = {kind for kind, names in REPO_TYPE_MARKERS.items() if has(names)}
    if languages and not kinds & {"service", "infrastructure", "docs"}:
        kinds.add("library")
    return {"language": frozenset(languages), "repo_type": frozenset(kinds)}


# The behaviour-monitor spec's context object (seed 004: ``query_pattern_history(signature,
# context: Dict)``): a name for the ledger, and the project's kind as ``context_filters`` read it.
NAME_KEYS = ("context", "project", "repo")
PROFILE_KEYS = ("repo_type", "language")
MAX_CONTEXT_CHARS = 200


def read_context(
    value: str | Mapping[str, Any] | None,
) -> tuple[str | None, dict[str, frozenset[str]] | None]:
    """``(ledger context, profile)`` from a context name or the spec's context object.

    ``{"context": "project:shop"}`` is that name; ``{"project": "shop"}`` (or ``repo``) is
    ``project:shop``, as the hook names a project; ``repo_type`` and ``language`` (a name or a
    list) are a profile, matched against the patterns' ``context_filters``. Another key is
    refused, naming these five, rather than dropped.
    """
    if value is None or isinstance(value, str):
        return value, None
    unknown = sorted(str(k) for k in value if k not in NAME_KEYS + PROFILE_KEYS)
    if unknown:
        raise InvalidInputError(
            f"context takes a name or an object with {', '.join(NAME_KEYS + PROFILE_KEYS)}; "
            f"got {unknown}"
        )
    named = [k for k in NAME_KEYS if value.get(k) not in (None, "")]
    if len(named) > 1:
        raise InvalidInputError(f"context names one of {', '.join(NAME_KEYS)}, got {named}")
    name: str | None = None
    if named:
        raw = value[named[0]]
        if not isinstance(raw, str):
            raise InvalidInputError(f"context.{named[0]} must be text, got {raw!r}")
        name = raw if named[0] == "context" else f"project:{raw}"
        if len(name) > MAX_CONTEXT_CHARS:
            raise InvalidInputError(f"context name longer than {MAX_CONTEXT_CHARS} characters")
    profile: dict[str, frozenset[str]] = {}
    for key in PROFILE_KEYS:
        raw = value.get(key)
        if raw is None:
            continue
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise InvalidInputError(f"context.{key} must be a name or a list of names")
        profile[key] = frozenset(i.strip().lower() for i in items if i.strip())
    return name, profile or None


__all__ = ["LANGUAGE_MARKERS", "REPO_TYPE_MARKERS", "project_profile", "read_context"]
