"""Links and tags of one note's markdown, with obsidiantools' own extractors.

obsidiantools renders every note to HTML (about 5 ms a note) before extracting links; here code
is stripped with two regexes instead and its extractors run on the rest, which keeps a cold index
of 10k notes in seconds. Its nested-tag pattern keeps trailing punctuation ("#a/b." -> "a/b."),
so tags use Obsidian's own rule (preceded by whitespace, not only digits). obsidiantools prints
to stdout on bad YAML; it is never handed frontmatter here, so nothing reaches the MCP channel.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any


@functools.cache
def _obsidiantools_wikilinks() -> Callable[..., Any] | None:
    """obsidiantools' link extractor, imported on first use: the package imports pandas (about
    0.8 s of a process's start here), which a process that never reads a note's links (a CLI
    command, the MCP server until a vault search) should not pay. A private helper: if a
    release renames it, the fallback regex in ``wikilinks`` takes over."""
    try:
        from obsidiantools.md_utils import _get_unique_wikilinks_from_source_text
    except ImportError:  # pragma: no cover
        return None
    return _get_unique_wikilinks_from_source_text  # type: ignore[no-any-return]


_FENCED = re.compile(r"^(```|~~~)[^\n]*\n.*?(?:^\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_WIKILINK = re.compile(r"(!)?\[\[([^\]]+)\]\]")
_TAG = re.compile(r"(?:(?<=\s)|^)#([\w/-]*[^\W\d][\w/-]*)", re.UNICODE | re.MULTILINE)


def strip_code(text: str) -> str:
    """The text without fenced code blocks, inline code and HTML comments."""
    return _INLINE_CODE.sub(" ", _FENCED.sub("\n", _HTML_COMMENT.sub(" ", text)))


def wikilinks(text: str) -> list[str]:
    """Unique link targets in order, aliases and headings removed ('[[A#h|x]]' -> 'A');
    embeds ('![[img.png]]') are not links."""
    src = strip_code(text)
    extract = _obsidiantools_wikilinks()
    if extract is not None:
        try:
            links = extract(src, remove_aliases=True, exclude_canvas=True)
            return [link.strip() for link in links if link.strip()]
        except Exception:  # a library bug must not stop indexing
            pass
    out: list[str] = []
    for bang, inner in _WIKILINK.findall(src):
        if bang:
            continue
        target = inner.replace("\\", "").split("|")[0].split("#", 1)[0].strip()
        target = target.removesuffix(".md")
        if target and target not in out:
            out.append(target)
    return out


def inline_tags(text: str) -> list[str]:
    """``#tag`` and nested ``#a/b`` tags outside code, without the '#', unique, in order."""
    src = _WIKILINK.sub(" ", strip_code(text))
    out: list[str] = []
    for tag in _TAG.findall(src):
        tag = tag.strip("/-")
        if tag and tag not in out:
            out.append(tag)
    return out


def first_heading(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip() or None
    return None


__all__ = ["first_heading", "inline_tags", "strip_code", "wikilinks"]
