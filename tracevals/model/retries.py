"""Which calls are retries, shared by `retry_discipline`, `step_budget`, `trajectory_match` (which folds
a chain into one logical step), the statistics and the `retries` view (queries/views/75_retries.sql).

A retry is a call that repeats the call right before it (the same operation, see `calls.py`) after
that call failed; consecutive retries form one chain `[failed call, retry, retry, ...]`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracevals.model.calls import operation_key
from tracevals.model.trajectory import ToolCall


def retry_chains(calls: Sequence[ToolCall]) -> list[list[int]]:
    """Index chains `[failed call, retry, retry, ...]`: each retry repeats the failed call just before it."""
    keys = [operation_key(c) for c in calls]
    chains: list[list[int]] = []
    for i in range(1, len(calls)):
        if not (calls[i - 1].failed and keys[i] == keys[i - 1]):
            continue
        if chains and chains[-1][-1] == i - 1:
            chains[-1].append(i)
        else:
            chains.append([i - 1, i])
    return chains


def retry_count(calls: Sequence[ToolCall]) -> int:
    return sum(len(chain) - 1 for chain in retry_chains(calls))


def logical_calls(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The calls with each retry chain as one call, its last: the operation as it finally went (what a
    trajectory is compared by; the retries themselves are `retry_discipline`'s to judge)."""
    folded = {i for chain in retry_chains(calls) for i in chain[:-1]}
    return [c for i, c in enumerate(calls) if i not in folded]
