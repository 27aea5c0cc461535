"""What kind of repository a project is, for patterns limited by ``context_filters``.

Read from marker files at the project's root only (a dozen ``stat`` calls, no walk), so the
hook can afford it on every tool call. Several values may hold at once (a Python service with
a Dockerfile is ``language: python`` and ``repo_type: service``).

    language    python, typescript, javascript, rust, go, java, kotlin, ruby, php, csharp,
                elixir, swift
    repo_type   monorepo, service, infrastructure, docs, library
"""

from __future__ import annotations

from pathlib import Path

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


__all__ = ["LANGUAGE_MARKERS", "REPO_TYPE_MARKERS", "project_profile"]
