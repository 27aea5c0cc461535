"""A note's words as a reader takes them in, without parsing YAML (a hook pays for every import).

A note cortexgraph wrote ends in a managed Related list (``note_format.related_block``): links
for Obsidian's graph, not something the note says. Recalled into a prompt or a context block it
spent the budget on link names: in `cortexgraph context` a promoted decision with seven links
used about half of its line on "Related - Fact 1 about billing service (related) - Billing
(entity) ...". ``reading_text`` is the body without it; everything a person wrote stays.
"""

from __future__ import annotations

import re

FRONTMATTER_OPEN = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
FRONTMATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)  # \r: CRLF notes
RELATED_START = "<!-- cortexgraph:related -->"
RELATED_END = "<!-- /cortexgraph:related -->"
# Each marker on a line of its own, as related_block writes them: a memory's text that quotes
# one (a note pasted into a memory, a memory about this format) is not the managed list.
RELATED_BLOCK = re.compile(
    rf"^{re.escape(RELATED_START)}[ \t]*\r?\n(?:(?!{re.escape(RELATED_START)}).)*?"
    rf"^{re.escape(RELATED_END)}[ \t]*(?=\r?$)",
    re.DOTALL | re.MULTILINE,
)
# The managed list with the heading render_note puts right above it.
_RELATED_SECTION = re.compile(
    r"(?:^#{1,6}[ \t]+Related[ \t]*\r?\n\s*)?" + RELATED_BLOCK.pattern, re.DOTALL | re.MULTILINE
)
_FIRST_HEADING = re.compile(r"\A\s*#[ \t]+([^\n]*)(?:\n|\Z)")
_LINK = re.compile(r"\[\[([^\]|]+)(?:\|([^\]]+))?\]\]")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}\s+", re.MULTILINE)


def body_of(text: str) -> str:
    """The text after a closed frontmatter block (all of it when there is none)."""
    opened = FRONTMATTER_OPEN.match(text)
    if not opened:
        return text.lstrip("\ufeff")
    close = FRONTMATTER_CLOSE.search(text, opened.end())
    return text if close is None else text[close.end() :].lstrip("\r\n")


def reading_text(body: str, title: str = "") -> str:
    """``body`` (markdown, no frontmatter) as one line, without the managed Related list, and
    without a first heading that only repeats ``title`` (render_note writes one when the
    title is not the start of the memory's text)."""
    heading = _FIRST_HEADING.match(body)
    if title and heading and heading.group(1).strip().rstrip("#").strip() == title.strip():
        body = body[heading.end() :]
    return plain_text(_RELATED_SECTION.sub(" ", body))


def plain_text(markdown: str) -> str:
    """One line, as a reader sees it: no comments, link brackets or heading markers."""
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), _COMMENT.sub(" ", markdown))
    return " ".join(_HEADING.sub("", text).split())


__all__ = [
    "FRONTMATTER_CLOSE",
    "FRONTMATTER_OPEN",
    "RELATED_BLOCK",
    "RELATED_END",
    "RELATED_START",
    "body_of",
    "plain_text",
    "reading_text",
]
