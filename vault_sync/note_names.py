"""Every name a vault note gets, decided here and nowhere else.

- A memory's note: its title (``note_name``: the first clause, compressed, led by an entity:
  "We chose PostgreSQL 16 for the billing service because it gives us row-level security" ->
  "PostgreSQL 16 for billing service"; filler and articles dropped, at most six words, never
  ending on "and"/"for"/...), the first sentence as its alias (Obsidian's search and link
  suggestions still find the note by its words; cut at a word past ``MAX_ALIAS_CHARS``), and
  its file name (``safe_filename``). The
  title is a pure function of the memory (content, entities, ``extra.title``), so it is stable
  across runs; the folder makes the file name unique (``unique_note_path``, ``FreeNames``).
- An entity's note: ``<folder>/entities/<entity_note_stem>.md``.
- A conflict copy (``conflict_note_path``), a note renamed from its legacy name
  (``is_legacy_name``), a note moved to the trash (``unique_note_path``).
- Which names a ``[[link]]`` opens (``names_in_vault``).

File names are safe on Linux, macOS and Windows, never empty and never a path.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import unicodedata
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cortexgraph.storage.models import Memory
from cortexgraph.vault_sync.errors import UnsafePathError
from cortexgraph.vault_sync.paths import ensure_inside, iter_markdown_files

NOTE_SUFFIX = ".md"
ENTITY_FOLDER = "entities"  # under the notes folder
CONFLICT_MARK = "cortexgraph conflict"

# -- titles ---------------------------------------------------------------------------------

MAX_WORDS = 6
MAX_CHARS = 60
LEGACY_MAX_CHARS = 80
# The alias holds the first sentence whole up to here: a sentence that runs for thousands of
# characters (a pasted log, a paragraph with no full stop) is cut, at a word, with "…".
MAX_ALIAS_CHARS = 200

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n")
# Where a first clause ends: punctuation, or a conjunction that starts the reason / the rest.
_CLAUSE_END = re.compile(
    r"\s*(?:[;!?]|:\s|,\s|\s[-–—]\s|\.\s|\.$)\s*|"
    r"\s+(?:because|since|so that|so|which|but|although|though|when|while|after|before|"
    r"until|unless|whereas|as of|instead of)\s+",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:(?:note|remember|fyi|update|reminder|decision|todo|important)\s*:\s*|"
    r"(?:we|i|they|you|our team|the team)\s+(?:have\s+|had\s+|will\s+|now\s+)?|"
    r"(?:remember|note)\s+that\s+|it\s+(?:is|was)\s+)",
    re.IGNORECASE,
)
_DROP = frozenset(
    "a an the our my your their its this these those just really very also currently".split()
)
# A title never ends on a word that needs a next one.
_DANGLING = frozenset(
    "a an the and or but nor of to for on in at by with from into as is are was "
    "were be been has have had that which who whose his her their our my "
    "your its than then via per".split()
)
_WORD = re.compile(r"[\w][\w'.+#/-]*[\w+#]|[\w]", re.UNICODE)


# Markdown a title or alias reads through: a code fence, a rule ("---", also a pasted
# frontmatter's), an HTML comment, a numbered or task list marker, a few HTML tags.
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE_LINE = re.compile(r"^ {0,3}([-*_=])(?:[ \t]*\1){2,}[ \t]*$")
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_STEP_MARKER = re.compile(r"^(?:\d{1,9}[.)]\s+|\[[ xX]\]\s+)+")
_HTML_TAG = re.compile(
    r"</?(?:a|b|i|u|s|em|strong|code|kbd|span|div|p|br|sup|sub|mark|del|ins|small|img|"
    r"details|summary|font|center)\b[^<>\n]*>",
    re.IGNORECASE,
)
_MD_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\([^()\s]*\)")


def _first_line(text: str) -> str:
    """The first line of prose: not in a code block, not a rule or a comment; the first line
    of code when the memory is nothing else."""
    text = _HTML_COMMENT.sub(" ", text)
    fence, code = "", ""
    for line in text.splitlines():
        opener = _FENCE_LINE.match(line)
        if fence:
            closes = (
                opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence)
            )
            if closes and not line.strip().strip(fence[0]):
                fence = ""
            elif line.strip() and not code:
                code = line
        elif opener:
            fence = opener.group(1)
        elif line.strip() and not _RULE_LINE.match(line):
            return line
    return code


def _first_sentence(text: str) -> str:
    """The first sentence of the first line of prose, markdown markers removed."""
    line = _first_line(text).strip().lstrip("#>*-+ ").strip()
    line = alias_text(_STEP_MARKER.sub("", line)).strip("*_`")
    return _SENTENCE_END.split(line, maxsplit=1)[0].strip()


def _first_clause(sentence: str) -> str:
    """Up to the first clause break; a short label before a colon ("Team norm: PR
    descriptions ...") keeps the clause after it too."""
    match = _CLAUSE_END.search(sentence)
    if match is None or not sentence[: match.start()].strip():
        return sentence.strip(" ,.;:")
    clause = sentence[: match.start()].strip(" ,.;:")
    if match.group(0).strip() == ":" and len(_WORD.findall(clause)) <= 3:
        rest = sentence[match.end() :]
        after = _CLAUSE_END.search(rest)
        rest = rest[: after.start()] if after else rest
        if rest.strip():
            clause = f"{clause}: {rest.strip(' ,.;:')}"
    return clause


def short_title(memory: Memory, max_words: int = MAX_WORDS, max_chars: int = MAX_CHARS) -> str:
    """A few words that say what the memory is about (see the module docstring)."""
    explicit = memory.meta.extra.get("title")
    if isinstance(explicit, str) and explicit.strip():
        return explicit.strip()
    sentence = _first_sentence(memory.content)
    clause = _first_clause(sentence)
    words = _WORD.findall(clause)
    trimmed = False
    if len(words) > max_words:  # a short clause is its own title, word for word
        clause, trimmed = _FILLER.sub("", clause, count=1).strip(), True
        words = _WORD.findall(clause) or words
        kept = [w for w in words if w.lower() not in _DROP] or words
        words = _lead_with_entity(kept, memory.entities)[:max_words]
        while len(words) > 1 and words[-1].lower() in _DANGLING:
            words.pop()
    elif not words:
        words = list(memory.entities[:1]) or [f"Memory {memory.id[:8]}"]
    title = " ".join(words).strip(" ,.;:-")
    if len(title) > max_chars:
        title = title[:max_chars].rsplit(" ", 1)[0].strip(" ,.;:-") or title[:max_chars]
    if not title:
        return f"Memory {memory.id[:8]}"
    return title[:1].upper() + title[1:] if trimmed else title


def _lead_with_entity(words: list[str], entities: tuple[str, ...]) -> list[str]:
    """Let an entity lead when only a verb stands before it ("chose PostgreSQL 16 ..." ->
    "PostgreSQL 16 ...")."""
    lowered = [w.lower() for w in words]
    for entity in entities:
        head = entity.split()[0].lower() if entity.split() else ""
        if len(words) > 1 and lowered[1] == head and words[0].islower():
            return words[1:]
    return words


def legacy_note_title(memory: Memory, max_chars: int = LEGACY_MAX_CHARS) -> str:
    """The title notes had before short titles: the first line, cut at ~80 characters with
    "…". Used to recognise notes named that way, so they can be renamed."""
    explicit = memory.meta.extra.get("title")
    if isinstance(explicit, str) and explicit.strip():
        return explicit.strip()
    first = next((line for line in memory.content.splitlines() if line.strip()), "")
    first = first.strip().lstrip("#>*-+ ").strip().strip("*_`")
    return _cut_at_word(first, max_chars) or f"Memory {memory.id[:8]}"


def _cut_at_word(text: str, max_chars: int) -> str:
    """``text``, or its first ``max_chars`` characters cut back to a word boundary (unless
    that loses over half of them) and "…" added: at most ``max_chars`` + 1 characters."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars].rsplit(" ", 1)[0]
    return (cut if len(cut) > max_chars // 2 else text[:max_chars]).rstrip(" ,.;:") + "…"


@dataclass(frozen=True, slots=True)
class NoteName:
    """What a memory's note is called: its title, the first sentence as its alias, and
    the file stem the title gives (before a folder makes it unique)."""

    title: str
    alias: str
    stem: str


# A wikilink or an embed in a sentence, for its label: an alias is a link's label when picked
# in Obsidian's suggestions ("[[note|alias]]"), and its own "]]" ended that link early.
_ALIAS_LINK = re.compile(r"!?\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]")


def alias_text(sentence: str) -> str:
    """``sentence`` as a note's alias: its wikilinks and embeds as their labels, no "[[" or
    "]]" left ("Use [[wikilinks]] sparingly" -> "Use wikilinks sparingly"), and as it reads:
    a markdown link as its text, no HTML tags, bold or code marks, no task box."""
    text = _ALIAS_LINK.sub(lambda m: m.group(2) or m.group(1), sentence)
    text = _MD_LINK.sub(lambda m: m.group(1), text.replace("[[", "").replace("]]", ""))
    text = _HTML_TAG.sub("", text).replace("**", "").replace("`", "")
    return _STEP_MARKER.sub("", text.strip()).strip()


def note_name(memory: Memory) -> NoteName:
    """The title, alias and file stem of ``memory``'s note (see the module docstring)."""
    title = short_title(memory)
    alias = _cut_at_word(alias_text(_first_sentence(memory.content)), MAX_ALIAS_CHARS - 1)
    return NoteName(title, alias or title, safe_filename(title))


def note_title(memory: Memory) -> str:
    """A short title: ``extra.title`` if set, else a few words from the first clause."""
    return short_title(memory)


def is_legacy_name(memory: Memory, stem: str) -> bool:
    """True if ``stem`` is the name the old titles gave ``memory`` (or it with a " N" suffix)."""
    legacy = safe_filename(legacy_note_title(memory))
    if legacy == safe_filename(short_title(memory)):
        return False
    suffix = stem[len(legacy) + 1 :]  # "<legacy> 2": a pattern compiled per note cost more
    return stem == legacy or (stem.startswith(legacy + " ") and suffix.isdecimal())


# -- file names -----------------------------------------------------------------------------

MAX_NAME_BYTES = 120  # of the stem; leaves room for " 99", ".md" and conflict suffixes under 255
# Windows forbids <>:"/\|?* and control characters; Obsidian links break on #^[]|.
_FORBIDDEN = re.compile(r'[<>:"/\\|?*#^\[\]\x00-\x1f\x7f]')
_SPACES = re.compile(r"\s+")
# Device names Windows opens instead of a file, whatever the extension ("nul.txt"), trailing
# spaces ("nul .md") or superscript digit ("COM¹": NFKC folds it to "COM1").
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)


def safe_filename(title: str, max_bytes: int = MAX_NAME_BYTES) -> str:
    """A file stem (no extension) for ``title``; unicode kept, never empty, never a path."""
    name = unicodedata.normalize("NFC", title or "")
    name = _FORBIDDEN.sub(" ", name)
    name = _SPACES.sub(" ", name).strip(" .-")  # leading dot hides; trailing dot/space: Windows
    name = _truncate_utf8(name, max_bytes).rstrip(" .-")
    if not name:
        return "untitled"
    head, dot, tail = name.partition(".")
    if unicodedata.normalize("NFKC", head).rstrip(" ").lower() in _WINDOWS_DEVICES:
        name = f"{head.rstrip(' ')}_{dot}{tail}"  # "nul.txt" -> "nul_.txt"
    return name


# "c#", "f#": the one forbidden character entity names often hold, spelled out, so their notes
# do not share "c" and "f" with the letters.
_SHARP = re.compile(r"(?<=\w)#")


@lru_cache(maxsize=4096)  # a run names the same few entities in thousands of notes
def entity_note_stem(entity: str) -> str:
    """The file stem of ``entity``'s note: its safe file name, unless making it safe dropped a
    character that tells it apart ("c#" would share "c" with "c"), then spelled out ("c sharp")
    or, failing that, marked with a short hash of the name ("a|b" -> "a b ~3f9c1e"). Two names
    that differ in any character other than spacing never share a note."""
    stem = safe_filename(entity)
    plain = _SPACES.sub(" ", unicodedata.normalize("NFC", entity or "")).strip(" .-")
    if stem == plain:
        return stem
    spelled = _SHARP.sub(" sharp", plain)
    if safe_filename(spelled) == spelled:
        return spelled
    digest = hashlib.sha1(plain.encode("utf-8")).hexdigest()[:6]
    return f"{safe_filename(entity, MAX_NAME_BYTES - 8)} ~{digest}"


class EntityStems:
    """The stem of each entity's note in one notes folder, kept per sink (the entities folder
    listed once): one note per entity whatever case it is written in, the name on disk
    winning ("sam" and "SAM" open and add to "Sam.md"). macOS and Windows see "Sam.md" and
    "sam.md" as one file (a vault synced there from Linux got a conflict), and Obsidian on
    Linux drew two nodes for one person; a memory naming both linked the entity twice.

    A new entity note never takes the name of a memory's note in the notes folder
    (``note_taken``; it is "<entity> (entity)" then), and a new memory's note never takes an
    entity note's (``taken``): a ``[[name]]`` two notes share opens one of them, and Obsidian
    picks the one in the linking note's folder, so the note "PostgreSQL" linked itself as its
    entity and the entity note listed itself as a mention."""

    def __init__(
        self, vault: Path, folder: Path, note_taken: Callable[[str], bool] | None = None
    ) -> None:
        self.vault = vault
        self.folder = folder
        self.note_taken = note_taken  # a memory note of the folder has this stem (any case)
        self._names: dict[str, str] | None = None  # entity's lower-cased stem -> its note's
        self._files: set[str] = set()  # the entity notes' stems, lower-cased

    def stem(self, entity: str) -> str:
        """The stem of ``entity``'s note (an existing note's, else ``entity_note_stem``)."""
        stem = entity_note_stem(entity)
        names, key = self.names(), stem.lower()
        found = names.get(key)
        if found is None:
            other = f"{stem} (entity)"
            if other.lower() not in names and not (self.note_taken and self.note_taken(key)):
                other = stem
            found = names[key] = names.get(other.lower(), other)
            self._files.add(found.lower())
        return found

    def taken(self) -> Collection[str]:
        """The entity notes' stems, lower-cased (those on disk and those given since)."""
        self.names()
        return self._files

    def names(self) -> dict[str, str]:
        if self._names is None:
            try:  # a folder linked out of the vault is not read (entity_notes skips it)
                listing = sorted(os.listdir(ensure_inside(self.vault, entity_folder(self.folder))))
            except (UnsafePathError, OSError):
                listing = []
            stems = (n[: -len(NOTE_SUFFIX)] for n in listing if n.lower().endswith(NOTE_SUFFIX))
            self._names = {}
            for stem in stems:
                self._names.setdefault(stem.lower(), stem)
            self._files = set(self._names)
        return self._names


def safe_folder(folder: str) -> Path:
    """A relative folder inside the vault; '..', absolute paths and drive letters are refused."""
    text = (folder or "").replace("\\", "/").strip()
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise UnsafePathError(f"the notes folder must be relative to the vault, got {folder!r}")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UnsafePathError(f"the notes folder must stay inside the vault, got {folder!r}")
    cleaned = [safe_filename(p) for p in parts]
    return Path(*cleaned) if cleaned else Path()


# -- where a note goes -----------------------------------------------------------------------


def unique_note_path(
    directory: Path,
    stem: str,
    *,
    taken: Collection[str] | None = None,
    reserved: Collection[str] = (),
) -> Path:
    """``directory/stem.md``, or ``stem 2.md``, ``stem 3.md``... if taken. Case-insensitive,
    because macOS and Windows file systems are. ``taken``: the folder's lower-cased names when
    the caller keeps them (else the folder is listed); ``reserved``: lower-cased stems another
    folder's notes have (EntityStems.taken)."""
    if taken is None:
        taken = _listing(directory).keys()
    candidate, n = stem, 2
    while note_file_name(candidate).lower() in taken or candidate.lower() in reserved:
        candidate, n = f"{stem} {n}", n + 1
    return directory / note_file_name(candidate)


class FreeNames:
    """Free note names, each folder listed once per sink (kept up to date as names are given,
    and each pick confirmed by one ``lexists``), not a listing per note.

    A long-lived sink (the MCP server's) outlives what it listed: a person renames or deletes
    notes in Obsidian. A name the listing holds is confirmed before it is skipped, and the
    folder listed again when one is gone, so a freed name is given again, not "<name> 2"."""

    def __init__(self) -> None:
        # folder -> its names, lower-cased (as macOS and Windows compare them) -> as listed
        self._taken: dict[Path, dict[str, str]] = {}

    def new_note_path(self, directory: Path, stem: str, reserved: Collection[str] = ()) -> Path:
        """A free name for ``stem`` in ``directory``, none of the ``reserved`` stems
        (lower-cased); recorded as taken."""
        taken = self._names(directory)
        while True:
            if self._freed(directory, stem, taken):
                taken = self._taken[directory] = _listing(directory)
            path = unique_note_path(directory, stem, taken=taken.keys(), reserved=reserved)
            taken[path.name.lower()] = path.name
            # Another process may have written it since our listing; a link (even a dangling
            # one) counts as taken, so the new note is never written through one.
            if not os.path.lexists(path):
                return path

    def holds(self, directory: Path, stem: str) -> bool:
        """A note of ``directory`` (as listed, and named since) has ``stem``, in any case."""
        return note_file_name(stem).lower() in self._names(directory)

    def _names(self, directory: Path) -> dict[str, str]:
        """The folder's names as listed once (and given since)."""
        taken = self._taken.get(directory)
        if taken is None:
            taken = self._taken[directory] = _listing(directory)
        return taken

    @staticmethod
    def _freed(directory: Path, stem: str, taken: dict[str, str]) -> bool:
        """One of the names a pick of ``stem`` would skip is gone since it was listed (one
        ``lexists`` per name skipped; the caller lists the folder again, case included)."""
        candidate, n = note_file_name(stem), 2
        while candidate.lower() in taken:
            if not os.path.lexists(directory / taken[candidate.lower()]):
                return True
            candidate, n = note_file_name(f"{stem} {n}"), n + 1
        return False


def _listing(directory: Path) -> dict[str, str]:
    try:
        return {entry.lower(): entry for entry in os.listdir(directory)}
    except FileNotFoundError:
        return {}


def conflict_note_path(original: Path, now: float) -> Path:
    """Where our version of a note a person edited goes: beside it, named after it and
    ``now`` ("Note (cortexgraph conflict 2025-06-15 170640).md")."""
    day = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%d %H%M%S")
    suffix = f" ({CONFLICT_MARK} {day})"
    # The note's name is cut, not the suffix: cut to the limit whole, a long title's copy
    # was "<title> 2.md", which does not say it is a copy.
    head = _truncate_utf8(original.stem, MAX_NAME_BYTES - len(suffix.encode("utf-8")))
    return unique_note_path(original.parent, safe_filename(head.rstrip(" .-") + suffix))


def note_file_name(stem: str) -> str:
    """The file name of the note called ``stem`` (what a ``[[stem]]`` link opens)."""
    return f"{stem}{NOTE_SUFFIX}"


def entity_folder(folder: Path) -> Path:
    """The folder of the entity notes, under the notes folder (relative to the vault)."""
    return folder / ENTITY_FOLDER


def entity_note_path(folder: Path, entity: str) -> Path:
    """``entity``'s note, relative to the vault."""
    return entity_folder(folder) / note_file_name(entity_note_stem(entity))


def names_in_vault(vault: Path) -> set[str]:
    """The lower-cased names of the vault's notes, as a ``[[name]]`` opens them (hidden
    folders such as .trash left out, as Obsidian leaves them out)."""
    return {p.stem.lower() for p in iter_markdown_files(vault)}


def _truncate_utf8(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


__all__ = [
    "CONFLICT_MARK",
    "ENTITY_FOLDER",
    "MAX_ALIAS_CHARS",
    "MAX_NAME_BYTES",
    "EntityStems",
    "FreeNames",
    "NoteName",
    "alias_text",
    "conflict_note_path",
    "entity_folder",
    "entity_note_path",
    "entity_note_stem",
    "is_legacy_name",
    "legacy_note_title",
    "names_in_vault",
    "note_file_name",
    "note_name",
    "note_title",
    "safe_filename",
    "safe_folder",
    "short_title",
    "unique_note_path",
]
