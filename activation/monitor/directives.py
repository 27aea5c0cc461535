"""The user's own rules: CLAUDE.md files parsed into directives, matched to a detected pattern.

A directive is one bullet (with its continuation lines) or one paragraph, remembered with the
headings above it. Matching is keyword first (stemmed terms shared with the pattern's keywords,
name and the detection; a pattern keyword counts double), and, when an embedder is given,
blended with cosine similarity; the result says which method produced it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortexgraph.activation.monitor.calls import short_hash
from cortexgraph.storage.text_index import tokenize

MAX_DIRECTIVE_CHARS = 400
MAX_IMPORT_DEPTH = 3
MIN_KEYWORD_SCORE = 1.5
# MiniLM cosine of a pattern's keywords to a related rule is ~0.3-0.5, to an unrelated one <0.15.
MIN_COSINE = 0.3
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_IMPORT = re.compile(r"^@(\S+)$")
_MD = re.compile(r"[*_`]+")


@dataclass(frozen=True, slots=True)
class Directive:
    id: str
    text: str
    section: str  # "Testing › CI", or "" at the top of the file
    source: str  # the file it came from
    scope: str  # "project" | "home" | "local"
    line: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "section": self.section,
            "source": self.source,
            "scope": self.scope,
            "line": self.line,
        }


@dataclass(frozen=True, slots=True)
class DirectiveMatch:
    directive: Directive
    score: float
    method: str  # "keyword" | "keyword+embedding"
    matched_terms: tuple[str, ...]


def _clean(text: str) -> str:
    return " ".join(_MD.sub("", text).split())[:MAX_DIRECTIVE_CHARS]


def parse_directives(
    text: str, source: str = "CLAUDE.md", scope: str = "project"
) -> list[Directive]:
    """Bullets and paragraphs of a markdown file, each with its heading path."""
    out: list[Directive] = []
    headings: list[str] = []
    current: list[str] = []
    start = 0
    in_fence = False
    in_comment = False

    def flush() -> None:
        body = _clean(" ".join(current))
        if len(body) >= 3:
            section = " › ".join(h for h in headings if h)
            out.append(
                Directive(
                    f"{scope}-{short_hash(section + body)[:8]}", body, section, source, scope, start
                )
            )
        current.clear()

    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if in_comment or line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            continue
        if m := _HEADING.match(line):
            flush()
            level = len(m.group(1))
            headings = [
                *headings[: level - 1],
                *[""] * max(0, level - 1 - len(headings)),
                _clean(m.group(2)),
            ]
            continue
        if not line.strip() or _IMPORT.match(line.strip()):
            flush()
            continue
        if m := _BULLET.match(line):
            flush()
            current.append(m.group(2))
            start = no
            continue
        if not current:
            start = no
        current.append(line.strip())
    flush()
    return out


def imports_of(text: str) -> list[str]:
    """``@path`` lines outside code fences (Claude Code's import syntax)."""
    found, in_fence = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (m := _IMPORT.match(line.strip())):
            found.append(m.group(1))
    return found


def load_directives(files: Iterable[tuple[str, Path]], home: Path | None = None) -> list[Directive]:
    """Directives of every existing (scope, path), following ``@imports`` a few levels deep."""
    out: list[Directive] = []
    seen: set[Path] = set()

    def visit(scope: str, path: Path, depth: int) -> None:
        try:
            resolved = path.expanduser().resolve()
            if resolved in seen or not resolved.is_file():
                return
            seen.add(resolved)
            text = resolved.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        out.extend(parse_directives(text, str(path), scope))
        if depth < MAX_IMPORT_DEPTH:
            for ref in imports_of(text):
                target = Path(home, ref[2:]) if ref.startswith("~/") and home else Path(ref)
                visit(
                    scope, target if target.is_absolute() else resolved.parent / target, depth + 1
                )

    for scope, path in files:
        visit(scope, path, 0)
    return out


def claude_md_files(project_dir: Path | None, home: Path | None) -> list[tuple[str, Path]]:
    """Where Claude Code reads memory files: the user's, then the project's (both kept)."""
    files: list[tuple[str, Path]] = []
    if home is not None:
        files.append(("home", home / ".claude" / "CLAUDE.md"))
    if project_dir is not None:
        files += [
            ("project", project_dir / "CLAUDE.md"),
            ("project", project_dir / ".claude" / "CLAUDE.md"),
            ("local", project_dir / "CLAUDE.local.md"),
        ]
    return files


def query_terms(keywords: Sequence[str], context: str) -> dict[str, float]:
    """Stemmed query terms with weights: a pattern keyword 2, a word of the context 1."""
    weights: dict[str, float] = {}
    for term in tokenize(context):
        weights[term] = 1.0
    for term in tokenize(" ".join(keywords)):
        weights[term] = 2.0
    return weights


def keyword_score(terms: dict[str, float], directive: Directive) -> tuple[float, tuple[str, ...]]:
    dterms = set(tokenize(f"{directive.text} {directive.section}"))
    shared = tuple(sorted(t for t in terms if t in dterms))
    raw = sum(terms[t] for t in shared)
    # Long directives share words by chance: damp by length, gently.
    return raw / (1.0 + 0.25 * math.log1p(len(dterms))), shared


def match_directives(
    directives: Sequence[Directive],
    keywords: Sequence[str],
    context: str,
    *,
    description: str = "",
    embedder: Any = None,
    limit: int = 1,
) -> list[DirectiveMatch]:
    """Best directives for a pattern (its ``keywords``) seen in ``context`` (the loop's text).

    ``description`` (the pattern's name and description) is what gets embedded. ``embedder`` is
    optional (anything with ``embed(texts) -> L2-normalised rows``); without it,
    or when it fails, matching is keyword-only and says so.
    """
    if not directives:
        return []
    terms = query_terms(keywords, context)
    scored = [(d, *keyword_score(terms, d)) for d in directives]
    cosines: list[float] | None = None
    if embedder is not None:
        try:
            # The pattern's prose embeds closer to a rule than its keyword list does.
            query = f"{description or ' '.join(keywords)}. {context}"
            vecs = embedder.embed([query, *(f"{d.section}: {d.text}" for d in directives)])
            cosines = [float(vecs[0] @ v) for v in vecs[1:]]
        except Exception:  # a model failure falls back to keywords, labelled
            cosines = None
    out: list[DirectiveMatch] = []
    for i, (d, kw, shared) in enumerate(scored):
        if cosines is None:
            if kw >= MIN_KEYWORD_SCORE:
                out.append(DirectiveMatch(d, round(kw, 3), "keyword", shared))
            continue
        blended = 0.5 * kw / (kw + 2.0) + 0.5 * max(0.0, cosines[i])
        if kw >= MIN_KEYWORD_SCORE or cosines[i] >= MIN_COSINE:
            out.append(DirectiveMatch(d, round(blended, 3), "keyword+embedding", shared))
    out.sort(key=lambda m: (-m.score, m.directive.scope != "project", m.directive.line))
    return out[:limit]


__all__ = [
    "Directive",
    "DirectiveMatch",
    "claude_md_files",
    "imports_of",
    "keyword_score",
    "load_directives",
    "match_directives",
    "parse_directives",
]
