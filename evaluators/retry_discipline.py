"""`retry_discipline`: bounded retries, retries that waited as long as asked, no duplicate side effects.

Definitions:

- a retry is a call to the same tool with the same arguments right after (the next executed call)
  that same call failed; consecutive retries form one chain. When either call's arguments were not
  captured, a same-tool call right after a failure is assumed to be a retry, and the reason says so.
- bounded: with `case.max_retries` set, no chain may hold more retries than that (the bound is per
  failed call, not per attempt: step budgets bound the attempt's total). The retries past the bound
  are flagged.
- early: a retry whose start came sooner after the failed call's end than the failure's
  `retry_after_ms` asked for (not checked, and said so, when the times were not recorded).
- duplicate side effect: a second successful `write`/`irreversible` call with the same tool and
  arguments as an earlier successful one, unless both carry the same idempotency key (the tool then
  deduplicates). Calls whose arguments were not captured cannot be compared and are listed.

Score: the share of executed calls not flagged; passed when none is. Needs no case (the bound does).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any, ClassVar

from tracevals.evaluators.args_match import json_equal
from tracevals.evaluators.evaluator import call_label, executed_calls, fraction_ok, make_score
from tracevals.evaluators.model import Case, Score, ToolCall, Trajectory
from tracevals.evaluators.tool_policy import RISKY_EFFECTS


@dataclass
class RetryDiscipline:
    """Retries bounded by `case.max_retries` and honouring `retry_after_ms`; no duplicate side effects."""

    name: ClassVar[str] = "retry_discipline"
    version: ClassVar[int] = 1

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        calls = executed_calls(trajectory)
        if not calls:
            return None
        max_retries = case.max_retries if case is not None else None
        labels = [call_label(c, i) for i, c in enumerate(calls, start=1)]
        flagged: set[int] = set()
        problems: list[str] = []
        notes: list[str] = []
        chains = _retry_chains(calls)
        for chain in chains:
            retries = len(chain) - 1
            if max_retries is not None and retries > max_retries:
                flagged.update(chain[max_retries + 1 :])
                problems.append(f"{labels[chain[0]]} retried {retries} times (max {max_retries})")
            for prev, cur in pairwise(chain):
                wait = calls[cur].start_ms - calls[prev].end_ms
                asked = calls[prev].retry_after_ms
                if asked is not None and not (calls[prev].end_ms and calls[cur].start_ms):
                    notes.append(f"{labels[cur]}: times not recorded, backoff not checked")
                elif asked is not None and wait < asked:
                    flagged.add(cur)
                    problems.append(f"early retry {labels[cur]}: waited {wait:.0f}ms < retry_after {asked:.0f}ms")
                if calls[prev].args is None or calls[cur].args is None:
                    notes.append(f"{labels[cur]}: args not captured, assumed a retry")
        dup_flagged, dup_problems, dup_notes = _duplicate_side_effects(calls, labels)
        flagged |= dup_flagged
        problems += dup_problems
        notes += dup_notes
        score, arithmetic = fraction_ok(len(flagged), len(calls))
        total = sum(len(c) - 1 for c in chains)
        bound = "not set" if max_retries is None else str(max_retries)
        head = (
            f"{len(calls)} calls, {total} retries in {len(chains)} chains (max per call {bound}), "
            f"{len(flagged)} flagged; score={arithmetic}"
        )
        details: dict[str, Any] = {
            "calls": len(calls),
            "retries": total,
            "chains": [[labels[i] for i in chain] for chain in chains],
            "max_retries": max_retries,
            "flagged": [labels[i] for i in sorted(flagged)],
            "problems": problems,
            "notes": notes,
        }
        return make_score(
            self,
            trajectory,
            passed=not flagged,
            score=score,
            reason="; ".join([head, *problems, *notes]),
            details=details,
        )


def _same_call(a: ToolCall, b: ToolCall) -> bool:
    """Same tool and arguments; unknown (uncaptured) arguments are given the benefit of the doubt."""
    return a.name == b.name and (a.args is None or b.args is None or json_equal(a.args, b.args))


def _retry_chains(calls: list[ToolCall]) -> list[list[int]]:
    """Index chains `[failed call, retry, retry, ...]`: each retry repeats the failed call just before it."""
    chains: list[list[int]] = []
    for i in range(1, len(calls)):
        prev, cur = calls[i - 1], calls[i]
        if not (prev.failed and _same_call(prev, cur)):
            continue
        if chains and chains[-1][-1] == i - 1:
            chains[-1].append(i)
        else:
            chains.append([i - 1, i])
    return chains


def _duplicate_side_effects(calls: list[ToolCall], labels: list[str]) -> tuple[set[int], list[str], list[str]]:
    """Successful risky calls that repeat an earlier one: (flagged indices, problems, notes)."""
    done: list[int] = []  # successful risky calls seen so far, each the first of its kind
    flagged: set[int] = set()
    problems: list[str] = []
    notes: list[str] = []
    for i, call in enumerate(calls):
        if call.failed or call.effect not in RISKY_EFFECTS:
            continue
        if call.args is None:
            notes.append(f"{labels[i]}: args not captured, duplicate check skipped")
            continue
        same = next((j for j in done if _same_call(calls[j], call)), None)
        if same is None:
            done.append(i)
        elif call.idempotency_key and call.idempotency_key == calls[same].idempotency_key:
            notes.append(f"{labels[i]} repeats {labels[same]} with the same idempotency key")
        else:
            flagged.add(i)
            problems.append(f"duplicate side effect: {labels[i]} repeats {labels[same]}")
    return flagged, problems, notes
