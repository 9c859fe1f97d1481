"""Record/replay of model calls (the openai and anthropic clients), keyed as tool calls are.

Installed per attempt through the instrumentation's model-interception seam (`intercept_models`): every
instrumented call (openai `chat.completions.create` / `.parse` and `.stream()`, `responses.create` /
`.parse` and `.stream()`, anthropic `messages.create` and `messages.stream()`, sync and async) passes
through `ModelCassetteInterceptor` inside its `chat {model}` span, which then reads a replayed answer as
it reads a live one (usage, ids, finish reasons, requested tool calls) and carries `tracevals.replay`
(`record` or `replay`).

One JSON file per task, `<cassette_dir>/models/<cassette_name(task_id)>`, in the tool cassettes' format
(`cassettes.Cassette`: `{"version": 1, "interactions": [...]}`). An interaction is keyed by the attempt
(attempt 0 serves every attempt without a recording of its own), by the key and by its occurrence
within the attempt (the same request twice may get two answers: a 429, then a completion). The key is
`sha256(canonical JSON of {provider, method, request})[:16]`, the request being the call's keyword
arguments (SDK objects dumped, the SDKs' "not given" markers dropped) less what differs between attempts
by design or is transport:

    seed, extra_headers, extra_query, timeout, user, metadata, store  (and `seed` inside `extra_body`)

so a frozen replay finds the reference attempt's answer although each attempt sends its own seed. Each
interaction holds `provider`, `method`, `request` (as keyed), `duration_ms` (how long the call waited on
the model, a stream until it ended: a replay advances the attempt's logical clock by it, as the live
call did, see `instrumentation/clock.py`) and one outcome:

- `response`: `{"class": "openai.types.chat.chat_completion.ChatCompletion", "data": model_dump(mode="json")}`,
  rebuilt with that class's `model_validate`, so `response.choices[0].message.tool_calls` works;
- `stream` (`stream=True`, or a `.stream()` helper): the events as such objects, in order, `complete`
  (false when the agent stopped reading: it was recorded as far as it was read) and an `error` if the
  stream failed; replayed as a `ReplayedStream` / `AsyncReplayedStream` (iterable, a context manager,
  `close()`; the SDKs' `.stream()` helpers accumulate it as they do a live one);
- `error`: class, message, HTTP status, body and response headers of the SDK's exception (e.g.
  `openai.RateLimitError`), raised again as the same class (`model_payloads.load_error`), else as a
  `ModelReplayError`.

Secrets are scrubbed from the stored request and outcome by the lake's redaction rule (the key is
computed before). Modes as for tools: `record` (every call live, written down), `replay` (none live; a
miss raises `CassetteMiss` naming the call and the nearest recorded keys, and is reported to the run),
`record-new` (replay what is recorded, run and record the rest).

Limits: a call through `with_raw_response` / `with_streaming_response` (no SDK model object to store) runs
live and is not recorded (so `replay` misses it); a stream's `.response` on replay is a stand-in without
HTTP data; only instrumented calls are seen (the seam is in tracevals' model wrappers, so the openai /
anthropic instrumentors must be on, as `tracevals.instrument()` and `tracevals run` turn them on).
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tracevals.harness.cassettes import ANY_ATTEMPT, Cassette, CassetteMiss, cassette_name, miss_message
from tracevals.harness.model_payloads import (
    AsyncRecordingStream,
    RecordingStream,
    dump_error,
    dump_object,
    load_error,
    load_object,
)
from tracevals.instrumentation.interception import AsyncReplayedStream, ModelInvocation, ReplayedStream
from tracevals.instrumentation.model_span import canonical, canonical_json
from tracevals.model import attributes as tv

_log = logging.getLogger(__name__)

MODELS_FOLDER = "models"
KEY_IGNORES = frozenset({"seed", "extra_headers", "extra_query", "timeout", "user", "metadata", "store"})


def model_cassette_path(cassette_dir: str | Path, task_id: str) -> Path:
    return Path(cassette_dir) / MODELS_FOLDER / cassette_name(task_id)


def keyed_request(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The request as its key sees it: plain JSON data, less `KEY_IGNORES` (and `extra_body.seed`)."""
    request: dict[str, Any] = canonical({k: v for k, v in kwargs.items() if k not in KEY_IGNORES})
    body = request.get("extra_body")
    if isinstance(body, dict) and "seed" in body:
        rest = {k: v for k, v in body.items() if k != "seed"}
        if rest:
            request["extra_body"] = rest
        else:
            del request["extra_body"]
    return request


def model_key(provider: str, method: str, kwargs: Mapping[str, Any]) -> str:
    return _key(provider, method, keyed_request(kwargs))


def _key(provider: str, method: str, request: Mapping[str, Any]) -> str:
    canonical_text = canonical_json({"provider": provider, "method": method, "request": request})
    return hashlib.sha256(canonical_text.encode()).hexdigest()[:16]


def describe(provider: str, method: str, request: Mapping[str, Any]) -> str:
    """A model call in one short line: `openai chat.completions.create(model='m', 5 messages, stream)`."""
    parts = [f"model={request.get('model')!r}"]
    for name in ("messages", "input"):
        value = request.get(name)
        if isinstance(value, list):
            parts.append(f"{len(value)} {name}")
    if request.get("stream") is True:
        parts.append("stream")
    return f"{provider} {method}({', '.join(parts)})"


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two requests first differ (`messages[3].content`), or None when they do not."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}".lstrip(".")
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None if len(a) == len(b) else f"{path} (length {len(b)}, recorded {len(a)})".lstrip(".")
    return None if a == b else path.lstrip(".") or "(the request)"


@dataclass
class ModelCassette(Cassette):
    """The model calls of one task (`<cassette_dir>/models/<task>.json`), shared by its attempts."""

    NAME: ClassVar[str] = "method"
    ARGS: ClassVar[str] = "request"
    KIND: ClassVar[str] = "model cassette"
    FIELDS: ClassVar[tuple[tuple[str, type], ...]] = (("provider", str), ("method", str), ("request", dict))
    ANSWERS: ClassVar[tuple[str, ...]] = ("response", "stream", "error")

    @classmethod
    def open_in(cls, cassette_dir: str | Path, task_id: str, mode: str, required: bool = True) -> ModelCassette:
        cassette = cls.open(Path(cassette_dir) / MODELS_FOLDER, task_id, mode, required)
        assert isinstance(cassette, ModelCassette)
        return cassette

    def nearest(self, attempt: int, tool: str, arguments: Mapping[str, Any], n: int = 3) -> list[str]:
        """The closest recordings of this attempt (or attempt 0): same method first, then by similarity,
        each with where its request differs from the one that missed."""
        wanted = canonical_json(arguments)
        with self._lock:
            items = [i for i in self.interactions.values() if i["attempt"] in (attempt, ANY_ATTEMPT)]
        scored = []
        for item in items:
            similarity = difflib.SequenceMatcher(None, wanted, canonical_json(item["request"]), autojunk=True).ratio()
            where = first_difference(item["request"], arguments)
            line = f"{item['key']} {describe(item['provider'], item['method'], item['request'])}"
            scored.append((item["method"] == tool, similarity, line + (f" differs at {where}" if where else "")))
        scored.sort(key=lambda s: (not s[0], -s[1]))
        return [s[2] for s in scored[:n]]


@dataclass
class ModelCassetteInterceptor:
    """One attempt's model interceptor: replays a recorded answer or runs the call live and records it."""

    cassette: ModelCassette
    attempt: int = 1
    on_miss: Callable[[str], None] | None = None  # told of every replay miss (the run reports them)
    occurrences: dict[str, int] = field(default_factory=dict)
    live_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, call: ModelInvocation) -> tuple[dict[str, Any] | None, _Take]:
        """(the recording to replay or None to run live, the call's place on the cassette); a replay miss
        raises. The request is taken now: an agent may change the list it passed once the call returns."""
        request = keyed_request(call.kwargs)
        key = _key(call.provider, call.operation, request)
        with self._lock:
            n = self.occurrences[key] = self.occurrences.get(key, 0) + 1
        take = _Take(self, key, n, call, request)
        recorded = self.cassette.lookup(self.attempt, key, n)
        if recorded is not None and self.cassette.mode in ("replay", "record-new"):
            return recorded, take
        if self.cassette.mode == "replay":
            near = self.cassette.nearest(self.attempt, call.operation, request)
            what = f"model call {describe(call.provider, call.operation, request)} [key {key}]"
            message = miss_message(what, n, self.attempt, near)
            if self.on_miss is not None:
                self.on_miss(message)
            raise CassetteMiss(message)
        with self._lock:
            self.live_calls += 1
        return None, take

    def intercept(self, call: ModelInvocation, proceed: Callable[[], Any]) -> Any:
        """A call of a sync client."""
        recorded, take = self.begin(call)
        if recorded is not None:
            return _replayed(recorded, call, ReplayedStream)
        with take.running():
            response = proceed()
        return take.answer(response, RecordingStream, "__next__")

    async def intercept_async(self, call: ModelInvocation, proceed: Callable[[], Awaitable[Any]]) -> Any:
        """A call of an async client."""
        recorded, take = self.begin(call)
        if recorded is not None:
            return _replayed(recorded, call, AsyncReplayedStream)
        with take.running():
            response = await proceed()
        return take.answer(response, AsyncRecordingStream, "__anext__")


def _replayed(recorded: Mapping[str, Any], call: ModelInvocation, stream_type: type) -> Any:
    """The recorded answer (a response, a stream of `stream_type`, or the error raised)."""
    call.span.set_attribute(tv.REPLAY, "replay")
    waited = recorded.get("duration_ms")
    if call.waited is not None and isinstance(waited, (int, float)):
        call.waited(float(waited))  # the logical clock advances as the recorded call waited
    error = recorded.get("error")
    if "stream" in recorded:
        events = [load_object(e, call.kwargs) for e in recorded["stream"]]
        return stream_type(events, load_error(error) if error is not None else None)
    if error is not None:
        raise load_error(error)
    return load_object(recorded["response"], call.kwargs)


@dataclass
class _Take:
    """A model call run live: its place on the cassette (key, occurrence), where its answer is kept."""

    interceptor: ModelCassetteInterceptor
    key: str
    n: int
    call: ModelInvocation
    request: dict[str, Any]
    started: float = 0.0

    @contextmanager
    def running(self) -> Iterator[None]:
        """The live call: its span says it is recorded; an exception it raises is kept as its answer."""
        self.call.span.set_attribute(tv.REPLAY, "record")
        self.started = time.monotonic()
        try:
            yield
        except Exception as exc:
            self.keep({"error": dump_error(exc)})
            raise

    def answer(self, response: Any, recording: type[RecordingStream], step: str) -> Any:
        """The response for the agent, kept (a stream: as the agent reads it, through `recording`)."""
        dumped = dump_object(response)
        if dumped is not None:
            self.keep({"response": dumped})
            return response
        if hasattr(response, step):
            return recording(response, self.keep)
        # e.g. `with_raw_response`: no SDK object to store; the call stays live and unrecorded
        _log.warning("tracevals: %s returned a %s, which a cassette cannot hold", self.call.operation, type(response))
        self.call.span.set_attribute(tv.REPLAY, "live")
        return response

    def keep(self, outcome: Mapping[str, Any]) -> None:
        """Keep one interaction, with how long the call waited on the model (a stream: until it ended)."""
        waited = round((time.monotonic() - self.started) * 1000, 1)
        call = self.call
        fields = {"provider": call.provider, "method": call.operation, "request": self.request, "duration_ms": waited}
        self.interceptor.cassette.put(self.interceptor.attempt, self.key, self.n, {**fields, **outcome})
