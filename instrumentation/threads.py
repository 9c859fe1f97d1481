"""Work handed to another thread runs in the context of the code that handed it over.

An agent that runs its tool calls in parallel on a thread pool (`ThreadPoolExecutor.map`, `submit`,
`loop.run_in_executor`) or on a thread of its own would otherwise lose, in those threads, everything the
calling code had set: the session (`tracevals.session`), the parent span (the agent's, the model call's),
the model's tool call id, the harness's interceptors (faults, injections, cassettes) and the attempt's
clock. Its tool spans would start new traces outside any session: the session would look as if it had
never called those tools, and a fault meant for them would never fire. asyncio already carries the
context into every task and `asyncio.to_thread`; `ThreadContextInstrumentor` (entry point
`tracevals_threads`) does the same for threads:

- `ThreadPoolExecutor.submit` runs each piece of work in a copy of the context it was submitted from
  (`contextvars.copy_context()`, as `asyncio.to_thread` does). A pool's own worker threads start with
  an empty context, as they do without this, so that nothing of the first submitter's context stays
  with a worker for the work of others.
- `threading.Thread.start` copies the context of the code that starts the thread, and the thread's
  `run` runs in it (Python 3.14's `thread_inherit_context` does this for every thread). A subclass
  that overrides `run` without calling `Thread.run` is not covered; OpenTelemetry's own threading
  instrumentor has the same limit.

Only threads: a process pool's work is pickled to another process, where no context of this one exists.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

from tracevals.instrumentation.patching import PatchingInstrumentor

_CONTEXT = "_tracevals_context"  # where a started thread keeps the context it runs in
_submitting = threading.local()  # inside `submit`: a worker the pool starts now is not the work's thread


def _submit(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if not args:  # not how submit is called (`fn` is positional-only): let it say what is wrong
        return wrapped(*args, **kwargs)
    fn, *rest = args
    _submitting.active = True
    try:
        return wrapped(contextvars.copy_context().run, fn, *rest, **kwargs)
    finally:
        _submitting.active = False


def _start(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if not getattr(_submitting, "active", False):
        setattr(instance, _CONTEXT, contextvars.copy_context())
    return wrapped(*args, **kwargs)


def _run(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    context = instance.__dict__.pop(_CONTEXT, None)
    if context is None:
        return wrapped(*args, **kwargs)
    return context.run(wrapped, *args, **kwargs)


class ThreadContextInstrumentor(PatchingInstrumentor):
    """Carries the context into threads (see the module docstring).

    >>> ThreadContextInstrumentor().instrument()
    """

    patches = (
        ("concurrent.futures.thread", "ThreadPoolExecutor.submit", _submit),
        ("threading", "Thread.start", _start),
        ("threading", "Thread.run", _run),
    )
