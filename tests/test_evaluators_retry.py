"""`retry_discipline` on hand-built trajectories; hand calculations beside the expected numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tracevals.evaluators import Case, RetryDiscipline, Score, ToolCall, Trajectory
from tracevals.evaluators.testing import call, case, case_json, trajectory

KEYLESS = case(max_retries=2, require_idempotency_key=False)  # most tests are not about keys


def score_of(t: Trajectory, c: Case | None = KEYLESS) -> Score:
    result = RetryDiscipline().evaluate(t, c)
    assert result is not None
    json.dumps(result.details)
    return result


def send(t0: float, error: str | None = None, **kw: Any) -> ToolCall:
    """A 10 ms send_message call starting at t0 (ms)."""
    return call("send_message", {"to": "c1"}, start_ms=t0, end_ms=t0 + 10, error_type=error, **kw)


def test_retries_within_the_bound_pass() -> None:
    result = score_of(trajectory(send(0, "429"), send(20, "429"), send(40)))  # 1 failure, 2 retries
    assert (result.passed, result.score) == (True, 1.0)
    assert result.reason == ("3 calls, 2 retries in 1 chains (max per call 2), 0 flagged, 0 unknown; score=3/3=1.000")
    assert (result.evaluator, result.evaluator_version) == ("retry_discipline", 5)  # 4: typed findings, key warns;
    # 5: polling until the state changes is no loop


def test_retries_beyond_the_bound_are_flagged() -> None:
    t = trajectory(send(0, "429"), send(20, "429"), send(40, "429"), send(60, "429"))  # 3 retries, max 2
    result = score_of(t)
    assert (result.passed, result.score) == (False, 0.75)  # the 4th call flagged: 3/4
    assert result.details["flagged"] == ["send_message#4"]
    assert "send_message#1 retried 3 times (max 2)" in result.details["problems"]
    no_bound = score_of(t, case(require_idempotency_key=False, loop_repeats=5))
    assert no_bound.passed  # no case bound, and 3 repeats stay under a loop threshold of 5


def test_the_seeds_429_storm_retries_too_soon() -> None:
    # send_message → 429 (asks for 1 s), retried 0 ms after the failure ended, twice
    t = trajectory(*(send(10 * i, "429", retry_after_ms=1000) for i in range(3)))
    result = score_of(t)
    assert (result.passed, result.score) == (False, pytest.approx(1 / 3))  # 2 of 3 flagged: 1/3
    assert result.reason == (
        "3 calls, 2 retries in 1 chains (max per call 2), 2 flagged, 0 unknown; score=1/3=0.333; "
        "early retry send_message#2: waited 0ms < retry_after 1000ms; "
        "early retry send_message#3: waited 0ms < retry_after 1000ms"
    )


def test_a_retry_that_waited_long_enough_passes() -> None:
    assert score_of(trajectory(send(0, "429", retry_after_ms=1000), send(1010))).passed  # waited 1000 ms


def test_min_backoff_applies_to_429_and_timeouts_without_retry_after() -> None:
    c = case_json(retry_policy={"min_backoff_ms": 500, "require_idempotency_key": False})
    quick = trajectory(send(0, "Timeout"), send(100))  # waited 90 ms < 500
    result = score_of(quick, c)
    assert result.details["problems"] == ["early retry send_message#2: waited 90ms < retry_after 500ms"]
    assert score_of(trajectory(send(0, "Timeout"), send(600)), c).passed  # waited 590 ms
    assert score_of(quick).passed  # default min_backoff 0: only a named retry-after is enforced


def test_backoff_not_judged_without_times_is_unknown() -> None:
    untimed = trajectory(call("s", {"id": 1}, error_type="429", retry_after_ms=1000), call("s", {"id": 1}))
    result = score_of(untimed)
    assert (result.passed, result.score) == (True, 0.5)  # 1 of 2 verified
    assert result.reason.endswith("unknown: s#2: times not recorded, backoff not checked")


@pytest.mark.parametrize(
    ("failure", "flagged"),
    [
        ({"retryable": False, "status_code": 503}, True),  # the tool said so
        ({"status_code": 400}, True),  # a 4xx: the same request fails the same way
        ({"status_code": 404}, True),
        ({"status_code": 429}, False),  # rate limit: retryable
        ({"status_code": 408}, False),  # request timeout: retryable
        ({"status_code": 503}, False),
        ({"retryable": True, "status_code": 400}, False),  # the tool's word wins
    ],
)
def test_no_retry_of_non_retryable_errors(failure: dict[str, Any], flagged: bool) -> None:
    t = trajectory(send(0, "tool_error", **failure), send(5000))
    result = score_of(t)
    assert result.passed is not flagged
    if flagged:
        status = failure["status_code"]
        assert result.details["problems"] == [
            f"retried a non-retryable error: send_message#2 after {status} tool_error"
        ]


def refund(t0: float, error: str | None = None, key: str | None = None, **kw: Any) -> ToolCall:
    return call(
        "refund_order", {"order_id": "o5"}, start_ms=t0, end_ms=t0 + 10, error_type=error, effect="write",
        idempotency_key=key, **kw,
    )  # fmt: skip


def test_blind_replay_of_a_write_whose_outcome_is_unknown() -> None:
    t = trajectory(refund(0, "timeout", key="k1"), refund(100, key="k2"))  # a new key: the service cannot dedupe
    result = score_of(t)
    assert (result.passed, result.score) == (False, 0.5)  # 1 of 2 flagged
    assert result.details["problems"] == [
        "blind replay: refund_order#2 repeats refund_order#1 whose outcome is unknown (timeout), no read between"
    ]


def test_no_blind_replay_after_a_read_or_with_the_same_key() -> None:
    checked = trajectory(refund(0, "timeout"), call("get_orders", {"id": "c1"}, effect="read"), refund(100))
    assert not any(p.startswith("blind") for p in score_of(checked).details["problems"])
    same_key = trajectory(refund(0, "timeout", key="k1"), refund(100, key="k1"))
    assert score_of(same_key).passed
    not_a_write = trajectory(send(0, "timeout", effect="read"), send(100, effect="read"))
    assert score_of(not_a_write).passed


def test_idempotency_keys_on_side_effects() -> None:
    t = trajectory(
        call("get_orders", effect="read"),  # reads need none
        call("send_message", {"to": "c1"}, effect="write"),  # flagged
        call("send_message", {"to": "c2"}, effect="write", idempotency_key="k"),
        call("handoff_to_human", {"reason": "x"}, effect="write"),  # exempt
    )
    # required by the case: a failure, the call flagged
    result = score_of(t, case_json(retry_policy={"require_idempotency_key": True}))
    assert (result.passed, result.score) == (False, 0.75)  # 1 of 4 flagged: 3/4
    assert result.details["problems"] == ["no idempotency key: send_message#2 (write)"]
    [key] = [f for f in result.details["findings"] if f["kind"] == "missing_idempotency_key"]
    assert (key["severity"], key["step"], key["call"]) == ("failure", 2, "send_message#2")
    # by default: a warning of its own (the task is at best "needs confirmation"), not a failed attempt
    default = score_of(t, case())
    assert (default.passed, default.score) == (True, 1.0)
    [key] = default.details["findings"]
    assert (key["kind"], key["severity"], key["release"]) == (
        "missing_idempotency_key",
        "warning",
        "needs_confirmation",
    )
    waived = score_of(t, case_json(retry_policy={"require_idempotency_key": False}))
    assert waived.passed and waived.details["findings"] == []


def test_duplicate_side_effects() -> None:
    twice = trajectory(send(0, effect="write"), send(100, effect="write"))
    result = score_of(twice)
    assert (result.passed, result.score) == (False, 0.5)  # 1 of 2 flagged
    assert "duplicate side effect: send_message#2 repeats send_message#1" in result.reason
    fresh_keys = trajectory(
        call("send_message", {"to": "c1", "idempotency_key": "k1"}, effect="write", idempotency_key="k1"),
        call("send_message", {"to": "c1", "idempotency_key": "k2"}, effect="write", idempotency_key="k2"),
    )  # a new key per send hides nothing: the same operation, done twice
    assert score_of(fresh_keys).details["problems"] == ["duplicate side effect: send_message#2 repeats send_message#1"]
    keyed = trajectory(send(0, effect="write", idempotency_key="k1"), send(100, effect="write", idempotency_key="k1"))
    assert score_of(keyed).passed  # the same key: the service deduplicates
    assert score_of(trajectory(send(0, effect="read"), send(100, effect="read"))).passed
    other_args = trajectory(send(0, effect="write"), call("send_message", {"to": "c2"}, effect="write"))
    assert score_of(other_args).passed
    failed_then_done = score_of(trajectory(send(0, "503", effect="write"), send(100, effect="write")))
    assert failed_then_done.passed  # one side effect: the first send failed (a timeout would be a blind replay)


def test_a_loop_is_the_same_call_with_the_same_outcome_again_and_again() -> None:
    same = [call("search", {"q": "x"}, result='{"hits": []}') for _ in range(4)]
    result = score_of(trajectory(*same))
    # 4 identical calls = 3 repeats >= loop_repeats 3: the 4th call completes the loop; 3/4
    assert (result.passed, result.score) == (False, 0.75)
    assert result.details["problems"] == ["loop: [search#1] repeated 3 times with the same outcome"]
    assert score_of(trajectory(*same[:3])).passed  # 2 repeats: not yet


def test_a_cycle_without_progress_is_a_loop() -> None:
    a, b = call("get_status", {"id": 1}, result="pending"), call("wait", {"s": 1}, result="ok")
    result = score_of(trajectory(a, b, a, b, a, b, a, b))  # [a, b] repeated 3 times after the first
    assert result.details["problems"] == ["loop: [get_status#1, wait#2] repeated 3 times with the same outcome"]
    assert result.details["flagged"] == ["wait#8"]  # 7/8
    progress = [call("get_status", {"id": 1}, result=f"step {i}") for i in range(6)]
    assert score_of(trajectory(*progress)).passed  # a different answer each time is progress


def test_polling_until_the_state_changes_is_no_loop() -> None:
    """A correct agent waits for a job: the same status call, `pending` again and again, then `done`. It was told
    "endless loop" (a hazard: do not ship) once it polled four times; a repetition the same calls end with a new
    outcome is waiting that was answered. Stopping on the same outcome, moving on to another call, or failing the
    same way each time is still a loop (a failure repeated is a retry, however it ends)."""
    status = [call("get_job_status", {"job": 42}, result="pending") for _ in range(8)]
    done = call("get_job_status", {"job": 42}, result="done")
    assert score_of(trajectory(*status, done)).passed
    waits = [c for s in status for c in (s, call("wait", {"s": 5}, result="ok"))]  # a block of two, then done
    assert score_of(trajectory(*waits, done)).passed
    gave_up = score_of(trajectory(*status, call("notify", {"to": "ops"}, result="sent")))
    assert gave_up.details["problems"] == ["loop: [get_job_status#1] repeated 3 times with the same outcome"]
    assert not score_of(trajectory(*status)).passed  # never changed: the agent stopped on it
    other_job = call("get_job_status", {"job": 43}, result="done")
    assert not score_of(trajectory(*status, other_job)).passed  # another operation: no change of this one
    storm = trajectory(*(send(10 * i, "503") for i in range(5)), send(60))  # 4 repeats of a failure, then through
    assert score_of(storm, case(require_idempotency_key=False)).details["problems"] == [
        "loop: [send_message#1] repeated 3 times with the same outcome"
    ]


def test_the_loop_threshold_respects_max_retries() -> None:
    chain = trajectory(*(send(1000 * i, "503") for i in range(5)))  # 1 + 4 retries, all 503
    result = score_of(chain, case(max_retries=4, require_idempotency_key=False))
    assert result.passed  # 4 retries allowed by the bound, so a 1-call loop needs 5 repeats
    assert not score_of(chain, case(max_retries=3, require_idempotency_key=False)).passed


def test_corrected_args_or_an_interleaved_call_is_not_a_retry() -> None:
    corrected = trajectory(
        call("get_orders", {"customer_id": "张某"}, error_type="ValidationError"), call("get_orders", {"id": 1})
    )
    assert score_of(corrected, case(max_retries=0)).details["retries"] == 0
    interleaved = trajectory(send(0, "429"), call("check_status"), send(30))
    assert score_of(interleaved, case(max_retries=0)).details["retries"] == 0


def test_the_idempotency_key_is_not_part_of_the_operation() -> None:
    t = trajectory(
        call("send", {"to": "c1", "idempotency_key": "a"}, error_type="503"),
        call("send", {"to": "c1", "idempotency_key": "b"}),
    )
    assert score_of(t).details["retries"] == 1


def test_uncaptured_args_are_assumed_a_retry_and_marked_unknown() -> None:
    t = trajectory(call("get_orders", None, error_type="Timeout"), call("get_orders", None))
    result = score_of(t, case(max_retries=0))
    assert (result.passed, result.score) == (False, 0.5)  # 1 retry over a bound of 0: flagged; 1/2
    assert result.details["unknown"] == {}  # flagged calls are not also unknown
    hashed = trajectory(call("g", None, args_hash="h1", error_type="503"), call("g", None, args_hash="h2"))
    assert score_of(hashed).details["retries"] == 0  # the args hash tells the two calls apart


def test_not_applicable_to_an_empty_trajectory() -> None:
    assert RetryDiscipline().evaluate(trajectory(), case(max_retries=1)) is None
    assert RetryDiscipline().evaluate(trajectory(call("x", gap=True)), case(max_retries=1)) is None
