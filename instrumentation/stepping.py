"""A generator iterated for its caller a step at a time, each step inside a context: the one road by which a
traced generator runs (a streaming agent under `session()` / `agent()`, a tool that yields its results).

`stepping(start)` is a generator function: called, it gives a generator that on its first step calls
`start(*args, **kwargs)` with the call's arguments, which gives the generator to run, the context each of its
steps runs in (`activate()`, a context manager: a session made current, a span made current) and what to do
when it ends (`finish(items, error)`, once). Between steps, while the caller runs, nothing of that context is
current. Values the caller sends and exceptions it throws in reach the generator; `finish` gets the items given
so far and the exception that ended the generator, or None when it ran to its end or its caller closed it (a
reader that stops early is no failure). The items are kept only with `keep` (a tool's result, when content is
captured): a streaming agent may yield for ever. `astepping` is the same for an async generator.

What they give are real (async) generator functions: a decorator that returns one (`context._Scope`, with
`functools.wraps`) keeps what it decorates a generator function for the next decorator over it, and a method
for its class.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import AbstractContextManager
from typing import Any

Finish = Callable[[list[Any], BaseException | None], None]
Activate = Callable[[], AbstractContextManager[Any]]
Start = Callable[..., tuple[Any, Activate, Finish]]


def stepping(start: Start, keep: bool = False) -> Callable[..., Generator[Any, Any, Any]]:
    def run(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        inner, activate, finish = start(*args, **kwargs)
        items: list[Any] = []
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                with activate():
                    item = inner.throw(thrown) if thrown is not None else inner.send(sent)
            except StopIteration as stop:
                finish(items, None)
                return stop.value
            except BaseException as exc:
                finish(items, exc)
                raise
            if keep:
                items.append(item)
            thrown = None
            try:
                sent = yield item
            except GeneratorExit:  # the caller closed it (or dropped it): the generator's own cleanup runs inside
                try:
                    with activate():
                        inner.close()
                finally:
                    finish(items, None)
                raise
            except BaseException as exc:  # thrown in by the caller: on to the generator
                thrown = exc

    return run


def astepping(start: Start, keep: bool = False) -> Callable[..., AsyncGenerator[Any, Any]]:
    async def run(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        inner, activate, finish = start(*args, **kwargs)
        items: list[Any] = []
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                with activate():
                    item = await (inner.athrow(thrown) if thrown is not None else inner.asend(sent))
            except StopAsyncIteration:
                finish(items, None)
                return
            except BaseException as exc:
                finish(items, exc)
                raise
            if keep:
                items.append(item)
            thrown = None
            try:
                sent = yield item
            except GeneratorExit:
                try:
                    with activate():
                        await inner.aclose()
                finally:
                    finish(items, None)
                raise
            except BaseException as exc:
                thrown = exc

    return run
