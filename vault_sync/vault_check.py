"""`cortexgraph vault check`: what in the vault needs a person's attention."""

from __future__ import annotations

from dataclasses import dataclass

from cortexgraph.vault_sync.ltm_index import LTMIndex


@dataclass(frozen=True, slots=True)
class CheckIssue:
    path: str
    kind: str  # broken-frontmatter | broken-link | conflict-copy | duplicate-id | truncated
    detail: str


def check_vault(index: LTMIndex) -> list[CheckIssue]:
    """Problems found in an (already refreshed) index, sorted by path then kind."""
    issues: list[CheckIssue] = []
    owners: dict[str, list[str]] = {}
    for r in index.notes.values():
        if r.frontmatter_error:
            issues.append(CheckIssue(r.path, "broken-frontmatter", r.frontmatter_error))
        if r.conflict_of is not None:
            issues.append(
                CheckIssue(
                    r.path,
                    "conflict-copy",
                    f"cortexgraph's newer version of memory {r.conflict_of}; merge it by hand "
                    "into the original note, then delete this copy",
                )
            )
        if r.truncated:
            issues.append(CheckIssue(r.path, "truncated", "indexed from its first megabyte"))
        if r.memory_id and r.conflict_of is None:
            owners.setdefault(r.memory_id, []).append(r.path)
    issues.extend(
        CheckIssue(path, "broken-link", f"[[{target}]] opens no note")
        for path, target in index.broken_links()
    )
    for memory_id, paths in owners.items():
        if len(paths) > 1:
            issues.extend(
                CheckIssue(p, "duplicate-id", f"id {memory_id} is also in {', '.join(paths)}")
                for p in paths
            )
    return sorted(issues, key=lambda i: (i.path, i.kind, i.detail))


__all__ = ["CheckIssue", "check_vault"]
