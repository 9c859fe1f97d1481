"""`task_success`: does the attempt's final output meet the case's `success_criteria`?

The attempt must not have raised (`error_type`) and must have recorded an output; then each criterion
is one or more checks:

- `must_include`: each string appears in the output (case-insensitive), one check per string;
- `must_not_include`: each string does not appear (case-insensitive), one check per string;
- `regex`: each pattern matches somewhere in the output (`re.search`; use `(?i)` to ignore case);
- `json_schema`: the output, parsed as JSON (the whole output, else its last ```json fenced block, which
  must parse: an earlier block is a draft),
  is valid against the schema;
- `checker`: `module:function`, called as `f(output, case)`, returns a bool, a number in [0, 1]
  (1 passes) or `(bool, reason)`; an import error or an exception fails the check and says why.

Findings (`declarations.py`): one `criterion_not_met` per check not met (`checker_error` for a checker
that did not load or raised), or `attempt_raised` / `no_output`. Score: checks met / checks (0 when the
attempt raised or recorded no output); passed when all are met. A case with no criteria passes when the
attempt ended without error and recorded an output. Applies only to task cases (not to the policy of a
scoring config).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import polars as pl

from tracevals.evaluators.arg_schemas import schema_error
from tracevals.evaluators.evaluator import Screened, make_score, share
from tracevals.evaluators.scope import Scope
from tracevals.evaluators.task_success.declarations import (
    ATTEMPT_RAISED,
    CHECKER_ERROR,
    CRITERION_NOT_MET,
    FINDINGS,
    NO_OUTPUT,
    OPTIONS,
)
from tracevals.model.callables import CallableError, load_callable
from tracevals.model.case import Case
from tracevals.model.findings import FindingKind
from tracevals.model.json_text import loads as json_loads
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory

_FENCED_JSON = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


@dataclass
class TaskSuccess(Screened):
    """The case's success criteria on the attempt's final output."""

    name: ClassVar[str] = "task_success"
    version: ClassVar[int] = 4  # 4: typed findings
    findings: ClassVar = FINDINGS
    options: ClassVar = OPTIONS
    screen_function: ClassVar[str] = "tracevals.evaluators.task_success.screen:screen_success"

    def verdict_key(self, scope: Scope) -> pl.DataFrame:
        """The batch path: one evaluation per distinct (case, error, output) (see `screen_dedupe.py`)."""
        from tracevals.evaluators.verdict_keys import output_keys

        return output_keys(scope)

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        if case is None or not case.is_task:
            return None
        if trajectory.error_type is not None:
            return self._fail(trajectory, ATTEMPT_RAISED, f"attempt failed with error: {trajectory.error_type}")
        if trajectory.output is None:
            return self._fail(trajectory, NO_OUTPUT, "no output recorded")
        checks = criteria_checks(trajectory.output, case)
        if not checks:
            reason = "no success criteria; the attempt ended without error and recorded an output"
            return make_score(self, trajectory, score=1.0, reason=reason, details={"checks": []}, findings=[])
        met = sum(1 for c in checks if c["met"])
        score, arithmetic = share(met, len(checks))
        failed = [c["why"] for c in checks if not c["met"]]
        reason = "; ".join([f"{met}/{len(checks)} checks met, score={arithmetic}", *failed])
        missing = [c["value"] for c in checks if c["kind"] == "must_include" and not c["met"]]
        details: dict[str, Any] = {"checks": checks, "missing": missing}
        found = [
            (CHECKER_ERROR if c.get("error") else CRITERION_NOT_MET)(
                c["why"], evidence={"criterion": c["kind"], "value": c["value"]}
            )
            for c in checks
            if not c["met"]
        ]
        return make_score(self, trajectory, score=score, reason=reason, details=details, findings=found)

    def _fail(self, trajectory: Trajectory, kind: FindingKind, why: str) -> Score:
        return make_score(
            self, trajectory, score=0.0, reason=f"{why}; score=0", details={"checks": []}, findings=[kind(why)]
        )


def criteria_checks(output: str, case: Case) -> list[dict[str, Any]]:
    """Every check of the case's criteria on `output`: `{kind, value, met, why}`."""
    folded = output.casefold()
    checks: list[dict[str, Any]] = []
    for text in case.must_include:
        met = text.casefold() in folded
        checks.append(_check("must_include", text, met, f"missing {text!r}"))
    for text in case.must_not_include:
        met = text.casefold() not in folded
        checks.append(_check("must_not_include", text, met, f"must not include {text!r} but does"))
    for pattern in case.regex:
        met = re.search(pattern, output) is not None
        checks.append(_check("regex", pattern, met, f"no match for /{pattern}/"))
    if case.json_schema is not None:
        checks.append(_json_check(output, case.json_schema))
    if case.checker is not None:
        checks.append(_custom_check(output, case))
    return checks


def _check(kind: str, value: Any, met: bool, why: str) -> dict[str, Any]:
    return {"kind": kind, "value": value, "met": met, "why": None if met else why}


def _json_check(output: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The whole output when it is JSON, else its last fenced block, which must be JSON: an earlier
    block is a draft the answer went past, so a broken final block fails even after a valid draft."""
    blocks = _FENCED_JSON.findall(output)
    candidates = [output.strip()] + ([blocks[-1].strip()] if blocks else [])
    for text in candidates:
        try:
            value = json_loads(text)
        except ValueError:
            continue
        error = schema_error(schema, value)
        return _check("json_schema", None, error is None, f"output JSON not valid against json_schema: {error}")
    if blocks:
        return _check("json_schema", None, False, "the last ```json block of the output is not valid JSON")
    return _check("json_schema", None, False, "output is not JSON (nor holds a ```json block)")


def _custom_check(output: str, case: Case) -> dict[str, Any]:
    reference = case.checker or ""
    try:
        result = load_callable(reference)(output, case)
    except CallableError as exc:
        return {**_check("checker", reference, False, f"checker {reference} not loaded: {exc}"), "error": True}
    except Exception as exc:  # a broken checker fails its check; the run goes on
        why = f"checker {reference} raised {type(exc).__name__}: {exc}"
        return {**_check("checker", reference, False, why), "error": True}
    met, why = _verdict(result)
    return _check("checker", reference, met, f"checker {reference}: {why}")


def _verdict(result: Any) -> tuple[bool, str]:
    if isinstance(result, tuple) and len(result) == 2:
        return bool(result[0]), str(result[1])
    if isinstance(result, bool):
        return result, "returned False"
    if isinstance(result, int | float):
        return float(result) >= 1.0, f"returned {float(result):.3f} < 1"
    return bool(result), f"returned {result!r}"
