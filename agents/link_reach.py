"""Which candidate pairs the cluster detector judges: all of them, or those a scope can reach.

A candidate pair goes through four sieves (agents.cluster_detector): the guards' verdict
(``LinkGuard.reason``; a pair refused as a restatement stays only near the relate bar), the
similarity of each text's own vector at the lower of the link and relate bars, the cap on each
memory's pairs (``strongest_per_row``: a pair stays while it is among the ``per_row``
strongest of either member), and then its kind: a link (no verdict, at the link bar) or a
related pair (a restatement verdict, at the relate bar).

An incremental run keeps only the clusters and related pairs that hold a changed memory.
Complete linkage grows groups along links alone, and the related pairs are capped per memory
along related pairs alone, so those outcomes depend only on the *reach* of the changed
memories: the memories joined to them by links and related pairs, however far. Pairs are
judged from the changed memories outward instead of all at once (55,382 verdicts for 100
changed memories among 2,142 neighbours, 0.29 s; the reach judged ~1/10 of them):

- a memory in the reach has every pair of its own judged and checked, since its cap rank
  counts all its stronger pairs that pass the first two sieves;
- a pair beyond its member's cap stays when it is within the other member's cap, so that
  member's pairs are judged too (it joins the reach only if the pair links or relates);
- the memories that kept links and related pairs reach join, until none is new.

A memory's ranks depend on its own pairs and their order alone (``row_ranks``), so every pair
touching the reach gets the verdict, similarity, cap and kind the all-at-once sieve gives it,
and the reach's clusters and related pairs are the same. With every memory as a seed (a full
run), everything is judged once, in one round.

The candidate pairs themselves are still found for every row at once (one symmetric product
of the neighbourhood, agents.neighbours). Finding a row's pairs only when the sieve explores
it was tried at 10k +100 and saved nothing: a pair is found when either member ranks it among
its strongest, so an explored row needs the products of the partners its own cut left out
(529 for the first 100 rows; 777 rows of 2,142 in all), and those rows, multiplied in ~20
rounds (each packing the whole matrix again), cost as much as the symmetric product, which
computes half of every row (thread CPU 92.7 against 94.3 ms a ``_links``, the same pairs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from cortexgraph.agents.cluster_grouping import row_ranks
from cortexgraph.agents.link_guards import RESTATEMENT_REASONS
from cortexgraph.agents.neighbours import NeighbourPairs

# A pair's reason not to link (None: it may), asked by the members' rows.
Reason = Callable[[int, int], "str | None"]
# The reasons of many pairs at once (rows ``i[k]`` and ``j[k]``), in order.
Reasons = Callable[[np.ndarray, np.ndarray], "list[str | None]"]
# The similarities of the given candidate pairs (positions in ``found``) on each text's own
# vector: the ones that found them when those are the texts' own.
OwnSimilarity = Callable[[np.ndarray], np.ndarray]
_REFUSED, _ALLOWED, _RESTATED = 0, 1, 2  # a judged pair's kind of verdict
_KINDS = {None: _ALLOWED} | dict.fromkeys(RESTATEMENT_REASONS, _RESTATED)


@dataclass(frozen=True, slots=True)
class Bars:
    link: float  # an allowed pair links at this similarity
    relate: float  # a restatement-refused pair relates at this one
    margin: float  # how far the finding vectors may sit below a pair's own
    per_row: int  # each memory's strongest pairs kept (strongest_per_row)


@dataclass(frozen=True, slots=True)
class Sifted:
    """The pairs that pass the sieves (checked similarity, found order) with their verdicts;
    the refusals counted on the pairs judged."""

    pairs: NeighbourPairs
    verdicts: list[str | None]
    refused: Counter[str]
    judged: int


def pairwise(reason: Reason) -> Reasons:
    """``reason`` asked of each pair in turn."""

    def reasons(i: np.ndarray, j: np.ndarray) -> list[str | None]:
        return [reason(a, b) for a, b in zip(i.tolist(), j.tolist(), strict=True)]

    return reasons


def sift(
    found: NeighbourPairs,
    n: int,
    reasons: Reasons,
    own: OwnSimilarity,
    bars: Bars,
    seeds: np.ndarray | None = None,
) -> Sifted:
    """The pairs of ``found`` (over ``n`` rows) that pass the sieves and touch the reach of
    ``seeds`` (row numbers; None: every row, every pair judged). ``reasons``: the guards'
    verdicts of the pairs asked (``LinkGuard.reasons``, or ``pairwise`` of a per-pair one)."""
    return _Sieve(found, n, reasons, own, bars).run(seeds)


class _Sieve:
    def __init__(
        self, found: NeighbourPairs, n: int, reasons: Reasons, own: OwnSimilarity, bars: Bars
    ) -> None:
        self.found, self.reasons, self.own, self.bars = found, reasons, own, bars
        m = len(found)
        self.verdicts = np.full(m, None, dtype=object)  # by pair: its guards' verdict
        self.kind = np.full(m, _REFUSED, dtype=np.int8)  # by verdict: _ALLOWED, _RESTATED
        self.judged = np.zeros(m, dtype=bool)
        self.checked = np.zeros(m, dtype=np.float32)  # own similarity, where judged and kept
        self.passes = np.zeros(m, dtype=bool)  # judged, kept by verdict and own similarity
        self.explored = np.zeros(n, dtype=bool)  # every pair of the row judged
        self.refused: Counter[str] = Counter()

    def run(self, seeds: np.ndarray | None) -> Sifted:
        found, bars = self.found, self.bars
        reach = np.zeros(len(self.explored), dtype=bool)
        reach[slice(None) if seeds is None else seeds] = True
        grow = reach.copy()
        while grow.any():
            self._explore(grow)
            near = np.flatnonzero(self.passes)
            i, j = found.i[near], found.j[near]
            rank_i, rank_j = row_ranks(i, j, self.checked[near])
            ex_i, ex_j = self.explored[i], self.explored[j]
            kept = (ex_i & (rank_i < bars.per_row)) | (ex_j & (rank_j < bars.per_row))
            touching = reach[i] | reach[j]
            # Beyond a reach member's cap, unsure until the other member's pairs are judged.
            unsure = touching & ~kept & ~(ex_i & ex_j)
            joins = touching & kept & self._joins(near)
            grow = np.zeros_like(reach)
            grow[i[unsure]] = grow[j[unsure]] = True
            grow[i[joins]] = grow[j[joins]] = True
            grow &= ~self.explored
            reach[i[joins]] = reach[j[joins]] = True
        near = np.flatnonzero(self.passes)
        rank_i, rank_j = row_ranks(found.i[near], found.j[near], self.checked[near])
        keep = (rank_i < bars.per_row) | (rank_j < bars.per_row)
        keep &= reach[found.i[near]] | reach[found.j[near]]
        out = near[keep]
        pairs = NeighbourPairs(
            found.i[out], found.j[out], self.checked[out], found.method, found.compared
        )
        verdicts: list[str | None] = self.verdicts[out].tolist()
        return Sifted(pairs, verdicts, self.refused, int(self.judged.sum()))

    def _explore(self, rows: np.ndarray) -> None:
        """Judge and check every pair of ``rows`` not judged yet."""
        found, bars = self.found, self.bars
        new = np.flatnonzero(~self.judged & (rows[found.i] | rows[found.j]))
        self.explored |= rows
        if not len(new):
            return
        self.judged[new] = True
        verdicts = self.reasons(found.i[new], found.j[new])
        self.verdicts[new] = verdicts
        kinds = np.fromiter(map(_KINDS.get, verdicts, repeat(_REFUSED)), np.int8, len(verdicts))
        self.kind[new] = kinds
        allowed, restated = kinds == _ALLOWED, kinds == _RESTATED
        # As Python floats: float64 against the bars, as the detector compares them.
        sims = found.sim[new].astype(np.float64)
        # Counted on the vectors that found the pairs (refused ones are not checked).
        at_link = np.flatnonzero(~allowed & (sims >= bars.link)).tolist()
        self.refused.update(filter(None, map(verdicts.__getitem__, at_link)))
        keep = allowed | (restated & (sims >= bars.relate - bars.margin))
        kept = new[keep]
        if len(kept):
            own = self.own(kept)
            at_bar = own >= min(bars.link, bars.relate)
            self.checked[kept] = own
            self.passes[kept[at_bar]] = True

    def _joins(self, near: np.ndarray) -> np.ndarray:
        """Which of the kept pairs ``near`` link or relate (their members reach each other)."""
        # As the detector sorts them: the similarities as Python floats against the bars.
        sims, kind = self.checked[near].astype(np.float64), self.kind[near]
        joins: np.ndarray = (kind == _ALLOWED) & (sims >= self.bars.link)
        joins |= (kind == _RESTATED) & (sims >= self.bars.relate)
        return joins


__all__ = ["Bars", "Reason", "Reasons", "Sifted", "pairwise", "sift"]
