"""pytest plugin: `@pytest.mark.tracevals(k=5)` runs a test k times and passes only if all k pass.

    @pytest.mark.tracevals(k=5)                          # all 5 attempts must pass
    def test_refund(tracevals_ctx): ...

    @pytest.mark.tracevals(k=10, min_pass_hat=0.5, at=3)  # pass^3 over the 10 attempts >= 0.5

Each attempt runs under the harness's attempt span (task id = the test's node id, variant from
`--tracevals-variant`), so with `--tracevals-lake DIR` (or `TRACEVALS_LAKE`) every attempt lands in
the lake like a `tracevals run` attempt. Fixtures are set up once and shared by the k attempts; a
test that asks for the `tracevals_ctx` fixture gets each attempt's own `AttemptContext`.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import pytest

from tracevals import env
from tracevals.harness.attempts import run_attempt
from tracevals.harness.environment import commit_hash, harness_capture, lock_hash
from tracevals.model.attempt import AttemptContext
from tracevals.model.case import Case

_TELEMETRY_KEY = pytest.StashKey[Any]()
_RUN_KEY = pytest.StashKey[str]()
_MARKER_ARGS = {"k", "min_pass_hat", "at"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tracevals", "agent reliability (tracevals)")
    group.addoption(
        "--tracevals-lake",
        default=os.environ.get(env.LAKE),
        help="write every attempt's spans to this lake (default: $TRACEVALS_LAKE; unset: no spans kept)",
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
    lake = config.getoption("--tracevals-lake")
    if lake:
        from tracevals.instrumentation import instrument

        os.makedirs(lake, exist_ok=True)
        config.stash[_TELEMETRY_KEY] = instrument(lake=lake, capture_content=harness_capture(None))


def pytest_unconfigure(config: pytest.Config) -> None:
    telemetry = config.stash.get(_TELEMETRY_KEY, None)
    if telemetry is not None:
        telemetry.shutdown()


@pytest.fixture
def tracevals_ctx() -> AttemptContext:
    """The current attempt's context (replaced per attempt under `@pytest.mark.tracevals`)."""
    return AttemptContext.for_attempt("pytest", "adhoc", 1, "default")


def _pass_hat(c: int, n: int, k: int) -> float:
    return math.comb(c, k) / math.comb(n, k) if n >= k else math.nan


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a marked test k times (returning True tells pytest the call is done)."""
    marker = pyfuncitem.get_closest_marker("tracevals")
    if marker is None:
        return None
    unknown = sorted(set(marker.kwargs) - _MARKER_ARGS)
    if unknown:  # a misspelled argument (kk=3) must not be ignored
        raise pytest.UsageError(
            f"{pyfuncitem.nodeid}: tracevals marker got unknown argument(s) {', '.join(unknown)}; "
            f"valid: {', '.join(sorted(_MARKER_ARGS))}"
        )
    k = int(marker.kwargs.get("k", marker.args[0] if marker.args else 5))
    min_pass_hat = marker.kwargs.get("min_pass_hat")
    at = int(marker.kwargs.get("at") or k)
    if k < 1 or not 1 <= at <= k:
        raise pytest.UsageError(f"{pyfuncitem.nodeid}: tracevals marker needs k >= 1 and 1 <= at <= k (k={k}, at={at})")
    config = pyfuncitem.config
    test_fn = pyfuncitem.obj
    argnames = pyfuncitem._fixtureinfo.argnames
    base_args = {name: pyfuncitem.funcargs[name] for name in argnames}
    case = Case(case_id=pyfuncitem.nodeid, input="")
    variant = config.getoption("--tracevals-variant")

    def agent(_input: str, ctx: AttemptContext) -> str:
        args = dict(base_args)
        if "tracevals_ctx" in args:
            args["tracevals_ctx"] = ctx
        test_fn(**args)
        return "passed"

    commit, lock = commit_hash(), lock_hash()
    errors: list[str] = []
    for attempt in range(1, k + 1):
        ctx = AttemptContext.for_attempt(config.stash[_RUN_KEY], pyfuncitem.nodeid, attempt, variant)
        result = run_attempt(agent, case, ctx, commit, lock)
        if result.error is not None:
            errors.append(f"attempt {attempt}: {result.error}")
    telemetry = config.stash.get(_TELEMETRY_KEY, None)
    if telemetry is not None:
        telemetry.force_flush()
    passes = k - len(errors)
    ok = _pass_hat(passes, k, at) >= float(min_pass_hat) if min_pass_hat is not None else not errors
    if not ok:
        rule = (
            f"pass^{at} = {_pass_hat(passes, k, at):.3f} < {min_pass_hat}"
            if min_pass_hat is not None
            else "all must pass"
        )
        pytest.fail(f"{len(errors)} of {k} attempts failed ({rule}); first error: {errors[0]}", pytrace=False)
    return True
