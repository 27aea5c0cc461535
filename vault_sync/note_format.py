"""The one note format every promotion path writes, and a frontmatter reader that never crashes.

A note is YAML frontmatter (written with python-frontmatter, keys in a fixed order) and a body:
the title, the memory's content, its context, and a "Related" list of ``[[wikilinks]]``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from cortexgraph.storage.models import Memory
from cortexgraph.vault_sync.frontmatter_yaml import load_frontmatter_yaml
from cortexgraph.vault_sync.note_body import (
    FRONTMATTER_CLOSE,
    FRONTMATTER_OPEN,
    RELATED_BLOCK,
    RELATED_END,
    RELATED_START,
)
from cortexgraph.vault_sync.note_names import alias_text

if TYPE_CHECKING:
    from cortexgraph.vault_sync.note_names import NoteName

NOTE_FORMAT_VERSION = "2.0"
# The frontmatter keys cortexgraph owns; every other key belongs to the person and is kept.
OWN_FIELDS = (
    "id",
    "title",
    "created",
    "updated",
    "promoted_at",
    "tags",
    "entities",
    "source",
    "strength",
    "use_count",
    "promotion_reason",
    "aliases",
    "cortexgraph",
)
MERGED_LIST_FIELDS = ("tags", "aliases")  # a person's additions to these survive updates
_TAG_BAD = re.compile(r"[^\w/-]+", re.UNICODE)
_TEMPLATE = re.compile(r"\{\{[^{}\n]*\}\}")
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
# In one line of markdown: link brackets, tag / heading '#', block-id '^', HTML '<', and a
# backslash that would escape the next character (CommonMark escapes ASCII punctuation only).
_MD_SPECIAL = re.compile(r"[\[\]#^<]|\\(?=[!-/:-@\[-`{-~])")
_LABEL_BREAKERS = re.compile(r"[\[\]|]")  # end a wikilink or start a second label
try:
    _Dumper: Any = yaml.CSafeDumper  # what python-frontmatter writes with
except AttributeError:  # pragma: no cover - libyaml missing
    _Dumper = yaml.SafeDumper


@dataclass(frozen=True, slots=True)
class LinkTarget:
    """One entry of a note's Related section: a wikilink to another note."""

    stem: str  # the linked note's file name without .md (what Obsidian resolves)
    label: str = ""
    kind: str = "memory"  # memory | entity | merged (a merged source; no stem: no note)
    relation_type: str | None = None

    def wikilink(self) -> str:
        label = link_label(self.label)
        if label and label != self.stem:
            return f"[[{self.stem}|{label}]]"
        return f"[[{self.stem}]]"


@dataclass(frozen=True, slots=True)
class RenderedNote:
    title: str
    metadata: Mapping[str, Any]
    body: str

    def text(self) -> str:
        return note_text(self.metadata, self.body)


@dataclass(frozen=True, slots=True)
class ParsedNote:
    metadata: Mapping[str, Any] = field(default_factory=dict)
    body: str = ""
    frontmatter_error: str | None = None
    has_frontmatter: bool = False


def markdown_text(text: str) -> str:
    """``text`` as one line of markdown that reads as itself (a heading of a name): line
    breaks become spaces; brackets, '#', '^', '<' and escaping backslashes are escaped."""
    flat = _LINE_BREAKS.sub(" ", text)
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), flat)


def link_label(text: str) -> str:
    """``text`` as the label of a ``[[stem|label]]`` link: no bracket or pipe, one line."""
    return " ".join(_LABEL_BREAKERS.sub(" ", _LINE_BREAKS.sub(" ", text)).split())


def note_text(metadata: Mapping[str, Any], body: str) -> str:
    """The note file: python-frontmatter's layout (``---``, YAML block, ``---``, blank line,
    body), byte for byte, with the YAML from :func:`yaml_block`."""
    return f"---\n{yaml_block(metadata)}\n---\n\n{body}\n".strip() + "\n"


def yaml_block(metadata: Mapping[str, Any]) -> str:
    """``metadata`` as python-frontmatter writes it (block style, unicode, keys in order).

    The nodes are built here for the plain JSON-like values a note holds, as PyYAML's
    SafeRepresenter would build them, and emitted by the same C emitter: the same bytes in half
    the time (the generic representer was most of a promoted note's YAML cost). Anything else
    (another type, a list or mapping met twice, which YAML would anchor) goes through
    ``yaml.dump`` itself."""
    try:
        node = _node(dict(metadata), set())
        text = yaml.serialize(node, Dumper=_Dumper, allow_unicode=True)
    except _NotPlain:
        text = yaml.dump(
            dict(metadata),
            Dumper=_Dumper,
            default_flow_style=False,
            allow_unicode=True,
            sort_keys=False,
        )
    return text.strip().replace("\r\n", "\n")


class _NotPlain(Exception):
    """A value the fast node builder leaves to yaml.dump."""


_STR, _INT, _FLOAT = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_BOOL, _NULL = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"
_SEQ, _MAP = "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"


def _node(value: Any, seen: set[int]) -> yaml.Node:
    kind = type(value)  # exact types only, as SafeRepresenter dispatches
    if kind is str:
        return yaml.ScalarNode(_STR, value)
    if value is None:
        return yaml.ScalarNode(_NULL, "null")
    if kind is bool:
        return yaml.ScalarNode(_BOOL, "true" if value else "false")
    if kind is int:
        return yaml.ScalarNode(_INT, str(value))
    if kind is float and value == value and abs(value) != float("inf"):
        text = repr(value).lower()
        if "." not in text and "e" in text:
            text = text.replace("e", ".0e", 1)
        return yaml.ScalarNode(_FLOAT, text)
    if kind is list or kind is dict:
        if id(value) in seen:
            raise _NotPlain
        seen.add(id(value))
        if kind is list:
            return yaml.SequenceNode(_SEQ, [_node(v, seen) for v in value], flow_style=False)
        pairs = [(_node(k, seen), _node(v, seen)) for k, v in value.items()]
        return yaml.MappingNode(_MAP, pairs, flow_style=False)
    raise _NotPlain


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(float(ts), dt.UTC).replace(microsecond=0).isoformat()


def related_block(links: Sequence[LinkTarget]) -> str:
    """The managed list of the Related section: later runs rewrite only what lies between the
    markers, so a person's text around it is never touched."""
    lines = []
    for link in links:
        if link.kind == "merged" and not link.stem:
            lines.append(f"- merged from: {markdown_text(link.label)}")
            continue
        note = f" ({link.relation_type})" if link.relation_type else ""
        note = " (entity)" if link.kind == "entity" and not note else note
        lines.append(f"- {link.wikilink()}{note}")
    return RELATED_START + "\n" + "\n".join(lines) + ("\n" if lines else "") + RELATED_END


def replace_related_block(body: str, block: str) -> str | None:
    """``body`` with its managed Related list replaced by ``block``; None without markers.
    The list is the last one: render_note ends the note with it, after the memory's text,
    which may hold a pasted one."""
    found = next(reversed(list(RELATED_BLOCK.finditer(body))), None)
    if found is None:
        return None
    return body[: found.start()] + block + body[found.end() :]


def obsidian_tag(tag: str) -> str | None:
    """A tag as Obsidian accepts it: no '#', no spaces, not only digits; None if nothing is left."""
    text = _TAG_BAD.sub("-", tag.strip().lstrip("#").replace(" ", "-")).strip("-/")
    text = re.sub(r"-{2,}", "-", text)
    if not text or text.replace("/", "").isdigit():
        return None
    return text


# A code fence (CommonMark): up to three spaces, three or more backticks or tildes, and after
# a backtick fence an info string without backticks.
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


def close_code_block(text: str) -> str:
    """``text`` with the code block it leaves open closed. An unclosed fence runs to the end of
    the document, so a memory cut off inside a snippet made the note's own Context and Related
    sections code, and their links left Obsidian's graph."""
    opened: tuple[str, str] | None = None  # its indent and fence
    for line in text.splitlines():
        match = _FENCE.match(line)
        if match is None:
            continue
        indent, fence, rest = match.groups()
        if opened is None:
            if not (fence[0] == "`" and "`" in rest):
                opened = (indent, fence)
        elif fence[0] == opened[1][0] and len(fence) >= len(opened[1]) and not rest.strip():
            opened = None
    return text if opened is None else f"{text}\n{opened[0]}{opened[1]}"


def unique_tags(tags: Iterable[str]) -> list[str]:
    """``tags`` once each, the first spelling kept: Obsidian's tags are case-insensitive, so
    "Billing" and "billing" were one tag shown twice in the note's Properties."""
    seen: dict[str, str] = {}
    for tag in tags:
        seen.setdefault(tag.casefold(), tag)
    return list(seen.values())


def render_note(
    memory: Memory,
    name: NoteName,
    *,
    links: Sequence[LinkTarget] = (),
    reason: str = "",
    now: float,
    version: str = NOTE_FORMAT_VERSION,
) -> RenderedNote:
    """Frontmatter and body of the long-term note for ``memory``, called ``name``
    (``vault_sync.note_names.note_name``)."""
    title = name.title
    tags = unique_tags(t for t in (obsidian_tag(x) for x in memory.tags) if t)
    metadata: dict[str, Any] = {
        "id": memory.id,
        "title": title,
        "created": iso(memory.created_at),
        "updated": iso(now),
        "promoted_at": iso(memory.promoted_at or now),
        "tags": tags,
        "entities": list(memory.entities),
        "source": memory.meta.source,
        "strength": round(float(memory.strength), 4),
        "use_count": int(memory.use_count),
        "promotion_reason": reason or None,
        # The first sentence (cut if very long): Obsidian's search and link suggestions find
        # the note by it.
        "aliases": [a for a in [name.alias] if a],
        "cortexgraph": {"version": version},
    }
    content = close_code_block(memory.content.strip())
    first_line = content.splitlines()[0].lstrip("#> ").strip() if content else ""
    # A heading only when it adds something: a title cut from the first line would repeat it.
    parts = [content] if title.rstrip("…") and first_line.startswith(title.rstrip("…")) else []
    parts = parts or [f"# {markdown_text(title)}", content]
    if memory.meta.context and memory.meta.context.strip():
        parts.append("## Context\n\n" + close_code_block(memory.meta.context.strip()))
    if links:
        parts.append("## Related\n\n" + related_block(links))
    return RenderedNote(title=title, metadata=metadata, body="\n\n".join(parts) + "\n")


def merge_metadata(existing: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """Our fields (in our order) updated, a person's extra keys and list additions kept."""
    merged: dict[str, Any] = dict(ours)
    for key in MERGED_LIST_FIELDS:
        # "tags: a, b" and "aliases: Deploy day" are lists to Obsidian too: read as one
        # string, they were replaced by ours and the person's lost.
        theirs = metadata_list(existing, key, sep="," if key == "aliases" else r"[,\s]+")
        if key == "aliases":  # an older version's alias of ours is replaced, not kept
            own: list[str] = merged.get(key, [])
            theirs = [a for a in theirs if not _uncut(a, own) and not _linked(a, own)]
        if theirs and key == "tags":
            merged[key] = unique_tags([*merged.get(key, []), *theirs])
        elif theirs:
            merged[key] = list(dict.fromkeys([*merged.get(key, []), *theirs]))
    for key, value in existing.items():
        if key not in merged:
            merged[key] = value
    return merged


def _uncut(alias: str, ours: Sequence[str]) -> bool:
    """``alias`` is the whole first sentence one of ``ours`` was cut from: an older version
    wrote it uncut (note_names.MAX_ALIAS_CHARS), and ours replaces it."""
    return any(o.endswith("…") and len(alias) > len(o) and alias.startswith(o[:-1]) for o in ours)


def _linked(alias: str, ours: Sequence[str]) -> bool:
    """``alias`` is one of ``ours`` with the markup an older version kept in it (wikilinks
    that ended a link picked by it early, bold or code marks: note_names.alias_text)."""
    return alias not in ours and alias_text(alias) in ours


def parse_note_text(text: str) -> ParsedNote:
    """Split frontmatter from body. Broken YAML is reported, never raised: the whole text is
    then the body so nothing the person wrote is lost."""
    opened = FRONTMATTER_OPEN.match(text)
    if not opened:
        return ParsedNote(body=text.lstrip("\ufeff"))
    close = FRONTMATTER_CLOSE.search(text, opened.end())
    if close is None:
        return ParsedNote(body=text, frontmatter_error="frontmatter is not closed with '---'")
    raw = text[opened.end() : close.start()]
    body = text[close.end() :].lstrip("\r\n")
    try:
        data = load_frontmatter_yaml(raw)
    except (yaml.YAMLError, ValueError) as exc:
        # Obsidian templates hold unquoted {{placeholders}}; read them as the strings they are.
        quoted = _TEMPLATE.sub(lambda m: "'" + m.group(0).replace("'", "''") + "'", raw)
        try:
            data = load_frontmatter_yaml(quoted) if quoted != raw else None
        except (yaml.YAMLError, ValueError):
            data = None
        if data is None:
            return ParsedNote(body=text, frontmatter_error=f"invalid YAML: {_one_line(exc)}")
    if data is None:
        return ParsedNote(body=body, has_frontmatter=True)
    if not isinstance(data, Mapping):
        return ParsedNote(
            body=text, frontmatter_error=f"frontmatter is a {type(data).__name__}, not a mapping"
        )
    return ParsedNote(metadata=json_safe(data), body=body, has_frontmatter=True)


def parse_note_file(path: Path) -> ParsedNote:
    """The note at ``path`` parsed for rewriting (OSError propagates). Text that is not UTF-8
    (an editor saving cp1252) is read as broken frontmatter is: written back as UTF-8 it would
    garble what the person wrote, so it is left untouched."""
    try:
        return parse_note_text(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        return ParsedNote(frontmatter_error=f"not UTF-8 ({exc.reason} at byte {exc.start})")


def json_safe(value: Any) -> Any:
    """YAML values as JSON values: dates become ISO strings, odd keys become strings."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def body_checksum(body: str) -> str:
    """Checksum of a note body, insensitive to line endings and trailing blank lines."""
    # The managed Related list is ours to update: changing it is not a person's edit.
    normal = RELATED_BLOCK.sub(RELATED_START, body.replace("\r\n", "\n")).strip()
    return hashlib.blake2b(normal.encode("utf-8"), digest_size=16).hexdigest()


def metadata_list(metadata: Mapping[str, Any], key: str, sep: str = r"[,\s]+") -> list[str]:
    """A frontmatter field as a list of strings, whatever shape a person gave it
    ('tags: a, b' and 'tags: a b' are lists too; pass ``sep=","`` for aliases)."""
    value = metadata.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [p.strip() for p in re.split(sep, value) if p.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]


__all__ = [
    "NOTE_FORMAT_VERSION",
    "OWN_FIELDS",
    "RELATED_END",
    "RELATED_START",
    "LinkTarget",
    "ParsedNote",
    "RenderedNote",
    "body_checksum",
    "close_code_block",
    "iso",
    "json_safe",
    "link_label",
    "markdown_text",
    "merge_metadata",
    "metadata_list",
    "note_text",
    "obsidian_tag",
    "parse_note_file",
    "parse_note_text",
    "related_block",
    "render_note",
    "replace_related_block",
    "unique_tags",
    "yaml_block",
]
