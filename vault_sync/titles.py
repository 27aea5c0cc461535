"""Short, meaningful note titles without an LLM: the first clause, compressed, led by an entity.

"We chose PostgreSQL 16 for the billing service because it gives us row-level security" ->
"PostgreSQL 16 for billing service" (filler and articles dropped, at most six words, never
ending on "and"/"for"/...). The title is a pure function of the memory (content,
entities, ``extra.title``), so it is stable across runs; the folder makes it unique
(``paths.unique_note_path``). The full first sentence becomes the note's alias, so Obsidian's
search and link suggestions still find the note by its words.
"""

from __future__ import annotations

import re

from cortexgraph.storage.models import Memory

MAX_WORDS = 6
MAX_CHARS = 60
LEGACY_MAX_CHARS = 80

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


def first_sentence(text: str) -> str:
    """The first sentence of the first non-empty line, markdown markers removed."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = line.strip().lstrip("#>*-+ ").strip().strip("*_`")
    return _SENTENCE_END.split(line, maxsplit=1)[0].strip()


def first_clause(sentence: str) -> str:
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
    sentence = first_sentence(memory.content)
    clause = first_clause(sentence)
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
    if len(first) > max_chars:
        cut = first[:max_chars].rsplit(" ", 1)[0]
        first = (cut if len(cut) > max_chars // 2 else first[:max_chars]).rstrip(" ,.;:") + "…"
    return first or f"Memory {memory.id[:8]}"


__all__ = ["first_clause", "first_sentence", "legacy_note_title", "short_title"]
