"""The topic of a recall request: what a search should look for once the asking is removed."""

from __future__ import annotations

import re

from cortexgraph.storage.text_index import STOP_WORDS

_RECALL_FILLER = frozenset(
    """what did do does you remember recall remind tell told say said decide decided discuss
    discussed mention mentioned agree agreed again know last time we i me my our us about
    regarding anything something note notes noted saved save memories previously before earlier
    ever already still can could please think talked talk bring pull up find look search
    check refresh memory why which who when where how was were is the name""".split()
)
_QUERY_WORD = re.compile(r"[\w][\w'+#.-]*[\w+#]|\w")


def suggested_query(text: str) -> str:
    """The topic of a recall request: filler and stop words removed, order kept."""
    words = []
    for raw in _QUERY_WORD.findall(text.replace("\u2019", "'")):
        word = re.sub(r"'s$", "", raw)
        if word.lower() not in STOP_WORDS and word.lower() not in _RECALL_FILLER:
            words.append(word)
    return " ".join(dict.fromkeys(words))


__all__ = ["suggested_query"]
