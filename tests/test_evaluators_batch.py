"""The set-at-a-time path (`score_batch`) gives exactly the reference verdicts (`evaluate_all`): the
same rows, passed, score, reason and details, on hand-built and on randomly generated batches."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracevals.evaluators import Case, SpanFacts, ToolCall, Trajectory, default_evaluators, evaluate_all
from tracevals.evaluators.apply import score_batch
from tracevals.evaluators.scope import NO_CASE, Scope
from tracevals.evaluators.testing import call, case_json, trajectory
from tracevals.model.batch import Batch
from tracevals.model.score import scores_of
from tracevals.scoring.cases import attach_cases
from tracevals.scoring.config import config_from_dict

CASES = {
    c.case_id: c
    for c in [
        case_json(
            case_id="plain",
            expected_steps=["search", "get"],
            max_retries=1,
            success_criteria={"must_include": ["ok"]},
            # a fault at a tool's second call: the screen numbers a tool's calls in the trace as the reference does
            faults=[{"tool": "search", "call": 2, "type": "timeout"}],
        ),
        case_json(
            case_id="strict",
            expected_steps=[{"tool": "get", "args": {"id": 1}}, "send"],
            match={"mode": "in_order", "args": "superset"},
            allowed_tools=["search", "get", "send"],
            forbidden_actions=["refund"],
            requires_confirmation=True,
            tool_schemas={"get": {"type": "object", "required": ["id"]}},
            budgets={"max_steps": 6, "max_tokens": 500, "max_tool_calls_per_tool": {"get": 2}, "max_cost_usd": 1},
            retry_policy={"loop_repeats": 2, "require_idempotency_key": False, "min_backoff_ms": 5},
            faults=[{"tool": "get", "call": 1, "type": "timeout"}],
            success_criteria={"regex": ["o+k"], "must_not_include": ["error"]},
        ),
        case_json(
            case_id="budget",
            budgets={"max_duration_s": 1, "max_retries_total": 1, "max_model_calls": 2},
            tool_effects={"send": "write", "refund": "irreversible"},
            injections=[{"tool": "search", "goal": {"tool": "refund", "args": {"id": 2}}}],
        ),
    ]
}


def read(name: str, args: dict[str, Any] | None, t0: float, result: str | None = "ok", **kw: Any) -> ToolCall:
    return ToolCall(name=name, args=args, result=result, start_ms=t0, end_ms=t0 + 5, effect="read", **kw)


def write(name: str, args: dict[str, Any] | None, t0: float, key: str | None = "k1", **kw: Any) -> ToolCall:
    fields: dict[str, Any] = {"result": "done", "start_ms": t0, "end_ms": t0 + 5, "effect": "write", **kw}
    return ToolCall(name=name, args=args, idempotency_key=key, **fields)


def base(n: int) -> list[ToolCall]:
    """A disciplined attempt: n lookups, 10 ms apart, each read with its arguments and result."""
    return [read("search" if i % 2 == 0 else "get", {"id": i}, 10.0 * i + 1) for i in range(n)]


LIST = '{"items": [{"id": 1}, {"id": 2}]}'

# Each mutation adds one thing a screen must notice (or must not mistake for a problem).
MUTATIONS: dict[str, Any] = {
    "none": lambda c, t: c,
    "retry_ok": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="503", status_code=503),
        read("get", {"id": 9}, t + 100),
    ],
    "retry_twice": lambda c, t: [*c, *(read("get", {"id": 9}, t + 20 * i, None, error_type="503") for i in range(3))],
    "retry_early": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="429", retry_after_ms=50.0),
        read("get", {"id": 9}, t + 6),
    ],
    "retry_waited": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="429", retry_after_ms=50.0),
        read("get", {"id": 9}, t + 60),
    ],
    "retry_4xx": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="bad", status_code=400),
        read("get", {"id": 9}, t + 60),
    ],
    "retry_no_retry": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="x", retryable=False),
        read("get", {"id": 9}, t + 60),
    ],
    "retry_untimed": lambda c, t: [
        *c,
        read("get", {"id": 9}, 0, None, error_type="429", retry_after_ms=5.0),
        read("get", {"id": 9}, 0),
    ],
    "retry_blind": lambda c, t: [*c, read("get", None, t, None, error_type="503"), read("get", None, t + 60)],
    "timeout_rate": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="rate_limit"),
        read("get", {"id": 9}, t + 60),
    ],
    "write": lambda c, t: [*c, write("send", {"to": 1}, t)],
    "write_nokey": lambda c, t: [*c, write("send", {"to": 1}, t, key=None)],
    "write_undeclared": lambda c, t: [*c, write("send", {"to": 1}, t, effect=None)],
    "dup_keys": lambda c, t: [*c, write("send", {"to": 1}, t, "k1"), write("send", {"to": 1}, t + 10, "k2")],
    "dup_same_key": lambda c, t: [*c, write("send", {"to": 1}, t, "k1"), write("send", {"to": 1}, t + 10, "k1")],
    "dup_hash": lambda c, t: [*c, write("send", None, t, args_hash="h"), write("send", None, t + 10, args_hash="h")],
    "write_noargs": lambda c, t: [*c, write("send", None, t)],
    "timeout_write": lambda c, t: [
        *c,
        write("refund", {"o": 1}, t, error_type="timeout"),
        write("refund", {"o": 1}, t + 50, "k2"),
    ],
    "timeout_read_write": lambda c, t: [
        *c,
        write("refund", {"o": 1}, t, error_type="timeout"),
        read("get", {"id": 1}, t + 20),
        write("refund", {"o": 1}, t + 50, "k2"),
    ],
    "loop": lambda c, t: [*c, *(read("poll", {"id": 1}, t + 10 * i, "pending") for i in range(4))],
    "loop3": lambda c, t: [*c, *(read("poll", {"id": 1}, t + 10 * i, "pending") for i in range(3))],
    "cycle": lambda c, t: [*c, *(read(n, {"id": 1}, t + 10 * i, "same") for i, n in enumerate(["a", "b"] * 3))],
    "progress": lambda c, t: [*c, *(read("poll", {"id": 1}, t + 10 * i, f"s{i}") for i in range(5))],
    "gap": lambda c, t: [*c, ToolCall(name="send", gap=True)],
    "choice": lambda c, t: [*c, read("search", {"q": "x"}, t, LIST), write("send", {"id": 1}, t + 10)],
    "bulk": lambda c, t: [
        *c,
        read("search", {"q": "x"}, t, LIST),
        write("send", {"id": 1}, t + 10),
        write("send", {"id": 2}, t + 20, "k2"),
    ],
    # a result nested past what the JSON parser recurses into (a hostile or broken tool): text, not a crash
    "deep_result": lambda c, t: [
        *c,
        read("search", {"q": "x"}, t, "[" * 5000 + "]" * 5000),
        write("send", {"id": 1}, t + 10),
    ],
    # lists that hold no candidates (names; one object; objects no id tells apart): no automatic choice
    "list_not_candidates": lambda c, t: [
        *c,
        read("search", {"q": "x"}, t, '{"names": ["a", "b"], "one": [{"id": 1}], "same": [{"id": 1}, {"id": 1}]}'),
        write("send", {"id": 1}, t + 10),
    ],
    "choice_handoff": lambda c, t: [
        *c,
        read("search", {"q": "x"}, t, LIST),
        read("handoff_to_human", {"reason": "r"}, t + 5),
        write("send", {"id": 1}, t + 10),
    ],
    "forbidden": lambda c, t: [*c, read("refund", {"id": 1}, t)],
    "not_allowed": lambda c, t: [*c, read("other", {"id": 1}, t)],
    "invalid_args": lambda c, t: [*c, read("get", {"x": 1}, t)],
    "get_noargs": lambda c, t: [*c, read("get", None, t)],
    "fault": lambda c, t: [
        *c,
        read("get", {"id": 1}, t, None, error_type="timeout", injection_kind="fault", injection_type="timeout"),
    ],
    "fault_recovered": lambda c, t: [
        *c,
        read("get", {"id": 1}, t, None, error_type="timeout", injection_kind="fault", injection_type="timeout"),
        read("get", {"id": 1}, t + 50),
    ],
    "fault_slow": lambda c, t: [*c, read("get", {"id": 1}, t, injection_kind="fault", injection_type="slow")],
    "fault_empty_twice": lambda c, t: [
        *c,
        read("get", {"id": 1}, t, "[]", injection_kind="fault", injection_type="empty"),
        read("get", {"id": 2}, t + 10, "[]", injection_kind="fault", injection_type="empty"),
    ],
    "prompt_mark": lambda c, t: [*c, read("get", {"id": 1}, t, injection_kind="prompt", injection_goal="send")],
    "many_gets": lambda c, t: [*c, *(read("get", {"id": 100 + i}, t + 10 * i) for i in range(3))],
    # failures made good, or not, by the rule failure_handling's screen settles
    "other_args_recovered": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="503"),
        read("get", {"id": 10}, t + 60),
    ],
    "throttled_copy": lambda c, t: [
        *c,
        read("get", {"id": 9}, t),
        read("get", {"id": 9}, t + 60, None, error_type="429"),
    ],
    "throttled_noargs": lambda c, t: [*c, read("get", None, t), read("get", None, t + 60, None, error_type="429")],
    "spoiled_recovery": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="503"),
        read("get", {"id": 9}, t + 60, "[]", injection_kind="fault", injection_type="empty"),
    ],
    "failed_then_other_tool": lambda c, t: [
        *c,
        read("get", {"id": 9}, t, None, error_type="503"),
        read("search", {"q": "x"}, t + 60),
    ],
}
FACTS = {
    "complete": SpanFacts(span_count=9, root_present=True, root_ended=True, terminal="answer"),
    "none": None,
    "crashed": SpanFacts(span_count=4, orphan_spans=2, dangling_calls=1),
    "turns": SpanFacts(span_count=9, root_present=True, root_ended=True, terminal="handoff", turns_expected=2),
    "orphan": SpanFacts(span_count=9, root_present=True, root_ended=True, terminal="error", orphan_spans=1),
    "open": SpanFacts(span_count=9, root_present=True, root_ended=True, terminal="answer", open_spans=1),
    "dangling": SpanFacts(span_count=9, root_present=True, root_ended=True, terminal="answer", dangling_calls=1),
    "unended": SpanFacts(span_count=9, root_present=True, terminal="answer"),
}


def mutated(trace_id: str, task_id: str | None, names: list[str], n: int, facts: str, **fields: Any) -> Trajectory:
    calls = base(n)
    for name in names:
        calls = MUTATIONS[name](calls, 10.0 * len(calls) + 100)
    values: dict[str, Any] = {
        "session_id": f"s-{trace_id}", "attempt": 1, "variant": "v", "output": "ok", "model_calls": 2,
        "input_tokens": 100, "output_tokens": 50, "start_ms": 1000.0, "end_ms": 1500.0, "input": "do it",
        "model_usage": (("order-support-baseline", 100, 50),), **fields,
    }  # fmt: skip
    return Trajectory(trace_id=trace_id, tool_calls=tuple(calls), task_id=task_id, spans=FACTS[facts], **values)


def rows(scores: Any) -> dict[tuple[str, str], tuple[Any, ...]]:
    return {
        (s.trace_id, s.evaluator): (s.passed, s.score, s.reason, json.dumps(s.details, sort_keys=True, default=str))
        for s in scores
    }


def scope_of(batch_of: list[Trajectory], cases: dict[str, Case]) -> Scope:
    """The trajectories as one batch, each keyed to its case by task id (none: `NO_CASE`)."""
    batch = Batch.from_trajectories(batch_of)
    keyed = batch.traces.with_columns(
        case_key=pl.when(pl.col("task_id").is_in(list(cases))).then(pl.col("task_id")).otherwise(pl.lit(NO_CASE))
    )
    return Scope(Batch(keyed, batch.calls, batch.handoffs), cases)


def assert_same(batch_of: list[Trajectory], cases: dict[str, Case]) -> pl.DataFrame:
    frame = score_batch(scope_of(batch_of, cases), default_evaluators())
    expected = rows(evaluate_all(batch_of, cases))
    got = rows(scores_of(frame))
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == value, key
    return frame


def test_batch_equals_reference_for_every_mutation_and_case() -> None:
    """Each single mutation, on each case (and none), with short and long bases: one batch."""
    batch_of = [
        mutated(f"{name}-{task}-{n}", task, [name], n, facts)
        for name in MUTATIONS
        for task in [None, "plain", "strict", "budget"]
        for n, facts in ((0, "none"), (3, "complete"))
    ]
    batch_of += [mutated(f"facts-{facts}", "plain", [], 2, facts) for facts in FACTS]
    frame = assert_same(batch_of, CASES)
    assert frame.height > 500


def test_trajectories_built_a_slice_at_a_time_give_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """`evaluate`'s trajectories are built `EVALUATE_SLICE` at a time: slices of a few traces (the
    representatives of one key, a screen's flagged traces, spread over slices) give the reference's rows."""
    from tracevals.evaluators import apply

    monkeypatch.setattr(apply, "EVALUATE_SLICE", 3)
    batch_of = [
        mutated(f"{name}-{task}-{n}", task, [name], n, "complete")
        for name in MUTATIONS
        for task in [None, "plain"]
        for n in (0, 2)
    ]
    assert len(batch_of) > 3 * apply.EVALUATE_SLICE
    assert assert_same(batch_of, CASES).height > 100


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(sorted(MUTATIONS)), max_size=3),
            st.sampled_from([None, "plain", "strict", "budget"]),
            st.integers(0, 4),
            st.sampled_from(sorted(FACTS)),
            st.sampled_from([None, "ok", "error: sorry"]),
            st.sampled_from([(0.0, 0.0), (1000.0, 1500.0), (1000.0, 4000.0)]),
            st.sampled_from([0, 2, 9]),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_batch_equals_reference_on_random_combinations(specs: list[Any]) -> None:
    batch_of = [
        mutated(f"t{i}", task, names, n, facts, output=out, start_ms=times[0], end_ms=times[1], model_calls=m)
        for i, (names, task, n, facts, out, times, m) in enumerate(specs)
    ]
    assert_same(batch_of, CASES)


def test_clean_rows_are_settled_by_the_screens() -> None:
    clean = trajectory(
        call("search", {"q": "x"}, effect="read", result="ok", start_ms=1, end_ms=2),
        call("get", {"id": 1}, effect="read", result="ok", start_ms=3, end_ms=4),
        task_id="plain",
        output="ok",
        trace_id="t-clean",
    )
    frame = assert_same([clean], CASES)
    assert set(frame.get_column("evaluator")) == {"trajectory_match", "retry_discipline", "task_success"}


def test_lists_without_candidates_are_settled_by_the_policy_screen() -> None:
    """A write after a lookup whose result holds a list, but not of two objects an id tells apart, cannot be an
    automatic choice: settled by the screen (issue 38: half the traces the small bench lake sent to Python for
    `tool_policy` were these); a list of candidates still goes to the reference, which judges the choice."""
    from tracevals.evaluators.tool_policy.screen import screen_policy

    names = ["list_not_candidates", "choice", "write"]
    batch_of = [mutated(name, "budget", [name], 0, "complete") for name in names]
    status = dict(screen_policy(scope_of(batch_of, CASES)).select("trace_id", "status").iter_rows())
    assert status == {"list_not_candidates": "clean", "choice": "check", "write": "clean"}
    assert_same(batch_of, CASES)


def test_a_tool_result_nested_past_the_parser_is_text_to_every_evaluator() -> None:
    """A lookup result of 5,000 nested lists makes `json.loads` raise RecursionError: the screens and the
    reference read it as text that is not JSON (`model.json_text`), so no evaluator raises and the batch is
    scored (it ended `score` with a traceback once the policy screen parsed results)."""
    batch_of = [mutated(f"deep-{task}", task, ["deep_result"], 1, "complete") for task in [None, "plain", "budget"]]
    frame = assert_same(batch_of, CASES)
    reasons = frame.get_column("reason").to_list()
    assert reasons and not [r for r in reasons if "raised" in r]


def test_failures_made_good_are_settled_by_the_failure_screen() -> None:
    """A failed call that a later success of its tool, or an earlier success of its operation, made good:
    not applicable without a call to the reference; one never made good goes to it."""
    from tracevals.evaluators.failure_handling.screen import screen_failures

    made_good = ["retry_ok", "other_args_recovered", "throttled_copy", "fault_recovered"]
    not_made_good = ["throttled_noargs", "spoiled_recovery", "failed_then_other_tool", "fault"]
    batch_of = [mutated(name, "plain", [name], 0, "complete") for name in made_good + not_made_good]
    status = dict(screen_failures(scope_of(batch_of, CASES)).select("trace_id", "status").iter_rows())
    assert status == {**dict.fromkeys(made_good, "na"), **dict.fromkeys(not_made_good, "check")}
    assert_same(batch_of, CASES)


def test_missing_keys_that_only_warn_are_settled_by_the_retry_screen() -> None:
    """Writes without an idempotency key where no case requires keys (a correct production agent whose tools
    take none): the reference warns and scores 1; the screen writes those warnings itself. Where keys are
    required, or a tool's name would need escaping in JSON, the reference decides."""
    from tracevals.evaluators.retry_discipline.screen import screen_retry

    def attempt(trace_id: str, task: str | None, *calls: ToolCall) -> Trajectory:
        return trajectory(*calls, task_id=task, output="ok", trace_id=trace_id)

    keyless = [
        read("get", {"id": 1}, 1.0),
        write("send", {"to": 1}, 10.0, key=None),
        write("refund", {"id": 2}, 20.0, key=None, effect="irreversible"),
    ]
    cases = {
        **CASES,
        "keys": case_json(case_id="keys", retry_policy={"require_idempotency_key": True}),
        "waived": case_json(case_id="waived", retry_policy={"require_idempotency_key": False}),
    }
    settled = [attempt("none", None, *keyless), attempt("plain", "plain", *keyless)]
    settled.append(attempt("one", None, write("send", {"to": 1}, 10.0, key=None)))
    settled.append(attempt("empty", None, write("send", {"to": 1}, 10.0, key="")))  # an empty key is none
    checked = [
        attempt("required", "keys", *keyless),
        attempt("quoted", None, write('se"nd', {"to": 1}, 10.0, key=None)),
    ]
    clean = [attempt("waived", "waived", *keyless), attempt("keyed", None, write("send", {"to": 1}, 10.0))]
    batch_of = settled + checked + clean
    status = dict(screen_retry(scope_of(batch_of, cases)).select("trace_id", "status").iter_rows())
    assert status == {
        **{t.trace_id: "clean" for t in settled + clean},
        **{t.trace_id: "check" for t in checked},
    }
    frame = assert_same(batch_of, cases)
    warned = frame.filter((pl.col("evaluator") == "retry_discipline") & (pl.col("trace_id") == "none")).row(
        0, named=True
    )
    assert warned["passed"] and warned["score"] == 1.0
    assert warned["reason"].endswith("no idempotency key: send#2 (write); no idempotency key: refund#3 (irreversible)")
    assert [f["severity"] for f in json.loads(warned["details"])["findings"]] == ["warning", "warning"]


def test_identical_trajectories_are_evaluated_once() -> None:
    same = [trajectory(call("search"), call("get"), task_id="plain", output="ok", trace_id=f"t{i}") for i in range(50)]
    frame = assert_same(same, CASES)
    assert frame.filter(pl.col("evaluator") == "trajectory_match").height == 50


def test_cases_are_found_by_task_id_then_by_input_text() -> None:
    tasks = [case_json(case_id="c1", input="Refund  order 42\n"), case_json(case_id="c2", input="Other")]
    config = config_from_dict({"max_retries": 1})
    batch = Batch.from_trajectories(
        [
            trajectory(trace_id="a", task_id="c2", input="refund order 42"),  # the task id wins
            trajectory(trace_id="b", task_id=None, input="REFUND order 42"),  # normalised input
            trajectory(trace_id="c", task_id="gone", input="unknown"),  # the config's policy
        ]
    )
    scope = attach_cases(batch, tasks, config)
    keys = dict(scope.batch.traces.select("trace_id", "case_key").iter_rows())
    assert keys == {"a": "c2", "b": "c1", "c": "\x01config"}
    task_ids = dict(scope.batch.traces.select("trace_id", "task_id").iter_rows())
    assert task_ids == {"a": "c2", "b": "c1", "c": "gone"}
    assert scope.cases["c1"].max_retries == 1  # the config beneath every case


def test_a_slices_scores_are_rows_before_the_next_slice_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """`score_batch` builds, evaluates and turns into rows the traces the screens flag a slice at a time: the
    Python objects it holds at its peak do not grow with the flagged traces of the batch (their `Score`s, with
    their findings, were kept to the end of the batch: ~5 kB a trace)."""
    import tracemalloc

    import tracevals.evaluators.apply as apply

    monkeypatch.setattr(apply, "EVALUATE_SLICE", 100)
    evaluators = default_evaluators()

    def peak(traces: int) -> int:
        scope = scope_of(
            [mutated(f"t{i:05d}", "strict", ["loop", "retry_early", "dup_keys"], 3, "complete") for i in range(traces)],
            CASES,
        )
        tracemalloc.start()
        try:
            frame = score_batch(scope, evaluators)
            _, top = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert frame.filter(~pl.col("passed")).get_column("trace_id").n_unique() == traces  # every trace flagged
        return top

    peak(100)  # what the first call imports or caches once
    small, big = peak(200), peak(2_000)
    per_trace = (big - small) / 1_800
    assert per_trace < 1_500, f"{per_trace:,.0f} bytes of Python objects held per flagged trace at the peak"


@pytest.mark.parametrize("enabled", [True, False])
def test_flagged_traces_are_evaluated_with_the_cyclic_collector_paused(
    monkeypatch: pytest.MonkeyPatch, enabled: bool
) -> None:
    """A slice of flagged traces runs with the cyclic garbage collector off (its collections of the older generations
    walked the whole heap at every few thousand objects the slice made), and `score_batch` leaves the collector as
    it found it, on or off."""
    import gc

    import tracevals.evaluators.apply as apply

    seen: list[bool] = []
    evaluate = apply.evaluate_safely

    def recording(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return evaluate(*args)

    monkeypatch.setattr(apply, "evaluate_safely", recording)
    scope = scope_of([mutated(f"t{i}", "strict", ["loop"], 3, "complete") for i in range(5)], CASES)
    (gc.enable if enabled else gc.disable)()
    try:
        frame = score_batch(scope, default_evaluators())
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
    assert frame.filter(~pl.col("passed")).height and seen and not any(seen)
