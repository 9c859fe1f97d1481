"""The pytest plugin, tested with pytester: k attempts, all must pass, the count and first error shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracevals.queries import open_lake

TESTS = """
import itertools
import pytest

flaky_calls = itertools.count(1)

@pytest.mark.tracevals(k=5)
def test_flaky():
    n = next(flaky_calls)
    assert n not in (2, 4), f"refunded the wrong order on call {n}"

@pytest.mark.tracevals(k=5)
def test_stable(tracevals_ctx):
    assert tracevals_ctx.task_id.endswith("test_stable")

threshold_calls = itertools.count(1)

@pytest.mark.tracevals(k=4, min_pass_hat=0.5, at=1)
def test_good_enough():
    assert next(threshold_calls) != 3
"""


def test_flaky_fails_with_the_count_and_stable_passes(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_agent=TESTS)
    lake = tmp_path / "lake"
    result = pytester.runpytest_subprocess("--tracevals-lake", str(lake), "--tracevals-run-id", "ci-1")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_flaky _*",
            "2 of 5 attempts failed (all must pass); first error: attempt 2: "
            "AssertionError: refunded the wrong order on call 2",
        ]
    )
    con = open_lake(lake)
    rows = con.execute(
        "select task_id, count(*), count(error) from runs where run_id = 'ci-1' group by task_id order by task_id"
    ).fetchall()
    assert [(t.split("::")[-1], n, e) for t, n, e in rows] == [
        ("test_flaky", 5, 2),
        ("test_good_enough", 4, 1),
        ("test_stable", 5, 0),
    ]


ASYNC_TESTS = """
import asyncio
import itertools
import pytest

calls = itertools.count(1)

@pytest.mark.tracevals(k=3)
async def test_async_agent(tracevals_ctx):
    await asyncio.sleep(0)
    assert next(calls) != 2, f"attempt {tracevals_ctx.attempt} answered wrong"

@pytest.mark.tracevals(k=2)
async def test_async_fine():
    await asyncio.sleep(0)
"""


def test_an_async_test_is_awaited_and_can_fail(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """An `async def` test under the marker passed whatever it asserted: the plugin called it, which only
    made a coroutine, never awaited. It is awaited as the harness awaits an async agent's answer."""
    pytester.makepyfile(test_async=ASYNC_TESTS)
    result = pytester.runpytest_subprocess("--tracevals-lake", str(tmp_path / "lake"), "-W", "error::RuntimeWarning")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*1 of 3 attempts failed (all must pass); first error: attempt 2: AssertionError: attempt 2 answered wrong*"]
    )


def test_unmarked_tests_run_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="calls = []\ndef test_once():\n    calls.append(1)\n    assert len(calls) == 1\n")
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_a_misspelled_marker_argument_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_typo="""
import pytest

@pytest.mark.tracevals(kk=3)
def test_once():
    pass
"""
    )
    result = pytester.runpytest_subprocess()
    assert result.ret != 0
    output = "\n".join(result.outlines + result.errlines)
    assert "tracevals marker got unknown argument(s) kk; valid: at, k, min_pass_hat" in output


TICKETS = """
import pytest
import tracevals

@tracevals.tool(effect="write")
def open_ticket(summary: str) -> str:
    return "T-1"

@pytest.mark.tracevals(k=5)
def test_ticket(tracevals_ctx):
    open_ticket("printer broken")
    if tracevals_ctx.attempt == 3:
        open_ticket("printer broken")  # the same ticket again: a duplicate side effect, nothing asserted
"""


def test_the_plugin_scores_with_the_evaluators_and_report_agrees(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Issue 35: the test passed (nothing raised) while `report` on the same lake said 4/5, do not ship."""
    import json

    from click.testing import CliRunner

    from tracevals.cli import main

    pytester.makepyfile(test_tickets=TICKETS)
    lake = tmp_path / "lake"
    result = pytester.runpytest_subprocess("--tracevals-lake", str(lake), "--tracevals-run-id", "ci-2")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "1 of 5 attempts failed (all must pass); first error: attempt 3: retry_discipline: "
            "duplicate side effect: open_ticket#2 repeats open_ticket#1"
        ]
    )
    out = tmp_path / "report.json"
    reported = CliRunner().invoke(main, ["report", "--lake", str(lake), "--run", "ci-2", "--out", str(out)])
    assert reported.exit_code == 0, reported.output
    doc = json.loads(out.read_text())
    assert doc["meta"]["scores_computed"] == 0  # the plugin stored its verdicts: read, not recomputed
    [task] = doc["variants"]["default"]["tasks"]
    assert (task["n"], task["c"], task["category"]) == (5, 4, "do_not_ship")
    assert [a["attempt"] for a in doc["attempts"] if not a["passed"]] == [3]
    # without a lake the verdict is the same (a temporary lake, removed at the end)
    again = pytester.runpytest_subprocess()
    again.assert_outcomes(failed=1)


def test_a_failure_shows_what_it_quotes_escaped(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A failed attempt's line quotes what the agent did or said (a finding, an exception's message): a value a
    terminal would act on (a clear-screen, a window title, a bidi override) is shown as its escape, as the
    CLI's tables and error lines show it."""
    pytester.makepyfile(
        test_hostile="""
import pytest

@pytest.mark.tracevals(k=1)
def test_hostile():
    raise AssertionError("the model said \\x1b[2J\\x1b]0;pwned\\x07\\u202eevil")
"""
    )
    result = pytester.runpytest_subprocess("--tracevals-lake", str(tmp_path / "lake"), "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    said = next(line for line in result.outlines if "1 of 1 attempts failed" in line)
    assert "\x1b" not in said and "\u202e" not in said, said
    assert "the model said \\u001b[2J\\u001b]0;pwned\\u0007\\u202eevil" in said, said
