"""Run an agent on task cases k times: every attempt one trace, recorded, none discarded.

Each attempt runs inside a root span that carries the run id, task id, attempt, variant, seed,
commit and lock hash, and the attempt's output, or its exception's type and message (recorded,
never swallowed). The explicit session-end marker closes every attempt's session. Attempts already
finished under the same run id (see `scoring.runs.completed_attempts`) are skipped, so a killed run resumes.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from tracevals.harness.environment import attempt_environment, commit_hash, lock_hash
from tracevals.harness.interceptor import RunPlan
from tracevals.harness.stopping import StopRequest
from tracevals.instrumentation.clock import attempt_clock
from tracevals.instrumentation.content import to_json
from tracevals.instrumentation.context import end_session, session
from tracevals.instrumentation.interception import intercept_models, intercept_tools
from tracevals.model import attributes as tv
from tracevals.model.attempt import AttemptContext, AttemptKey
from tracevals.model.case import Case

AgentFn = Callable[[str, AttemptContext], Any]

_TRACER = "tracevals.harness"


@dataclass(frozen=True)
class AttemptResult:
    context: AttemptContext
    output: str | None
    error: str | None  # "TypeName: message" when the agent raised
    trace_id: str


def run_attempt(
    agent: AgentFn,
    case: Case,
    ctx: AttemptContext,
    commit: str,
    lock: str,
    plan: RunPlan | None = None,
    environment: Mapping[str, str] | None = None,
) -> AttemptResult:
    """Run one attempt of `case` under its root span; never raises for the agent's exceptions.

    With a `plan` that applies to the case (faults, prompt injections, cassettes, also from the
    case's own `faults` / `injections`), its interceptor sits inside every traced tool call.
    """
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
        for key, value in attempt_environment(case.raw, ctx.now, ctx.locale, ctx.settings, environment).items():
            root.set_attribute(key, value)
        interceptor = (
            plan.interceptor(case, ctx.seed, ctx.attempt) if plan is not None and plan.is_active(case) else None
        )
        models = plan.model_interceptor(case, ctx.attempt) if plan is not None else None  # model cassettes
        if plan is not None:
            root.set_attribute(tv.REPLAY, plan.replay_mode)
        try:
            # the attempt's logical clock: backoff and throttling measured as the agent waited, not by load
            with (
                attempt_clock(),
                intercept_tools(interceptor) if interceptor is not None else nullcontext(),
                intercept_models(models) if models is not None else nullcontext(),
            ):
                result = finished(agent(case.input, ctx))
            output = answer_text(result)
            root.set_attribute(tv.ATTEMPT_OUTPUT, output)
        # recorded on the span and in the result, never lost; an agent's sys.exit() too, which ended the whole run
        # (its other attempts never ran); Ctrl-C (KeyboardInterrupt) still stops the run
        except (Exception, SystemExit) as exc:
            error = f"{type(exc).__qualname__}: {exc}"
            root.set_attribute(tv.ATTEMPT_ERROR, error)
            root.set_attribute("error.type", type(exc).__qualname__)
            root.record_exception(exc)
            root.set_status(Status(StatusCode.ERROR, error[:500]))
        end_session(ctx.session_id, status="finished" if error is None else "error")
        trace_id = f"{root.get_span_context().trace_id:032x}"
    return AttemptResult(context=ctx, output=output, error=error, trace_id=trace_id)


def _attempt_then_flush(
    agent: AgentFn,
    case: Case,
    ctx: AttemptContext,
    commit: str,
    lock: str,
    plan: RunPlan | None,
    flush: Callable[[], object] | None,
    environment: Mapping[str, str] | None = None,
) -> AttemptResult:
    result = run_attempt(agent, case, ctx, commit, lock, plan, environment)
    if plan is not None:
        plan.save()  # cassettes too are on disk once the attempt is
    if flush is not None:
        flush()
    return result


def finished(result: Any) -> Any:
    """What an agent's call gave, once it is done: an awaitable awaited; a stream (a generator, sync or async,
    as a streaming agent is one) read to its end, as its reader would, and its pieces joined into the answer
    (each as its text). Read here, the stream's steps run inside the attempt (its clock, its interceptors)."""
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    if inspect.isasyncgen(result):
        return _joined(asyncio.run(_read_all(result)))
    if inspect.isgenerator(result):
        return _joined(list(result))
    return result


def answer_text(result: Any) -> str:
    """An agent's answer as the attempt's output: text as it is; a structured answer (a dict, a list, a
    pydantic model) as JSON, as a captured tool result is written (`content.to_json`), so that a case's
    `json_schema` reads what the agent returned (its Python repr, `{'answer': '42'}`, is no JSON); a number
    or anything else as its text."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, (dict, list, tuple)) or callable(getattr(result, "model_dump", None)):
        return to_json(result)
    return str(result)


def _joined(pieces: list[Any]) -> str:
    return "".join(piece if isinstance(piece, str) else str(piece) for piece in pieces if piece is not None)


async def _await(awaitable: Any) -> Any:
    return await awaitable


async def _read_all(stream: Any) -> list[Any]:
    return [piece async for piece in stream]


def plan_attempts(
    cases: Iterable[Case],
    *,
    k: int,
    run_id: str,
    variant: str,
    seed: int = 0,
    settings: dict[str, Any] | None = None,
    case_settings: Callable[[Case], dict[str, Any]] | None = None,
    skip: Collection[AttemptKey] = (),
) -> list[tuple[Case, AttemptContext]]:
    """Every (case, context) to run: attempts 1..k of each case, less those in `skip`."""
    jobs: list[tuple[Case, AttemptContext]] = []
    for case in cases:
        extra = dict(settings or {})
        if case_settings is not None:
            extra.update(case_settings(case))
        for attempt in range(1, k + 1):
            if (variant, case.case_id, attempt) in skip:
                continue
            jobs.append((case, AttemptContext.for_attempt(run_id, case.case_id, attempt, variant, seed, **extra)))
    return jobs


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
    skip: Collection[AttemptKey] = (),
    flush: Callable[[], object] | None = None,
    plan: RunPlan | None = None,
    environment: Mapping[str, str] | None = None,
    stop: StopRequest | None = None,
) -> list[AttemptResult]:
    """Run every case k times (attempts 1..k) for one variant; results in case and attempt order.

    `flush` runs in the worker right after each attempt, before the worker takes the next one, so
    that an attempt's spans are in the lake before anything else can crash the process: a crash then
    loses at most the attempts in flight. `on_done` is called from the calling thread (progress bars).
    `plan` (default: only the cases' own faults and injections) acts inside the tool calls.
    `environment` is what the run records on every attempt's root besides its own (`tracevals.env.*`
    keys without the prefix: `tasks_sha256`, `faults`, `injections`, `cassettes`).
    `stop` (`harness.stopping`): once requested, no attempt is launched; those in flight finish and the
    results are those of the attempts that ran.
    """
    plan = plan if plan is not None else RunPlan()
    commit, lock = commit_hash(), lock_hash()
    jobs = plan_attempts(
        cases,
        k=k,
        run_id=run_id,
        variant=variant,
        seed=seed,
        settings=settings,
        case_settings=case_settings,
        skip=skip,
    )
    results: dict[int, AttemptResult] = {}
    slots = max(1, concurrency)
    # attempts are launched one at a time as slots free up, never queued ahead: a stop request is seen
    # before each launch, so none starts after it (a queue of submitted jobs would run to its end)
    pending = iter(enumerate(jobs))
    running: dict[Future[AttemptResult], int] = {}
    with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="tracevals-attempt") as pool:
        while True:
            while len(running) < slots and (stop is None or not stop.requested):
                job = next(pending, None)
                if job is None:
                    break
                i, (case, ctx) = job
                if stop is not None:  # counted before it starts: a signal can come as soon as the attempt runs
                    stop.in_flight = len(running) + 1
                running[pool.submit(_attempt_then_flush, agent, case, ctx, commit, lock, plan, flush, environment)] = i
            if stop is not None:
                stop.in_flight = len(running)
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                results[running.pop(future)] = result = future.result()
                if stop is not None:
                    stop.in_flight = len(running)
                if on_done is not None:
                    on_done(result)
    return [results[i] for i in sorted(results)]
