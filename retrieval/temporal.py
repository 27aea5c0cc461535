"""Temporal truth: a newer memory supersedes an older one about the same subject and attribute.

The old memory is never deleted. It gets ``meta.extra["valid_until"]`` (unix seconds) and
``["superseded_by"]`` (the new id), and a ``superseded_by`` relation old -> new. Retrieval then
prefers the current fact and shows the old one only as history.

Detection is deterministic and deliberately narrow (see docs/context.md for its limits):

    update cue    the caller says the message updates something (activation's UPDATE_INFO
                  intent, or ``has_update_cue`` below), and
    same subject  the two memories share an entity, and
    same attribute they fall in the same attribute class (where someone lives, what a team
                  uses, ...) or share two content words beyond the entities; or the new one
                  names a shared entity as the replaced value ("instead of MySQL", "not Go")
                  and they share another entity, an attribute class or one content word.

An explicit ``supersedes=[ids]`` on save skips detection.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cortexgraph.retrieval.core import resolve_memory_id
from cortexgraph.storage.errors import InvalidInputError, RelationNotFoundError
from cortexgraph.storage.indexed_store import IndexedStore
from cortexgraph.storage.models import RELATION_TYPES, Memory, Relation
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.save_order import newest_first
from cortexgraph.storage.text_index import tokenize

SUPERSEDED_BY = "superseded_by"
# Until storage accepts the relation type, the link is stored as "contradicts" with this kind.
_FALLBACK_TYPE = "contradicts"
MAX_CANDIDATES = 200  # memories sharing an entity that are compared; the newest win

# A fact said to have changed. Bare "now", "actually", "changed" or "updated" are everyday
# conversation ("I'm now so ready for the weekend", "that changed my life") and superseded
# four in five LoCoMo turns; only constructions that state a change count (precision on the
# labelled set in tests/fixtures/supersession_labelled.jsonl: bench/supersession_bench.py).
UPDATE_CUES = re.compile(
    r"\b(?:instead of|rather than|no longer|from now on|scratch that|after all|took over|"
    r"handed (?:\w+ )?over)\b"
    r"|(?:\b(?:not|never|no)\b|n't\b)[^.;!?]{0,40}\bany ?more\b"
    r"|\b(?:switched|switching|moved|moving|migrated|migrating|relocated|relocating|changed|"
    r"upgraded|downgraded|replaced|replacing|renamed|transferred)\b[^.;!?]{0,40}?"
    r"\b(?:from|to|with|into)\b"
    r"|(?:\b(?:is|are|am)|'s|'re|'m)\s+now\b"
    r"|\bnow\s+(?:uses?|using|lives?|living|works?|working|runs?|running|has|have|prefers?|"
    r"happens?|starts?|costs?|at|on)\b"
    r"|^\s*(?:update|correction)\s*[:,-]",
    re.IGNORECASE,
)

# "instead of X", "not X", "from X to", "replaced X", "rather than X": X is the old value.
REPLACED_VALUE = re.compile(
    r"\b(?:instead of|rather than|not|no longer|replaced|replacing|from)\s+(?:the\s+|our\s+|my\s+)?"
    r"([\w.+#-]+(?:\s[\w.+#-]+)?)",
    re.IGNORECASE,
)

# Words that name what a fact is about; two memories in the same class describe one attribute.
ATTRIBUTE_CLASSES: dict[str, frozenset[str]] = {
    "location": frozenset(
        "office located live lives living lived move moved moving moves relocate relocated "
        "relocating based home house apartment flat city country address "
        "reside resides".split()
    ),
    "work": frozenset(
        "work works working worked job role position employer company team "
        "joined hired promoted manager owner owns lead leads handed".split()
    ),
    "tooling": frozenset(
        "use uses using used switched switch migrated migrate database db "
        "stack framework language library tool tools runs run running "
        "deploy deployed hosted host server version upgraded written write implemented built "
        "rewrite rewritten".split()
    ),
    "preference": frozenset(
        "prefer prefers preferred like likes love loves favourite "
        "favorite hate hates enjoy enjoys drink drinks eat eats "
        "vegetarian vegan diet".split()
    ),
    "schedule": frozenset(
        "monday tuesday wednesday thursday friday saturday sunday mondays "
        "tuesdays wednesdays thursdays fridays weekly daily schedule "
        "meeting meetings deadline freeze date starts due".split()
    ),
    "endpoint": frozenset("port url host endpoint address domain ip".split()),
    "quantity": frozenset(
        "price cost budget target salary rent size limit quota gb mb revenue".split()
    ),
}
# Words of the change itself: shared by an update and its old fact, they prove nothing.
_CUE_WORDS = frozenset(
    "now instead rather longer anymore more switched switching switch moved moving move "
    "migrated migrating relocated relocating changed change upgraded downgraded replaced "
    "replacing renamed transferred update updated correction actually after took over".split()
)
_PLAIN_WORD = re.compile(r"[\w.+#-]*\w")
_ATTRIBUTE_WORDS = frozenset().union(*ATTRIBUTE_CLASSES.values())
_STOP = frozenset(
    "a an the and or but of to in on at for with by from is are was were be been being it its "
    "this that these those we our us i my me you your he she his her they their them not no "
    "now then than so as just also still very all any some do does did has have had will "
    "would can could should about after before instead into over".split()
)


@dataclass(frozen=True, slots=True)
class SupersedeMatch:
    old_id: str
    new_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class SupersedeOutcome:
    old: Memory
    relation: Relation


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


def has_update_cue(text: str) -> bool:
    """A statement that a fact changed ("moved from Paris to London", "instead of MySQL",
    "no longer vegetarian", "is now 8000"); a question ("any more paintings?") is not one."""
    return any(
        UPDATE_CUES.search(s) and not s.rstrip().endswith("?") for s in _SENTENCE.findall(text)
    )


_NEW_VALUE = re.compile(
    r"\b(?:to|into|with)\s+(?:the\s+|our\s+|my\s+)?([\w.+#-]+(?:\s[\w.+#-]+)?)", re.IGNORECASE
)


def _value_forms(phrase: str) -> set[str]:
    words = phrase.lower().split()
    return {words[0].strip(".,;"), " ".join(words).strip(".,;")}


def replaced_values(text: str) -> set[str]:
    """Lower-cased one- and two-word phrases the text says were replaced."""
    out: set[str] = set()
    for m in REPLACED_VALUE.finditer(text):
        words = m.group(1).lower().split()
        out.add(words[0].strip(".,;"))
        out.add(" ".join(words).strip(".,;"))
    return out


def attribute_classes(text: str) -> set[str]:
    words = set(re.findall(r"[a-z]+", text.lower()))
    return {name for name, vocab in ATTRIBUTE_CLASSES.items() if words & vocab}


def _content_words(memory: Memory) -> set[str]:
    entity_words = {w for e in memory.entities for w in tokenize(e)}
    words = set(tokenize(memory.content)) - entity_words
    return {w for w in words if w not in _STOP and len(w) > 2 and w not in _CUE_WORDS}


def is_superseded(memory: Memory) -> bool:
    return memory.meta.extra.get("superseded_by") is not None


def find_superseded(
    store: IndexedStore, new: Memory, *, update_cue: bool, exclude: Iterable[str] = ()
) -> list[SupersedeMatch]:
    """Older current memories that ``new`` updates (empty without an update cue)."""
    if not update_cue or not new.entities:
        return []
    skip = {new.id, *exclude}
    candidate_ids: set[str] = set()
    for entity in new.entities:
        candidate_ids |= store.ids_with_entity(entity)
    candidates = [m for i in candidate_ids - skip if (m := store.find(i)) is not None]
    candidates = [m for m in candidates if m.created_at <= new.created_at and _current(m)]
    candidates = newest_first(store, candidates)  # "the newest": the later of one second's
    new_entities = {e.lower() for e in new.entities}
    new_attrs = attribute_classes(new.content)
    new_words = _content_words(new) - _ATTRIBUTE_WORDS
    replaced = replaced_values(new.content) - _STOP
    # The attribute the change itself names: "relocated to" is where someone is.
    cue_attrs = set().union(
        *(attribute_classes(m.group(0)) for m in UPDATE_CUES.finditer(new.content))
    )
    # What it changed *to* is the new value, not the subject: "Sarah moved to Rome" says
    # nothing about Tom, who lives in Rome.
    new_values = {v for m in _NEW_VALUE.finditer(new.content) for v in _value_forms(m.group(1))}
    cue_attrs |= attribute_classes(" ".join(new_values))  # "moved to port 8081": an endpoint
    matches: list[tuple[int, SupersedeMatch]] = []
    for old in candidates[:MAX_CANDIDATES]:
        shared = sorted(new_entities & {e.lower() for e in old.entities})
        if not set(shared) - new_values:
            continue
        old_words = set(_PLAIN_WORD.findall(old.content.lower())) | {
            e.lower() for e in old.entities
        }
        attrs = sorted(new_attrs & attribute_classes(old.content))
        words = sorted(new_words & (_content_words(old) - _ATTRIBUTE_WORDS))
        # The value the update says it replaced ("instead of MySQL", "from Paris", "not Go")
        # is in the old fact, about a subject they share.
        old_values = sorted(replaced & old_words)
        subjects = sorted(set(shared) - set(old_values))
        if old_values and (subjects or attrs or words):
            tier, why = (
                0,
                (f"replaces {', '.join(old_values)} ({', '.join(subjects + attrs + words)[:80]})"),
            )
        elif cue_attrs & set(attrs) or (attrs and words and not cue_attrs):
            # The attribute the change names ("relocated" -> location) is the one they share;
            # a change of something else ("switched the dogs' food") leaves "loves the park".
            tier, why = (
                1,
                (
                    f"same subject ({', '.join(shared)}), attribute "
                    f"({', '.join(attrs)}) and words ({', '.join(words[:4])})"
                ),
            )
        elif len(words) >= 2:
            tier, why = 2, f"same subject ({', '.join(shared)}) and words ({', '.join(words[:4])})"
        else:
            continue
        matches.append((tier, SupersedeMatch(old.id, new.id, why)))
    # A stated change replaces one fact: the newest of the best-matching kind. (Every match
    # used to be replaced: one chatty update superseded dozens of a person's memories.)
    return [min(matches, key=lambda tm: tm[0])[1]] if matches else []


def _current(memory: Memory) -> bool:
    extra = memory.meta.extra
    return not is_superseded(memory) and not extra.get("deprecated")


def relation_type_for_supersede() -> str:
    return SUPERSEDED_BY if SUPERSEDED_BY in RELATION_TYPES else _FALLBACK_TYPE


def supersede(
    store: MemoryStore,
    old_id: str,
    new_id: str,
    *,
    reason: str = "explicit",
    now: float | None = None,
) -> SupersedeOutcome:
    """Close the old memory's validity at ``now`` and link it to its successor."""
    if old_id == new_id:
        raise InvalidInputError("a memory cannot supersede itself")
    ts = int(time.time() if now is None else now)
    old, new = store.get(old_id), store.get(new_id)
    if new.meta.extra.get("superseded_by") == old.id:
        raise InvalidInputError(f"{new.id} is itself superseded by {old.id}; refusing a cycle")
    extra = dict(old.meta.extra)
    extra.update(valid_until=ts, superseded_by=new.id, superseded_reason=reason)
    updated = store.update(old.id, extra=extra)
    relation = store.add_relation(
        old.id,
        new.id,
        relation_type_for_supersede(),
        strength=1.0,
        metadata={"kind": SUPERSEDED_BY, "reason": reason, "valid_until": ts},
        now=ts,
    )
    return SupersedeOutcome(updated, relation)


def record_update(
    store: IndexedStore,
    new: Memory,
    *,
    update_cue: bool,
    supersedes: Sequence[str] = (),
    now: float | None = None,
) -> list[SupersedeOutcome]:
    """After saving ``new``: supersede the ids given, or the ones detection finds."""
    if supersedes:
        matches = [SupersedeMatch(i, new.id, "explicit") for i in dict.fromkeys(supersedes)]
    else:
        matches = find_superseded(store, new, update_cue=update_cue)
    ts = new.created_at if now is None else now
    return [supersede(store, m.old_id, m.new_id, reason=m.reason, now=ts) for m in matches]


@dataclass(frozen=True, slots=True)
class SaveUpdate:
    """What a save changed in temporal truth: how an update was recognised, what it replaced."""

    update_cue: str
    superseded: tuple[SupersedeOutcome, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "update_cue": self.update_cue,
            "superseded": [
                {"memory_id": o.old.id, "reason": o.old.meta.extra.get("superseded_reason")}
                for o in self.superseded
            ],
        }


def after_save(
    store: IndexedStore,
    memory: Memory,
    supersedes: Sequence[str] | None = None,
    *,
    auto_supersede: bool = True,
) -> SaveUpdate:
    """Temporal truth for a just-saved memory. ``supersedes`` given (even empty) is the
    caller's word (ids or 8+ character prefixes); omitted, a stated change of a shared
    subject's fact is detected (precise by construction; ``auto_supersede=False``, from
    CORTEXGRAPH_AUTO_SUPERSEDE, skips it)."""
    if supersedes is not None:
        ids = [resolve_memory_id(store, i) for i in supersedes]
        if not ids:
            return SaveUpdate("none (supersedes=[] given)")
        outcomes = record_update(store, memory, update_cue=True, supersedes=ids)
        return SaveUpdate("explicit supersedes", tuple(outcomes))
    if not auto_supersede:
        return SaveUpdate("off (CORTEXGRAPH_AUTO_SUPERSEDE=false)")
    if not has_update_cue(memory.content):
        return SaveUpdate("no stated change")
    return SaveUpdate("stated change", tuple(record_update(store, memory, update_cue=True)))


def restore(store: MemoryStore, memory_id: str) -> Memory:
    """Undo a supersede or deprecation: the memory is current again, its links removed."""
    memory = store.get(memory_id)
    extra = {
        k: v
        for k, v in memory.meta.extra.items()
        if k not in {"valid_until", "superseded_by", "superseded_reason", "deprecated"}
    }
    for rel in store.relations(memory_id):
        if rel.from_memory_id == memory_id and rel.metadata.get("kind") == SUPERSEDED_BY:
            with contextlib.suppress(RelationNotFoundError):  # another process removed it first
                store.delete_relation(rel.id)
    return store.update(memory_id, extra=extra)


def history_of(store: MemoryStore, memory_id: str, limit: int = 20) -> list[Memory]:
    """The chain of memories this one replaced, newest first (follows superseded_by links)."""
    chain: list[Memory] = []
    frontier = [memory_id]
    seen = {memory_id}
    while frontier and len(chain) < limit:
        current = frontier.pop(0)
        for rel in store.relations(current):
            if rel.to_memory_id == current and rel.metadata.get("kind") == SUPERSEDED_BY:
                old = store.find(rel.from_memory_id)
                if old is not None and old.id not in seen:
                    seen.add(old.id)
                    chain.append(old)
                    frontier.append(old.id)
    return newest_first(store, chain)[:limit]


__all__ = [
    "ATTRIBUTE_CLASSES",
    "SUPERSEDED_BY",
    "SaveUpdate",
    "SupersedeMatch",
    "SupersedeOutcome",
    "after_save",
    "attribute_classes",
    "find_superseded",
    "has_update_cue",
    "history_of",
    "is_superseded",
    "record_update",
    "relation_type_for_supersede",
    "restore",
    "supersede",
]
