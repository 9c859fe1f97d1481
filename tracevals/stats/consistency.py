"""The three properties of "again", reported apart: availability, correctness, consistency.

- **availability**: the attempt finished without an unhandled exception (``available``).
- **correctness**: a checker passed it (``passed``, the verdict of every evaluator that applied).
- **consistency**: the attempts of one task gave equivalent results. Per task over its n attempts:

  - ``trajectories``: distinct logical tool-call sequences (a retry chain is one call, see
    :func:`tracevals.model.retries.logical_calls`; arguments canonicalised, the idempotency key left
    out), ``modal_share`` the share of attempts on the most common one;
  - ``similarity``: mean over the n(n-1)/2 pairs of ``1 - lev(a, b) / max(|a|, |b|)`` (Levenshtein
    distance over calls; two empty sequences are equal);
  - ``output_classes``: attempts grouped by equivalent results: the same verdict and an equivalent
    answer (an attempt that raised is in the class of its exception type; answers are equivalent after
    normalisation, see :func:`output_key`, or as a case's ``equivalence`` checker says); a pass and a
    fail are never one result, even with the same words. ``agreement`` is the share of pairs in one
    class, ``sum C(m_j, 2) / C(n, 2)``;
  - ``consistent``: one output class (n >= 2);
  - ``verdict``: ``stable_pass`` (every attempt passed), ``flaky`` (some did), ``consistently_wrong``
    (none did, all with the same result; it takes two attempts to say so), ``stable_fail`` (none did,
    in different ways, or a single attempt).

Per variant: available attempts / attempts, passes / attempts and consistent tasks / tasks (of tasks with
at least two attempts), each with its Wilson interval; the mean agreement, modal share and similarity;
tasks per verdict. ``flakiness`` is the probability that two attempts of a task disagree on the verdict,
``c (n - c) / C(n, 2)``, averaged over tasks (the figure variance attribution splits by level).
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat

from tracevals.model.json_text import loads as json_loads
from tracevals.model.progress import Told, quiet
from tracevals.stats.categories import in_words
from tracevals.stats.estimators import Z95, wilson

__all__ = [
    "CONSISTENTLY_WRONG",
    "FLAKY",
    "STABLE_FAIL",
    "STABLE_PASS",
    "VERDICTS",
    "AttemptRecord",
    "Equivalence",
    "Properties",
    "TaskConsistency",
    "flakiness",
    "levenshtein",
    "output_key",
    "pairwise_similarity",
    "properties",
    "task_consistency",
]

STABLE_PASS = "stable_pass"
FLAKY = "flaky"
STABLE_FAIL = "stable_fail"
CONSISTENTLY_WRONG = "consistently_wrong"
VERDICTS = (STABLE_PASS, FLAKY, CONSISTENTLY_WRONG, STABLE_FAIL)
VERDICT_LABELS = in_words(VERDICTS)

Equivalence = Callable[[str, str], bool]
"""A case's own test of two answers: ``(a, b) -> bool``, True when they are the same result."""


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt as the consistency figures see it. ``trajectory`` is its logical calls, each
    ``name(canonical args)``; ``error`` the exception type when it raised (then it is not available)."""

    variant: str
    task_id: str
    attempt: int
    passed: bool
    error: str | None = None
    output: str | None = None
    trajectory: tuple[str, ...] = ()

    @property
    def available(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class TaskConsistency:
    task_id: str
    n: int
    passes: int
    available: int
    trajectories: int
    modal_share: float
    similarity: float
    output_classes: int
    agreement: float
    verdict: str
    modal_trajectory: tuple[str, ...] = ()
    # each attempt's output class, (attempt number, class index in order of first appearance): which
    # attempts gave the same result (`tracevals ui` shows the classes beside the attempts)
    classes: tuple[tuple[int, int], ...] = ()

    @property
    def consistent(self) -> bool:
        return self.n >= 2 and self.output_classes == 1

    @property
    def flakiness(self) -> float:
        """The probability that two attempts disagree on the verdict: c (n - c) / C(n, 2)."""
        return flakiness(self.passes, self.n)


@dataclass(frozen=True)
class Properties:
    """Availability, correctness and consistency of one variant, each with its counts and interval."""

    variant: str
    attempts: int
    available: int
    availability: float
    availability_wilson: tuple[float, float]
    passes: int
    correctness: float
    correctness_wilson: tuple[float, float]
    tasks: list[TaskConsistency]
    measured_tasks: int  # tasks with >= 2 attempts: consistency needs a pair
    consistent_tasks: int
    consistency: float
    consistency_wilson: tuple[float, float]
    agreement: float
    modal_share: float
    similarity: float
    flakiness: float
    verdicts: dict[str, int] = field(default_factory=dict)
    z: float = Z95

    def task(self, task_id: str) -> TaskConsistency | None:
        return next((t for t in self.tasks if t.task_id == task_id), None)


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Edit distance (insert, delete, substitute one call) between two call sequences."""
    from rapidfuzz.distance import Levenshtein  # imported by the figures that measure a pair (~10 ms)

    coded_a, coded_b = _coded([a, b])
    return int(Levenshtein.distance(coded_a, coded_b))


def _coded(sequences: Sequence[Sequence[str]]) -> list[list[int]]:
    """Each call as a number, one per distinct call: the edit distance compares calls by equality alone (and
    rapidfuzz compares numbers exactly, where it would compare other objects by their hash)."""
    numbers: dict[str, int] = {}
    return [[numbers.setdefault(call, len(numbers)) for call in sequence] for sequence in sequences]


def pairwise_similarity(sequences: Sequence[Sequence[str]]) -> float:
    """Mean normalised similarity over every pair; NaN with fewer than two sequences.

    Exact, and measured once per pair of distinct *shapes* that can be similar. A call that only one path makes
    (a customer's own lookup) equals nothing in any other path, so each path is read as its shape: its calls,
    those only it makes as one mark that matches no other path's. Attempts on one path are pairs of similarity 1;
    two paths of one shape differ in their own calls alone, and two shapes without a call in common are 0 (d =
    max(|a|, |b|): every call substituted, the rest inserted); the others' edit distances are rapidfuzz's (C++),
    each value standing for the pairs of attempts its two shapes hold. A consistent agent's thousand attempts cost
    a few distances, and so do attempts that each call with their own arguments around calls they share (53,407
    such attempts of the 10^6-span bench lake's run: one shape); a task whose attempts take many shapes with calls in
    common still costs a distance per pair of those shapes. The sum is that of every pair's value, rounded once
    (`math.fsum`), as the definition gives it."""
    n = len(sequences)
    if n < 2:
        return math.nan
    paths = Counter(tuple(calls) for calls in _coded(sequences))
    makers = Counter(call for path in paths for call in set(path))  # each call: how many distinct paths make it
    own = len(makers)  # no call's number: the mark of a path's own calls (another path's: own + 1)
    held: dict[tuple[int, ...], list[int]] = {}  # each shape: the attempts on each of its paths
    for path, m in paths.items():
        held.setdefault(tuple(call if makers[call] > 1 else own for call in path), []).append(m)
    shapes = list(held)
    theirs = [tuple(own + 1 if call == own else call for call in shape) for shape in shapes]  # as the other side
    totals = [sum(held[shape]) for shape in shapes]
    holders: dict[int, list[int]] = {}  # each call made by several paths: the shapes that make it, in order
    for i, shape in enumerate(shapes):
        for call in set(shape) - {own}:
            holders.setdefault(call, []).append(i)

    def values() -> Iterator[Iterable[float]]:
        # the pairs on one path: 1 each (an integer: exact)
        yield [float(sum(math.comb(m, 2) for ms in held.values() for m in ms))]
        for i, shape in enumerate(shapes):
            later: set[int] = set()  # the shapes after this one with a call in common with it
            for call in set(shape) - {own}:
                after = holders[call][bisect_right(holders[call], i) :]
                if len(after) == len(shapes) - 1 - i:  # a call every later shape makes: all of them
                    later = set(after)
                    break
                later.update(after)
            ms = held[shape]
            within = (totals[i] ** 2 - sum(m * m for m in ms)) // 2  # pairs of two paths of this shape
            if not later and not within:
                continue
            from rapidfuzz.distance import Levenshtein  # imported once a pair is measured (~10 ms)

            similar = Levenshtein.normalized_similarity  # 1 - d / max(|a|, |b|)
            if within:
                yield _times(similar(shape, theirs[i]), within)
            others = sorted(later)
            measured = map(similar, repeat(shape), map(theirs.__getitem__, others))
            if totals[i] == 1 and all(totals[j] == 1 for j in others):  # one pair each
                yield measured
                continue
            for value, j in zip(measured, others, strict=True):
                yield _times(value, totals[i] * totals[j])

    return math.fsum(chain.from_iterable(values())) / math.comb(n, 2)


def _times(value: float, count: int) -> Iterator[float]:
    """`value` times `count` as terms `math.fsum` adds exactly: one per bit of the count (x 2^k is exact)."""
    return (math.ldexp(value, k) for k in range(count.bit_length()) if count >> k & 1)


_SPACE = re.compile(r"\s+")


def output_key(output: str | None) -> str:
    """An answer as compared: canonical JSON when it is JSON (keys sorted), else its text with runs of
    white space made one space, trimmed and case-folded; no answer is the empty text."""
    text = (output or "").strip()
    if text[:1] in ("{", "[", '"') or text in ("true", "false", "null") or _is_number(text):
        try:
            return "json:" + json.dumps(json_loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (ValueError, RecursionError):  # RecursionError: json.dumps of a deep value
            pass
    return "text:" + _SPACE.sub(" ", text).casefold()


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _classes(records: Sequence[AttemptRecord], equivalent: Equivalence | None) -> list[int]:
    """The output class of each record (its index among the classes, in order of first appearance)."""
    keys: list[tuple[str, str]] = []  # (error | pass | fail, representative)
    index: dict[tuple[str, str], int] = {}  # the classes found by key (all but a case's own test): one look each
    out: list[int] = []
    for r in records:
        verdict = "pass" if r.passed else "fail"
        if r.error is not None:
            key = ("error", r.error)
            found = index.get(key)
        elif equivalent is not None:
            text = r.output or ""
            found = next((i for i, (kind, rep) in enumerate(keys) if kind == verdict and equivalent(rep, text)), None)
            key = (verdict, text)
        else:
            key = (verdict, output_key(r.output))
            found = index.get(key)
        if found is None:
            keys.append(key)
            found = len(keys) - 1
            index.setdefault(key, found)
        out.append(found)
    return out


def flakiness(c: int, n: int) -> float:
    """c (n - c) / C(n, 2): the chance that two of the n attempts disagree on the verdict (NaN for n < 2)."""
    if n < 2:
        return math.nan
    return c * (n - c) / math.comb(n, 2)


def task_consistency(
    task_id: str, records: Sequence[AttemptRecord], equivalent: Equivalence | None = None
) -> TaskConsistency:
    """The consistency figures of one task's attempts (see the module docstring)."""
    ordered = sorted(records, key=lambda r: r.attempt)
    n = len(ordered)
    if n == 0:
        raise ValueError(f"task {task_id!r}: no attempts")
    passes = sum(r.passed for r in ordered)
    paths = Counter(r.trajectory for r in ordered)
    # the modal path: the most common, ties to the one seen first (most_common keeps first-seen order)
    modal = paths.most_common(1)[0][0]
    each = _classes(ordered, equivalent)
    classes = Counter(each)
    pairs = math.comb(n, 2)
    agreement = math.fsum(math.comb(m, 2) for m in classes.values()) / pairs if pairs else math.nan
    if passes == n:
        verdict = STABLE_PASS
    elif passes > 0:
        verdict = FLAKY
    elif len(classes) == 1 and n >= 2:  # one attempt says nothing about repeating itself
        verdict = CONSISTENTLY_WRONG
    else:
        verdict = STABLE_FAIL
    return TaskConsistency(
        task_id=task_id,
        n=n,
        passes=passes,
        available=sum(r.available for r in ordered),
        trajectories=len(paths),
        modal_share=paths[modal] / n,
        similarity=pairwise_similarity([r.trajectory for r in ordered]),
        output_classes=len(classes),
        agreement=agreement,
        verdict=verdict,
        modal_trajectory=modal,
        classes=tuple((r.attempt, c) for r, c in zip(ordered, each, strict=True)),
    )


def _mean(values: Iterable[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return math.fsum(kept) / len(kept) if kept else math.nan


CONSISTENCY_PHASE = "the consistency of each task"


def properties(
    records: Iterable[AttemptRecord],
    z: float = Z95,
    equivalence: Mapping[str, Equivalence] | None = None,
    told: Told = quiet,
) -> dict[str, Properties]:
    """Availability, correctness and consistency per variant (sorted by variant). ``equivalence`` maps a
    task id to its own answer test; the others compare answers by :func:`output_key`. `told`: how many of the
    tasks (of every variant) are measured, after each."""
    by_variant: dict[str, dict[str, list[AttemptRecord]]] = {}
    for r in records:
        by_variant.setdefault(r.variant, {}).setdefault(r.task_id, []).append(r)
    out: dict[str, Properties] = {}
    total, done = sum(len(tasks) for tasks in by_variant.values()), 0
    told(CONSISTENCY_PHASE, 0, total)
    for variant in sorted(by_variant):
        tasks = []
        for tid, rs in sorted(by_variant[variant].items()):
            tasks.append(task_consistency(tid, rs, (equivalence or {}).get(tid)))
            done += 1
            told(CONSISTENCY_PHASE, done, total)
        attempts = sum(t.n for t in tasks)
        available = sum(t.available for t in tasks)
        passes = sum(t.passes for t in tasks)
        measured = [t for t in tasks if t.n >= 2]
        consistent = sum(t.consistent for t in measured)
        verdicts = Counter(t.verdict for t in tasks)
        out[variant] = Properties(
            variant=variant,
            attempts=attempts,
            available=available,
            availability=available / attempts,
            availability_wilson=wilson(available, attempts, z),
            passes=passes,
            correctness=passes / attempts,
            correctness_wilson=wilson(passes, attempts, z),
            tasks=tasks,
            measured_tasks=len(measured),
            consistent_tasks=consistent,
            consistency=consistent / len(measured) if measured else math.nan,
            consistency_wilson=wilson(consistent, len(measured), z),
            agreement=_mean(t.agreement for t in measured),
            modal_share=_mean(t.modal_share for t in tasks),
            similarity=_mean(t.similarity for t in measured),
            flakiness=_mean(t.flakiness for t in measured),
            verdicts={v: verdicts[v] for v in VERDICTS if verdicts[v]},
            z=z,
        )
    return out
