"""Enumerate the csg-cmp pairs of a join graph (DPccp, Moerkotte & Neumann, VLDB 2006).

A join graph has relations ``0 .. n-1`` and ``neighbors[i]``, the bit set of the relations
joined to ``i`` by some predicate. A *csg-cmp pair* ``(S1, S2)`` is two disjoint, non-empty,
connected sets of relations with an edge between them: exactly the joins a bushy plan
without cross products can contain. DPccp lists each such pair once (as an unordered pair)
and no other, which is what makes dynamic programming over them cost O(#pairs) instead of
the O(3^n) of trying every split of every subset.

Sets are ints used as bit sets (relation ``i`` is bit ``1 << i``). The enumeration follows the
paper: for each relation ``v_i`` from the highest index down, grow connected subgraphs from
``v_i`` using only relations above it (``EnumerateCsgRec``); for each such subgraph, grow
complements from its neighbours that are not excluded (``EnumerateCmpRec``), where excluding
every relation up to ``min(S1)`` and the neighbours already tried rules out duplicates.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence


def csg_cmp_pairs(neighbors: Sequence[int]) -> Iterator[tuple[int, int]]:
    """Every csg-cmp pair of the graph, once each; the order within a pair means nothing.
    Pairs come in the paper's order, but callers that need a pair's halves solved first
    should sort by the size of the union (every pair of a smaller union is then done)."""
    n = len(neighbors)
    for i in range(n - 1, -1, -1):
        start = 1 << i
        below = (start << 1) - 1  # B_i: relations 0 .. i
        yield from _emit_csg(neighbors, start)
        yield from _enumerate_csg(neighbors, start, below)


def _neighborhood(neighbors: Sequence[int], s: int, excluded: int) -> int:
    out = 0
    rest = s
    while rest:
        low = rest & -rest
        out |= neighbors[low.bit_length() - 1]
        rest ^= low
    return out & ~s & ~excluded


def _subsets(s: int) -> Iterator[int]:
    """The non-empty subsets of ``s``, smallest numbers first."""
    sub = s & -s
    while sub:
        yield sub
        sub = (sub - s) & s  # next subset of s in increasing order


def _enumerate_csg(neighbors: Sequence[int], s1: int, excluded: int) -> Iterator[tuple[int, int]]:
    frontier = _neighborhood(neighbors, s1, excluded)
    if not frontier:
        return
    for sub in _subsets(frontier):
        yield from _emit_csg(neighbors, s1 | sub)
    for sub in _subsets(frontier):
        yield from _enumerate_csg(neighbors, s1 | sub, excluded | frontier)


def _emit_csg(neighbors: Sequence[int], s1: int) -> Iterator[tuple[int, int]]:
    lowest = s1 & -s1
    excluded = s1 | ((lowest << 1) - 1)  # S1 and B_min(S1)
    frontier = _neighborhood(neighbors, s1, excluded)
    rest = frontier
    while rest:
        top = 1 << (rest.bit_length() - 1)  # neighbours by descending index
        rest ^= top
        yield s1, top
        up_to_top = (top << 1) - 1
        yield from _enumerate_cmp(neighbors, s1, top, excluded | (frontier & up_to_top))


def _enumerate_cmp(neighbors: Sequence[int], s1: int, s2: int,
                   excluded: int) -> Iterator[tuple[int, int]]:
    frontier = _neighborhood(neighbors, s2, excluded)
    if not frontier:
        return
    for sub in _subsets(frontier):
        yield s1, s2 | sub
    for sub in _subsets(frontier):
        yield from _enumerate_cmp(neighbors, s1, s2 | sub, excluded | frontier)
