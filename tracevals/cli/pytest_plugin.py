"""pytest plugin: `@pytest.mark.tracevals(k=5)` runs a test k times and passes only if all k pass.

(The `pytest11` entry point. It lives beside the commands because, like `tracevals run`, it runs
attempts, scores them and reads their verdicts: the harness below it may not.)

    @pytest.mark.tracevals(k=5)                          # all 5 attempts must pass
    def test_refund(tracevals_ctx): ...

    @pytest.mark.tracevals(k=10, min_pass_hat=0.5, at=3)  # pass^3 over the 10 attempts >= 0.5

Each attempt runs under the harness's attempt span (task id = the test's node id, variant from
`--tracevals-variant`), so every attempt lands in the lake like a `tracevals run` attempt: in
`--tracevals-lake DIR` (or `TRACEVALS_LAKE`), else in a temporary lake removed at the end. An attempt's
verdict is the one every other surface gives: it is scored with the evaluators (`scoring.score_lake`,
against the test's case, which the run keeps in the lake as `tracevals run` keeps its task file), the
scores are stored, and `stats.outcomes` reads them. So an attempt passes when the test did not raise
and no finding of its scores fails (a ticket opened twice is a duplicate side effect, whatever the
test asserted), and `tracevals report` on the same lake counts the same passes and failures. Fixtures
are set up once and shared by the k attempts; a test that asks for the `tracevals_ctx` fixture gets
each attempt's own `AttemptContext`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import pytest

from tracevals import env
from tracevals.harness.attempts import AttemptResult, finished, run_attempt
from tracevals.harness.environment import commit_hash, harness_capture, lock_hash
from tracevals.model.attempt import AttemptContext
from tracevals.model.case import Case

_TELEMETRY_KEY = pytest.StashKey[Any]()
_RUN_KEY = pytest.StashKey[str]()
_LAKE_KEY = pytest.StashKey[str]()
_TEMP_KEY = pytest.StashKey[str]()
_MARKER_ARGS = {"k", "min_pass_hat", "at"}
_SOURCE = "pytest: the @pytest.mark.tracevals tests of this session"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tracevals", "agent reliability (tracevals)")
    group.addoption(
        "--tracevals-lake",
        default=os.environ.get(env.LAKE),
        help="write every attempt's spans and scores to this lake (default: $TRACEVALS_LAKE; unset: a temporary "
        "lake, removed at the end)",
    )
    group.addoption("--tracevals-variant", default="default", help="variant name recorded on every attempt")
    group.addoption("--tracevals-run-id", default=None, help="run id recorded on every attempt")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "tracevals(k=5, min_pass_hat=None, at=None): run the test k times; pass only when all pass, "
        "or when pass^at over the k attempts reaches min_pass_hat",
    )
    config.stash[_RUN_KEY] = config.getoption("--tracevals-run-id") or f"pytest-{time.strftime('%Y%m%dT%H%M%S')}"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """With any marked test: instrument (once) and keep the marked tests' cases with the run."""
    marked = [item for item in items if item.get_closest_marker("tracevals") is not None]
    if not marked or _LAKE_KEY in config.stash:
        return
    lake = config.getoption("--tracevals-lake")
    if not lake:
        lake = config.stash[_TEMP_KEY] = tempfile.mkdtemp(prefix="tracevals-pytest-")
    os.makedirs(lake, exist_ok=True)
    config.stash[_LAKE_KEY] = lake
    from tracevals.instrumentation import instrument
    from tracevals.lake.lake import Lake
    from tracevals.lake.run_cases import write_run_cases

    cases = _cases_text([item.nodeid for item in marked])
    write_run_cases(Lake.open(lake), config.stash[_RUN_KEY], cases, _SOURCE)
    config.stash[_TELEMETRY_KEY] = instrument(lake=lake, capture_content=harness_capture(None))


def pytest_unconfigure(config: pytest.Config) -> None:
    telemetry = config.stash.get(_TELEMETRY_KEY, None)
    if telemetry is not None:
        telemetry.shutdown()
    temporary = config.stash.get(_TEMP_KEY, None)
    if temporary is not None:
        shutil.rmtree(temporary, ignore_errors=True)


def _cases_text(nodeids: Sequence[str]) -> bytes:
    """The run's task file: one case per marked test (its node id, no input), as `tracevals run` keeps one."""
    return "".join(json.dumps({"case_id": n, "input": ""}) + "\n" for n in sorted(set(nodeids))).encode()


@pytest.fixture
def tracevals_ctx() -> AttemptContext:
    """The current attempt's context (replaced per attempt under `@pytest.mark.tracevals`)."""
    return AttemptContext.for_attempt("pytest", "adhoc", 1, "default")


def _pass_hat(c: int, n: int, k: int) -> float:
    return math.comb(c, k) / math.comb(n, k) if n >= k else math.nan


def _marker_args(item: pytest.Function, marker: pytest.Mark) -> tuple[int, Any, int]:
    unknown = sorted(set(marker.kwargs) - _MARKER_ARGS)
    if unknown:  # a misspelled argument (kk=3) must not be ignored
        raise pytest.UsageError(
            f"{item.nodeid}: tracevals marker got unknown argument(s) {', '.join(unknown)}; "
            f"valid: {', '.join(sorted(_MARKER_ARGS))}"
        )
    k = int(marker.kwargs.get("k", marker.args[0] if marker.args else 5))
    min_pass_hat = marker.kwargs.get("min_pass_hat")
    at = int(marker.kwargs.get("at") or k)
    if k < 1 or not 1 <= at <= k:
        raise pytest.UsageError(f"{item.nodeid}: tracevals marker needs k >= 1 and 1 <= at <= k (k={k}, at={at})")
    return k, min_pass_hat, at


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a marked test k times (returning True tells pytest the call is done)."""
    marker = pyfuncitem.get_closest_marker("tracevals")
    if marker is None:
        return None
    k, min_pass_hat, at = _marker_args(pyfuncitem, marker)
    config = pyfuncitem.config
    test_fn = pyfuncitem.obj
    base_args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    case = Case(case_id=pyfuncitem.nodeid, input="")
    variant = config.getoption("--tracevals-variant")

    def agent(_input: str, ctx: AttemptContext) -> str:
        args = dict(base_args)
        if "tracevals_ctx" in args:
            args["tracevals_ctx"] = ctx
        # an `async def` test awaited (and a generator read) as the harness does an agent's result: calling
        # it alone made a coroutine never awaited, and its attempts passed whatever it asserted
        finished(test_fn(**args))
        return "passed"

    commit, lock = commit_hash(), lock_hash()
    results = []
    for attempt in range(1, k + 1):
        ctx = AttemptContext.for_attempt(config.stash[_RUN_KEY], pyfuncitem.nodeid, attempt, variant)
        results.append(run_attempt(agent, case, ctx, commit, lock))
    telemetry = config.stash.get(_TELEMETRY_KEY, None)
    if telemetry is not None:
        telemetry.force_flush()
    failures = _verdicts(config, case, results)
    passes = k - len(failures)
    ok = _pass_hat(passes, k, at) >= float(min_pass_hat) if min_pass_hat is not None else not failures
    if not ok:
        rule = (
            f"pass^{at} = {_pass_hat(passes, k, at):.3f} < {min_pass_hat}"
            if min_pass_hat is not None
            else "all must pass"
        )
        from tracevals.cli.shared.output import shown  # only on a failure: pytest loads this plugin everywhere

        # shown as the CLI shows a value: a finding quotes what the agent did (a tool's arguments, a model's words)
        said = shown(f"{len(failures)} of {k} attempts failed ({rule}); first error: {failures[0]}")
        pytest.fail(said, pytrace=False)
    return True


def _verdicts(config: pytest.Config, case: Case, results: Sequence[AttemptResult]) -> list[str]:
    """Score the attempts with the evaluators, store the scores, and say why each failed attempt failed
    ("attempt 2: AssertionError: ...", "attempt 3: retry_discipline: duplicate side effect: ...")."""
    from tracevals.queries.selection import Selection
    from tracevals.scoring.offline import score_lake
    from tracevals.stats.outcomes import outcomes

    lake = config.stash[_LAKE_KEY]
    ids = tuple(r.trace_id for r in results)
    run = score_lake(lake, tasks=[case], selection=Selection(trace_ids=ids), write=True, keep_batch=True)
    mine = [t for t in run.trajectories() if t.trace_id in ids]
    verdicts = {o.trace_id: o for o in outcomes(mine, run.score_objects(), cases={case.case_id: case})}
    failures = []
    for result in results:
        o = verdicts.get(result.trace_id)
        if result.error is not None:
            failures.append(f"attempt {result.context.attempt}: {result.error}")
        elif o is None:
            failures.append(f"attempt {result.context.attempt}: its spans are not in the lake {lake}")
        elif not o.passed:
            why = next((f for f in o.findings if f.fails), None)
            said = f"{why.evaluator}: {why.message}" if why is not None else "no evaluator applied"
            failures.append(f"attempt {result.context.attempt}: {said}")
    return failures
