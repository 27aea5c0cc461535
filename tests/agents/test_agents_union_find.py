"""CappedUnionFind (the cluster detector's grouping): sets capped in size that never join two
conflicting members, against the rule spelled out set by set."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cortexgraph.agents.cluster_grouping import CappedUnionFind


def _reference(n: int, cap: int, pairs, conflicting) -> tuple[list[frozenset[int]], int]:
    """The same rules, spelled out: every join checks every cross pair, nothing remembered."""
    sets = {i: frozenset([i]) for i in range(n)}
    refused = 0
    for a, b in pairs:
        sa, sb = sets[a], sets[b]
        if sa is sb or len(sa) + len(sb) > cap:
            continue
        if any(conflicting(x, y) for x in sa for y in sb):
            refused += 1
            continue
        joined = sa | sb
        for m in joined:
            sets[m] = joined
    return sorted(set(sets.values()), key=min), refused


def _partition(uf: CappedUnionFind, n: int) -> list[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for i in range(n):
        groups.setdefault(uf.find(i), set()).add(i)
    return sorted((frozenset(g) for g in groups.values()), key=min)


@settings(deadline=None)  # examples: the profile's budget (tests/conftest.py)
@given(n=st.integers(2, 12), cap=st.integers(2, 6), data=st.data())
def test_capped_union_find_is_the_spelled_out_rule(n: int, cap: int, data) -> None:
    node = st.integers(0, n - 1)
    pairs = data.draw(st.lists(st.tuples(node, node), max_size=60))
    bad = data.draw(st.sets(st.tuples(node, node), max_size=n * 2))

    def conflicting(x: int, y: int) -> bool:
        return (x, y) in bad or (y, x) in bad

    uf = CappedUnionFind(n, cap, conflicting)
    for a, b in pairs:
        uf.union(a, b)
    assert (_partition(uf, n), uf.refused) == _reference(n, cap, pairs, conflicting)
    assert all(len(s) <= cap for s in _partition(uf, n))
