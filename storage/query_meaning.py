"""What the vectors compare of a query and of a line (storage.search's dense side).

- The names in a query: the phrases the entity index matches exactly. Search boosts the
  memories that hold them, and leaves the names out of the text it embeds for the question:
  "What does Melanie enjoy?" asks what she enjoys. A memory's vector holds its speaker's name
  ("Melanie: ...") and names in the text saved beside it, so the name drew the question toward
  her thank-yous and toward lines that address her.
- A line's own words: a memory's vector is its content with the text saved beside it, so a
  short line saved after a long message has a vector mostly about that message. The best hits
  are compared by their content alone too, and keep the better cosine.

Measured on LoCoMo dev (multi-hop, issue 34): docs/retrieval.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cortexgraph.storage.models import Memory
from cortexgraph.storage.protocol import OwnWordsScorer

_ENTITY_WORD_RE = re.compile(r"[\w][\w'.+#-]*", re.UNICODE)


def names_in_query(
    ids_by_entity: Mapping[str, set[str]], query: str
) -> tuple[set[str], list[tuple[int, int]]]:
    """(ids of memories with an entity the query names, where those names are in the query:
    character spans). Names are 1-3 word phrases; words are compared lower-cased, without edge
    punctuation or a 's."""
    words = []
    for m in _ENTITY_WORD_RE.finditer(query):
        token = m.group().lower().strip("'.-").removesuffix("'s")
        if token:
            words.append((token, m.start(), m.end()))
    hits: set[str] = set()
    spans: list[tuple[int, int]] = []
    if not ids_by_entity:
        return hits, spans
    for n in (1, 2, 3):
        for i in range(len(words) - n + 1):
            ids = ids_by_entity.get(" ".join(w[0] for w in words[i : i + n]))
            if ids:
                hits |= ids
                spans.append((words[i][1], words[i + n - 1][2]))
    return hits, spans


def without_names(query: str, spans: Sequence[tuple[int, int]]) -> str:
    """The query less the names in ``spans`` (the whole query if nothing else is left)."""
    if not spans:
        return query
    cut = bytearray(len(query))
    for start, end in spans:
        cut[start:end] = b"\x01" * (end - start)
    rest = "".join(ch for ch, gone in zip(query, cut, strict=True) if not gone)
    rest = " ".join(rest.split())
    return rest if any(ch.isalnum() for ch in rest) else query


def own_words_gains(
    memories: Mapping[str, Memory],
    scorer: OwnWordsScorer,
    query: str,
    relevance: Mapping[str, float],
    dense: dict[str, float],
    top_k: int,
    embed_limit: int | None,
) -> list[str]:
    """A line is compared with the query by its own words too, not only with the text ranked
    beside it: "I'm off to go swimming with the kids" saved after a long message about a book
    has a vector mostly about the book. Of the best ``top_k`` hits with a ranking context, each
    takes the better of the two cosines (``dense``, in place); returns the ids that gained.
    The scorer embeds at most ``embed_limit`` of the contents it lacks (None: all of them)."""
    ranked = sorted(relevance, key=lambda i: -relevance[i])
    pool = [memories[i] for i in ranked if i in dense and memories[i].ranking_context][:top_k]
    own = scorer.content_scores(query, pool, embed_limit)
    gained = [i for i, cosine in own.items() if cosine > dense[i]]
    for i in gained:
        dense[i] = own[i]
    return gained


__all__ = ["names_in_query", "own_words_gains", "without_names"]
