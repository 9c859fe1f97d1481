"""Run an agent on task cases k times: every attempt one trace, recorded, none discarded.

This is the thin harness behind `tracevals demo`; `tracevals run` grows from it. Each attempt runs
inside a root span that carries the run id, task id, attempt, variant, seed, commit and lock hash,
and the attempt's output, or its exception's type and message, which is recorded, never swallowed
silently. The explicit session-end marker closes every attempt's session.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import subprocess
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from tracevals import attributes as tv
from tracevals.context import AttemptContext
from tracevals.evaluators.model import Case
from tracevals.instrumentation.context import end_session, session

AgentFn = Callable[[str, AttemptContext], Any]

_TRACER = "tracevals.harness"
_LOCK_FILES = ("requirements.lock", "uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock", "requirements.txt")


@dataclass(frozen=True)
class AttemptResult:
    context: AttemptContext
    output: str | None
    error: str | None  # "TypeName: message" when the agent raised
    trace_id: str


def commit_hash(cwd: Path | None = None) -> str:
    """The current git commit (with `-dirty` when the tree has changes), or `unknown`."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}-dirty" if dirty else head


def lock_hash(cwd: Path | None = None) -> str:
    """sha256 (first 16 hex digits) of the first lock file found in `cwd`, or `none`."""
    base = cwd or Path.cwd()
    for name in _LOCK_FILES:
        path = base / name
        if path.is_file():
            return f"{name}:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"
    return "none"


def run_attempt(agent: AgentFn, case: Case, ctx: AttemptContext, commit: str, lock: str) -> AttemptResult:
    """Run one attempt of `case` under its root span; never raises for the agent's exceptions."""
    tracer = trace.get_tracer(_TRACER)
    output: str | None = None
    error: str | None = None
    span_name = f"attempt {case.case_id}"
    with session(ctx.session_id), tracer.start_as_current_span(span_name, kind=SpanKind.INTERNAL) as root:
        root.set_attribute(tv.RUN_ID, ctx.run_id)
        root.set_attribute(tv.TASK_ID, ctx.task_id)
        root.set_attribute(tv.ATTEMPT, ctx.attempt)
        root.set_attribute(tv.VARIANT, ctx.variant)
        root.set_attribute(tv.SEED, ctx.seed)
        root.set_attribute(tv.COMMIT, commit)
        root.set_attribute(tv.LOCK_HASH, lock)
        root.set_attribute(tv.IDEMPOTENCY_KEY, ctx.idempotency_key)
        try:
            result = agent(case.input, ctx)
            if inspect.isawaitable(result):
                result = asyncio.run(_await(result))
            output = "" if result is None else str(result)
            root.set_attribute(tv.ATTEMPT_OUTPUT, output)
        except Exception as exc:  # recorded on the span and in the result, never lost
            error = f"{type(exc).__qualname__}: {exc}"
            root.set_attribute(tv.ATTEMPT_ERROR, error)
            root.set_attribute("error.type", type(exc).__qualname__)
            root.record_exception(exc)
            root.set_status(Status(StatusCode.ERROR, error[:500]))
        end_session(ctx.session_id, status="finished" if error is None else "error")
        trace_id = f"{root.get_span_context().trace_id:032x}"
    return AttemptResult(context=ctx, output=output, error=error, trace_id=trace_id)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def run_cases(
    agent: AgentFn,
    cases: Iterable[Case],
    *,
    k: int,
    run_id: str,
    variant: str,
    seed: int = 0,
    concurrency: int = 4,
    settings: dict[str, Any] | None = None,
    case_settings: Callable[[Case], dict[str, Any]] | None = None,
    on_done: Callable[[AttemptResult], None] | None = None,
) -> list[AttemptResult]:
    """Run every case k times (attempts 1..k) for one variant; results in case and attempt order."""
    commit, lock = commit_hash(), lock_hash()
    jobs: list[tuple[Case, AttemptContext]] = []
    for case in cases:
        extra = dict(settings or {})
        if case_settings is not None:
            extra.update(case_settings(case))
        for attempt in range(1, k + 1):
            ctx = AttemptContext.for_attempt(run_id, case.case_id, attempt, variant, seed, **extra)
            jobs.append((case, ctx))
    results: dict[int, AttemptResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="tracevals-attempt") as pool:
        futures = {pool.submit(run_attempt, agent, case, ctx, commit, lock): i for i, (case, ctx) in enumerate(jobs)}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            if on_done is not None:
                on_done(result)
    return [results[i] for i in range(len(jobs))]
