"""step_budget's screen settles the checks it cannot make for a reason it can name (an unpriced model, no
token counts, no times: "unknown, never a fail or a pass" of issue 35) with the evaluator's own verdict, so
a lake of an unpriced model is not scored one trace at a time in Python (issue 38: ~10 CPU-s of the
nightly job); everything else it leaves to `evaluate`, and the rows equal the reference's either way."""

from __future__ import annotations

import polars as pl
from test_evaluators_batch import assert_same

from tracevals.evaluators.scope import NO_CASE, Scope
from tracevals.evaluators.step_budget.evaluator import StepBudget
from tracevals.evaluators.testing import call, case_json, trajectory
from tracevals.model.batch import Batch

CASES = {
    "costed": case_json(
        case_id="costed",
        budgets={"max_cost_usd": 0.5, "max_steps": 9, "max_duration_s": 60},
        prices={"priced-model": {"input": 1.0, "output": 2.0}},
    ),
    "tokens": case_json(
        case_id="tokens",
        budgets={"max_tokens": 900, "max_cost_usd": 1, "max_tool_calls_per_tool": {"get": 1}},
        prices={"priced-model": {"input": 1.0, "output": 2.0}},  # the same table: cost is priced set-at-a-time
    ),
}


def _traces() -> list:  # type: ignore[type-arg]
    usage = {
        "unpriced": (("a-model-nobody-prices", 100, 10),),
        "two": (("priced-model", 10, 10), ("zz-unpriced", 5, 5), ("aa-unpriced", 5, 5)),
        "quote": (("it's-unpriced", 10, 1),),
        "none": ((None, 10, 1),),
        "priced": (("priced-model", 10, 10),),
    }
    out = []
    for task in ("costed", "tokens"):
        for name, used in usage.items():
            for times in ((1000.0, 2000.0), (0.0, 0.0)):
                for tokens in (110, 0):
                    out.append(
                        trajectory(
                            call("get", {"id": 1}, start_ms=1100, end_ms=1200),
                            trace_id=f"{task}-{name}-{times[0]}-{tokens}",
                            task_id=task,
                            model_calls=2,
                            input_tokens=tokens,
                            output_tokens=0,
                            start_ms=times[0],
                            end_ms=times[1],
                            model_usage=used,
                        )
                    )
    out.append(trajectory(call("get"), call("get"), trace_id="over", task_id="tokens", model_calls=1,
                          input_tokens=5, model_usage=(("nobody", 5, 0),)))  # fmt: skip
    out.append(trajectory(trace_id="no-usage", task_id="costed", model_calls=1, input_tokens=5, start_ms=1, end_ms=2))
    return out


def test_unknown_checks_are_settled_by_the_screen_as_evaluate_scores_them() -> None:
    traces = _traces()
    frame = assert_same(traces, CASES)  # the rows are the reference's
    budget = frame.filter(pl.col("evaluator") == "step_budget")
    assert budget.filter(
        pl.col("reason").str.contains("unknown \\(no price for model 'a-model-nobody-prices'\\)")
    ).height
    assert budget.get_column("passed").to_list().count(False) == 1  # "over": per-tool budget exceeded, only it
    batch = Batch.from_trajectories(traces)
    keyed = batch.traces.with_columns(
        case_key=pl.when(pl.col("task_id").is_in(list(CASES))).then(pl.col("task_id")).otherwise(pl.lit(NO_CASE))
    )
    status = dict(StepBudget().screen(Scope(Batch(keyed, batch.calls, batch.handoffs), CASES)).select(
        "trace_id", "status").iter_rows())  # fmt: skip
    assert status["over"] == "check"  # exceeded: the reference writes its reason
    settled = [t for t, s in status.items() if s == "clean"]
    assert len(settled) >= len(traces) - 2, status  # unknown cost, tokens, times: all settled
    assert status["costed-unpriced-0.0-0"] == "clean" and status["costed-none-1000.0-110"] == "clean"
