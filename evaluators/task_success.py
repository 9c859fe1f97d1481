"""`task_success`: does the attempt's final output meet the case's success criteria?

Now: the attempt must not have raised (`error_type`), must have recorded an output, and the output must
contain every `must_include` string (case-insensitive). Score: the share of `must_include` strings
found (0 when the attempt raised or recorded no output); passed when all are found. The other
criteria the task file accepts (`must_not_include`, `regex`, `json_schema`, `checker`) are listed as
not evaluated by this version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tracevals.evaluators.evaluator import make_score
from tracevals.evaluators.model import Case, Score, Trajectory

NOT_YET_EVALUATED = ("must_not_include", "regex", "json_schema", "checker")


@dataclass
class TaskSuccess:
    """The case's success criteria on the attempt's final output (now: `must_include`)."""

    name: ClassVar[str] = "task_success"
    version: ClassVar[int] = 1

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        if case is None:
            return None
        skipped = [k for k in NOT_YET_EVALUATED if k in case.raw.get("success_criteria", {})]
        details: dict[str, Any] = {"must_include": list(case.must_include), "not_evaluated": skipped}
        tail = [f"not evaluated by v{self.version}: {', '.join(skipped)}"] if skipped else []
        if trajectory.error_type is not None:
            return self._fail(trajectory, f"attempt failed with error: {trajectory.error_type}", details, tail)
        if trajectory.output is None:
            return self._fail(trajectory, "no output recorded", details, tail)
        if not case.must_include:
            reason = "no must_include criteria; the attempt ended without error and recorded an output"
            return make_score(
                self, trajectory, passed=True, score=1.0, reason="; ".join([reason, *tail]), details=details
            )
        output = trajectory.output.casefold()
        missing = [s for s in case.must_include if s.casefold() not in output]
        total = len(case.must_include)
        found = total - len(missing)
        score = found / total
        reason = f"must_include {found}/{total} found, score={found}/{total}={score:.3f}"
        if missing:
            reason += f"; missing {', '.join(repr(s) for s in missing)}"
        details["missing"] = missing
        return make_score(
            self, trajectory, passed=not missing, score=score, reason="; ".join([reason, *tail]), details=details
        )

    def _fail(self, trajectory: Trajectory, why: str, details: dict[str, Any], tail: list[str]) -> Score:
        reason = "; ".join([f"{why}; score=0", *tail])
        return make_score(self, trajectory, passed=False, score=0.0, reason=reason, details=details)
