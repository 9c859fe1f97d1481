"""Where the variance comes from: the same tasks run live, with the tools frozen, and with tools and
model frozen, and the flakiness left at each level.

Flakiness of a task is the chance that two of its attempts disagree on the verdict, ``c (n - c) /
C(n, 2)`` (see :func:`tracevals.stats.consistency.flakiness`); of a level, its mean over tasks
(``F_live``, ``F_tools``, ``F_frozen``). Freezing removes one source at a time, so

- the world's share (tools: their non-determinism, faults, time) is ``F_live - F_tools``;
- the model's (sampling) is ``F_tools - F_frozen``;
- the agent's own code (time, ordering, randomness it draws itself) is ``F_frozen``: with the world
  and the model frozen, a deterministic agent repeats itself exactly.

The three add up to ``F_live``. A difference can come out negative on few attempts (freezing a
different draw of the world); it is reported as measured, never clamped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["LEVELS", "SOURCES", "Attribution", "LevelFigures", "attribute"]

LEVELS = ("live", "tools-frozen", "frozen")
SOURCES = ("world", "model", "agent")
SOURCE_LABELS = {"world": "the world (tools)", "model": "the model (sampling)", "agent": "the agent's own code"}


@dataclass(frozen=True)
class LevelFigures:
    level: str
    attempts: int
    tasks: int
    flaky_tasks: int
    flakiness: float
    pass_at_1: float
    pass_hat_k: float
    k: int
    consistency: float
    live_calls: int = 0  # calls no recording answered (frozen levels: off the reference path)


@dataclass(frozen=True)
class Attribution:
    levels: dict[str, LevelFigures]
    parts: dict[str, float]  # world, model, agent: flakiness each source adds

    def share(self, source: str) -> float:
        total = self.levels["live"].flakiness
        return self.parts[source] / total if total else math.nan

    @property
    def main_source(self) -> str | None:
        """The source of the most flakiness; None when live attempts never disagreed."""
        if not self.levels["live"].flakiness:
            return None
        return max(SOURCES, key=lambda s: self.parts[s])

    @property
    def statement(self) -> str:
        live, frozen = self.levels["live"], self.levels["frozen"]
        head = (
            f"with the world and the model frozen your pass^{frozen.k} is {frozen.pass_hat_k:.2f}; "
            f"live it is {live.pass_hat_k:.2f}"
        )
        main = self.main_source
        if main is None:
            return f"{head}: no live attempts disagreed, there is no flakiness to attribute"
        text = f"{head}: most flakiness is {SOURCE_LABELS[main]}'s ({self.share(main):.0%})"
        if self.parts["agent"] > 0:
            text += (
                f"; {self.parts['agent']:.3f} is left with everything frozen: the agent's own code varies "
                "(time, ordering, randomness)"
            )
        return text


def attribute(levels: Mapping[str, LevelFigures]) -> Attribution:
    """Split live flakiness into the world's, the model's and the agent's (see the module docstring)."""
    missing = [name for name in LEVELS if name not in levels]
    if missing:
        raise ValueError(f"variance attribution needs the levels {', '.join(LEVELS)}; missing {', '.join(missing)}")
    live, tools, frozen = (levels[name].flakiness for name in LEVELS)
    parts = {"world": live - tools, "model": tools - frozen, "agent": frozen}
    return Attribution(dict(levels), parts)
