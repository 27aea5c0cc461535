"""Constants and helpers shared by the retrieval tests (uniquely named, unlike conftest.py)."""

from __future__ import annotations

from pathlib import Path

NOW = 1_700_000_000  # 2023-11-14
DAY = 86_400


def write_note(vault: Path, rel: str, body: str, **frontmatter: object) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    head = ""
    if frontmatter:
        lines = [
            f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in frontmatter.items()
        ]
        head = "---\n" + "\n".join(lines) + "\n---\n"
    path.write_text(head + body, encoding="utf-8")
    return path
