"""Optimal pairing of expected calls with actual calls, for ordered and unordered comparisons.

Both functions take `ok[i][j]`: whether expected call `i` may pair with actual call `j`. Neither is
greedy: a greedy first fit fails when a tool repeats with different arguments (an expected call that
accepts any arguments grabs the actual call a stricter expected call needed).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

_FREE = -1


def maximum_matching(adjacency: Sequence[Sequence[int]], n_right: int) -> list[tuple[int, int]]:
    """A maximum bipartite matching (Hopcroft–Karp), as sorted `(left, right)` pairs.

    `adjacency[i]` lists the right vertices left vertex `i` may pair with.

    >>> maximum_matching([[0, 1], [0]], 2)
    [(0, 1), (1, 0)]
    """
    n_left = len(adjacency)
    match_left = [_FREE] * n_left
    match_right = [_FREE] * n_right
    while _layer(adjacency, match_left, match_right, dist := [_FREE] * n_left):
        next_edge = [0] * n_left
        for root in range(n_left):
            if match_left[root] == _FREE:
                _augment_from(root, adjacency, match_left, match_right, dist, next_edge)
    return [(i, j) for i, j in enumerate(match_left) if j != _FREE]


def _layer(adjacency: Sequence[Sequence[int]], match_left: list[int], match_right: list[int], dist: list[int]) -> bool:
    """Breadth-first layers from the free left vertices; True if some augmenting path exists."""
    queue = deque(i for i, j in enumerate(match_left) if j == _FREE)
    for i in queue:
        dist[i] = 0
    found = False
    while queue:
        u = queue.popleft()
        for v in adjacency[u]:
            w = match_right[v]
            if w == _FREE:
                found = True
            elif dist[w] == _FREE:
                dist[w] = dist[u] + 1
                queue.append(w)
    return found


def _augment_from(
    root: int,
    adjacency: Sequence[Sequence[int]],
    match_left: list[int],
    match_right: list[int],
    dist: list[int],
    next_edge: list[int],
) -> None:
    """Depth-first search along the layers for one augmenting path (iterative: no recursion limit)."""
    path = [root]  # left vertices
    via: list[int] = []  # via[k]: the right vertex path[k] pairs with once the path is flipped
    while path:
        u = path[-1]
        if next_edge[u] == len(adjacency[u]):
            dist[u] = _FREE - 1  # a dead end for the rest of this phase
            path.pop()
            if via:
                via.pop()
            continue
        v = adjacency[u][next_edge[u]]
        next_edge[u] += 1
        w = match_right[v]
        if w == _FREE:
            for left, right in zip(path, [*via, v], strict=True):
                match_left[left] = right
                match_right[right] = left
            return
        if dist[w] == dist[u] + 1:
            path.append(w)
            via.append(v)


def lcs_alignment(ok: Sequence[Sequence[bool]], n_right: int) -> list[tuple[int, int]]:
    """A longest common subsequence of the two call sequences, as `(expected, actual)` pairs in order.

    >>> lcs_alignment([[True, False, False], [False, False, True]], 3)
    [(0, 0), (1, 2)]
    """
    m = len(ok)
    # suffix[i][j]: LCS length of expected[i:] and actual[j:]
    suffix = [[0] * (n_right + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n_right - 1, -1, -1):
            if ok[i][j]:
                suffix[i][j] = suffix[i + 1][j + 1] + 1
            else:
                suffix[i][j] = max(suffix[i + 1][j], suffix[i][j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < m and j < n_right:
        if ok[i][j] and suffix[i][j] == suffix[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif suffix[i + 1][j] >= suffix[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs
