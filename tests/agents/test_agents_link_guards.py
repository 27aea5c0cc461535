"""The guards' verdicts of many pairs at once (``LinkGuard.reasons``) are the ones
``LinkGuard.reason`` gives pair by pair, whatever the guards' settings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from agents_helpers import NOW, add

from cortexgraph.agents.link_guards import LinkGuard
from cortexgraph.agents.merge_ops import PROVENANCE_KEY
from cortexgraph.storage.decay import DAY

_LINES = [
    "[1:56 pm on 8 May, 2023] Caroline: I went to the support group in Boston yesterday.",
    "[1:56 pm on 8 May, 2023] Melanie: Did you go to the support group in Boston?",
    "[1:56 pm on 8 May, 2023] Caroline: I went to the support group in Boston yesterday!",
    "[2:10 pm on 9 June, 2023] Caroline: I went to the support group in Boston yesterday.",
    "[2:10 pm on 9 June, 2023] Caroline: I went to a support group in Denver yesterday.",
    "Caroline: Was the group in Boston? Or in Denver? I forget.",
    "Caroline: The group meets at 7 pm on Tuesdays.",
    "The billing service runs on Postgres 16 in eu-west-1",
    "The billing service runs on Postgres 15 in eu-west-1",
    "The billing service runs on Postgres 16 in eu-west-1 since March",
    "Sam chose Redis for billing_runs (ticket 4411)",
    "Aisha chose Redis for billing_runs (ticket 4411)",
    "Does the billing service run on Postgres?",
    "Note: the billing service runs on Postgres 16",
]


def _memories(store, merged_at):
    out = [
        add(store, text, age_days=k % 4, entities=("Boston",) if "Boston" in text else ())
        for k, text in enumerate(_LINES)
    ]
    # Merges: one made after most of the others existed, one before all of them.
    for text, at in (
        ("The billing service runs on Postgres 16 (merged)", merged_at),
        ("Caroline: I went to the support group in Boston.", NOW - 10 * DAY),
    ):
        extra = {PROVENANCE_KEY: {"sources": [], "merged_at": at}}
        out.append(add(store, text, age_days=0.5, extra=extra))
    return out


@pytest.mark.parametrize("merged_at", [NOW - 2 * DAY, int(NOW - 2 * DAY), True])
@pytest.mark.parametrize(
    ("details", "restatements", "questions"),
    [
        (True, True, "most"),
        (True, True, "last"),
        (True, True, "off"),
        (False, True, "most"),
        (True, False, "most"),
        (False, False, "most"),
    ],
)
def test_the_verdicts_of_many_pairs_are_each_pairs_verdict(
    store, merged_at, details, restatements, questions
):
    memories = _memories(store, merged_at)
    guard = LinkGuard(memories, details=details, restatements=restatements, questions=questions)
    pairs = [(i, j) for i, j in itertools.permutations(range(len(memories)), 2)]
    i, j = (np.array(side, dtype=np.int64) for side in zip(*pairs, strict=True))
    batch = guard.reasons(i, j)
    fresh = LinkGuard(memories, details=details, restatements=restatements, questions=questions)
    assert batch == [fresh.reason(a, b) for a, b in pairs]
    if details and restatements and questions == "most" and merged_at is not True:
        assert set(batch) == {
            None,
            "merged before",
            "speakers",
            "question",
            "sessions",
            "numbers/names",
        }
