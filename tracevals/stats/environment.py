"""The environment of every attempt, summarised per variant and compared between two variants.

Each attempt comes with a mapping of environment keys to the value it ran with (the harness records
them on the attempt's root, the instrumentation on its model calls; see docs/statistics.md for the
list). A variant "ran in one environment" when every key has one value over its attempts, keys that
differ per attempt by design aside (:data:`PER_ATTEMPT`: each attempt sends its own seed). Two
variants are comparable when they differ only in what is under test: :func:`compare_environments`
lists every other key whose values differ, so a report can say "besides the model, the system prompt
changed" and ``--strict-env`` can refuse it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ENV_KEYS",
    "PER_ATTEMPT",
    "EnvDifference",
    "EnvSummary",
    "compare_environments",
    "summarize_environments",
]

#: Every key, in the order a report shows them, with its label.
ENV_KEYS: dict[str, str] = {
    "models_requested": "model requested",
    "models_served": "model served",
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max tokens",
    "request_seeds": "request seed",
    "system_sha256": "system instructions (sha256)",
    "tools_sha256": "tool definitions (sha256)",
    "commit_hash": "commit",
    "lock_hash": "lock file",
    "tasks_sha256": "task file (sha256)",
    "case_sha256": "case (sha256)",
    "faults": "fault profile",
    "injections": "injection profile",
    "cassettes": "cassettes",
    "replay": "replay mode",
    "clock": "frozen clock",
    "locale": "locale",
    "python_hash_seed": "PYTHONHASHSEED",
    "python": "python",
}
#: Keys that differ between attempts by design (each sends its own seed): never a sign of two
#: environments, never a difference between variants.
PER_ATTEMPT = frozenset({"request_seeds"})
#: Keys whose value belongs to the task, not the variant (each case has its own digest): one value per
#: task within a variant, compared task by task between variants.
PER_TASK = frozenset({"case_sha256"})
NOT_RECORDED = "-"


@dataclass(frozen=True)
class EnvSummary:
    """One variant's environment: per key, its values and how many attempts ran with each."""

    variant: str
    attempts: int
    values: dict[str, dict[str, int]]

    per_task: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # key -> task -> values

    @property
    def mixed(self) -> dict[str, dict[str, int]]:
        """Keys with more than one value over the variant's attempts (per-attempt keys aside; a per-task
        key with more than one value for some task, shown as `task: value`)."""
        out = {k: v for k, v in self.values.items() if len(v) > 1 and k not in PER_ATTEMPT and k not in PER_TASK}
        for key, tasks in self.per_task.items():
            several = {f"{t}: {v}": n for t, vs in tasks.items() if len(vs) > 1 for v, n in vs.items()}
            if several:
                out[key] = several
        return out

    def value(self, key: str) -> str:
        """The key's value when it has one, else the values joined with ` | ` (a per-attempt or per-task
        key: how many distinct values)."""
        values = self.values.get(key, {NOT_RECORDED: 0})
        if key in PER_ATTEMPT or key in PER_TASK:
            return values_text(values) if len(values) == 1 else f"{len(values)} distinct"
        return values_text(values)


@dataclass(frozen=True)
class EnvDifference:
    key: str
    baseline: tuple[str, ...]
    candidate: tuple[str, ...]
    declared: bool = False  # the variable under test (--vary), expected to differ

    @property
    def label(self) -> str:
        return ENV_KEYS.get(self.key, self.key)

    def describe(self) -> str:
        return f"{self.label}: {' | '.join(self.baseline)} -> {' | '.join(self.candidate)}"


@dataclass(frozen=True)
class EnvComparison:
    baseline: str
    candidate: str
    differences: list[EnvDifference]
    mixed: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # variant -> key -> values

    @property
    def undeclared(self) -> list[EnvDifference]:
        return [d for d in self.differences if not d.declared]

    def problems(self) -> list[str]:
        """What `--strict-env` refuses: an undeclared difference, or a variant run in two environments."""
        out = [f"{self.baseline} and {self.candidate} differ in {d.describe()}" for d in self.undeclared]
        for variant, keys in self.mixed.items():
            for key, values in keys.items():
                shown = ", ".join(f"{v} ({n})" for v, n in values.items())
                out.append(f"{variant}'s attempts ran with more than one {ENV_KEYS.get(key, key)}: {shown}")
        return out


def values_text(values: Mapping[str, int]) -> str:
    return " | ".join(values)


def summarize_environments(
    rows: Iterable[tuple[str, str, Mapping[str, str | None]]],
) -> dict[str, EnvSummary]:
    """Per variant, from ``(variant, task id, {key: value})`` per attempt; an absent key counts as ``-``.
    The attempts of one variant and task that ran in one environment are counted together: each key's count
    grows once per distinct environment, by its attempts (a run's thousands of attempts have a few)."""
    counts: dict[str, dict[str, Counter[str]]] = {}
    tasks: dict[str, dict[str, dict[str, Counter[str]]]] = {}
    attempts: Counter[str] = Counter()
    alike: Counter[tuple[str, str, tuple[tuple[str, Any], ...]]] = Counter()
    for variant, task_id, env in rows:
        alike[variant, task_id, tuple(env.items())] += 1
    for (variant, task_id, items), n in alike.items():
        env = dict(items)
        attempts[variant] += n
        keys = counts.setdefault(variant, {})
        for key in (*ENV_KEYS, *sorted(set(env) - set(ENV_KEYS))):
            value = env.get(key)
            text = NOT_RECORDED if value in (None, "") else str(value)
            keys.setdefault(key, Counter())[text] += n
            if key in PER_TASK:
                tasks.setdefault(variant, {}).setdefault(key, {}).setdefault(task_id, Counter())[text] += n
    out = {}
    for variant in sorted(counts):
        values = {
            key: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
            for key, c in counts[variant].items()
            if set(c) != {NOT_RECORDED}
        }
        per_task = {
            key: {t: dict(c) for t, c in sorted(by_task.items())} for key, by_task in tasks.get(variant, {}).items()
        }
        out[variant] = EnvSummary(variant, attempts[variant], values, per_task)
    return out


def compare_environments(baseline: EnvSummary, candidate: EnvSummary, vary: Sequence[str] = ()) -> EnvComparison:
    """Every key (per-attempt keys aside) whose values differ between the variants; those named in
    ``vary`` (a key, a prefix of one or a label: ``model`` names both model keys, ``system`` the system
    instructions) are marked declared: the variable under test."""
    wanted = {v.strip().lower() for v in vary}
    differences = []
    for key in (*ENV_KEYS, *sorted((set(baseline.values) | set(candidate.values)) - set(ENV_KEYS))):
        if key in PER_ATTEMPT:
            continue
        if key in PER_TASK:
            changed = _changed_tasks(baseline.per_task.get(key, {}), candidate.per_task.get(key, {}))
            if changed:
                declared = _declared(key, wanted)
                b = tuple(f"{t}: {values_text(baseline.per_task[key][t])}" for t in changed)
                c = tuple(f"{t}: {values_text(candidate.per_task[key][t])}" for t in changed)
                differences.append(EnvDifference(key, b, c, declared))
            continue
        b = tuple(baseline.values.get(key, {NOT_RECORDED: 0}))
        c = tuple(candidate.values.get(key, {NOT_RECORDED: 0}))
        if set(b) == set(c):
            continue
        declared = _declared(key, wanted)
        differences.append(EnvDifference(key, b, c, declared))
    mixed = {s.variant: s.mixed for s in (baseline, candidate) if s.mixed}
    return EnvComparison(baseline.variant, candidate.variant, differences, mixed)


def _changed_tasks(baseline: Mapping[str, Mapping[str, int]], candidate: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The tasks both variants ran whose values differ."""
    return [t for t in sorted(set(baseline) & set(candidate)) if set(baseline[t]) != set(candidate[t])]


def _declared(key: str, wanted: set[str]) -> bool:
    label = ENV_KEYS.get(key, key).lower()
    return any(w in (key, label) or key.startswith(w) for w in wanted)
