"""What a model cassette stores of an SDK's answer, and how a replay gives it back as the SDK's own objects.

- A response: `{"class": <fully qualified class>, "data": response.model_dump(mode="json")}`, rebuilt with
  that class's `model_validate`, or, where the SDK's declared types are stricter than what the server
  sent (a null for a declared int), with its own `construct`, as the SDK builds a live response. A
  parametrised generic (`ParsedChatCompletion[Answer]`) is stored as its origin class and parametrised
  again, on replay, with the request's `response_format` / `text_format` class.
- A stream's events: a list of such objects, recorded as the agent reads them (`RecordingStream`).
- An error: class, message, HTTP status, body and response headers, raised again on replay as the same
  SDK exception class (with a stand-in HTTP request and response); what cannot be rebuilt so raises
  `ModelReplayError`, a `RuntimeError` that says what was recorded.

Only classes of the SDKs themselves (`openai`, `anthropic`) and of their HTTP client (`httpx2`, `httpx`) are
ever imported from what a cassette names: a cassette is data, never code.
"""

from __future__ import annotations

import importlib
import json
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from tracevals.instrumentation.model_span import canonical
from tracevals.instrumentation.streams import WatchedAsyncStream, WatchedStream

SDK_PACKAGES = frozenset({"openai", "anthropic"})
HTTP_PACKAGES = frozenset({"httpx2", "httpx"})
# Response headers that describe the connection, not the answer: not kept with a recorded error.
_TRANSPORT_HEADERS = frozenset(
    {"date", "content-length", "connection", "transfer-encoding", "keep-alive", "set-cookie", "server"}
)

Keep = Callable[[dict[str, Any]], None]  # receives the outcome fields of a finished stream


class ModelReplayError(RuntimeError):
    """A recorded model-call error that cannot be rebuilt as its own SDK class (or a recording that names
    a class that cannot be loaded): the message says what was recorded."""

    def __init__(self, message: str, *, error_class: str | None = None, status_code: int | None = None) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.status_code = status_code


def qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def resolve(name: str, packages: frozenset[str] = SDK_PACKAGES) -> Any:
    """The object a dotted name points to, imported only from `packages`."""
    parts = name.split(".")
    if parts[0] not in packages:
        raise ModelReplayError(f"the cassette names {name!r}, which is not a class of {', '.join(sorted(packages))}")
    for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                found = getattr(found, attr)
        except AttributeError:
            continue
        return found
    raise ModelReplayError(f"the cassette names {name!r}, which this installation does not have")


# --- responses and stream events ----------------------------------------------------------------------


def dump_object(obj: Any) -> dict[str, Any] | None:
    """`{"class", "data"}` of an SDK (pydantic) object; None for anything else."""
    dump = getattr(obj, "model_dump", None)
    if not callable(dump):
        return None
    cls = type(obj)
    origin = (getattr(cls, "__pydantic_generic_metadata__", None) or {}).get("origin")
    try:  # without the serializer's warnings: an SDK object built without validation may not match its types
        data = dump(mode="json", warnings=False)
    except TypeError:
        data = dump(mode="json")
    return {"class": qualified_name(origin or cls), "data": canonical(data)}


def load_object(doc: Mapping[str, Any], request: Mapping[str, Any] | None = None) -> Any:
    cls = resolve(str(doc["class"]))
    if getattr(cls, "__pydantic_generic_metadata__", {}).get("parameters") and request is not None:
        parsed_as = request.get("response_format") or request.get("text_format")
        if isinstance(parsed_as, type):  # `.parse()`: `message.parsed` is the agent's own class again
            cls = cls[parsed_as]
    validate, construct = getattr(cls, "model_validate", None), getattr(cls, "construct", None)
    if not callable(validate) or not callable(construct):
        raise ModelReplayError(f"the cassette names {doc['class']!r}, which is no SDK model class")
    data = doc.get("data")
    try:
        return validate(data)
    except ValueError:  # pydantic's ValidationError: the SDKs build responses without validating them, and
        # their types are stricter than what servers send (a null where an int is declared): build it so too
        return construct(**data) if isinstance(data, dict) else data


# --- errors -------------------------------------------------------------------------------------------


def dump_error(exc: BaseException) -> dict[str, Any]:
    doc: dict[str, Any] = {"class": qualified_name(type(exc)), "message": str(getattr(exc, "message", None) or exc)}
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        doc["status"] = status
    if hasattr(exc, "body"):
        doc["body"] = canonical(exc.body)
    request = getattr(exc, "request", None)
    if request is not None and hasattr(request, "url"):
        doc["request"] = {"method": str(getattr(request, "method", "POST")), "url": str(request.url)}
        doc["http"] = type(request).__module__.split(".")[0]
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        doc["headers"] = {str(k).lower(): str(v) for k, v in headers.items() if k.lower() not in _TRANSPORT_HEADERS}
    return doc


def load_error(doc: Mapping[str, Any]) -> BaseException:
    """The recorded error as its own SDK class where that can be rebuilt, else a `ModelReplayError`."""
    name, message, status = str(doc.get("class")), str(doc.get("message", "")), doc.get("status")
    try:
        cls = resolve(name)
        if isinstance(cls, type) and issubclass(cls, Exception):
            rebuilt = _rebuild(cls, doc, message, status)
            if rebuilt is not None:
                return rebuilt
    except ModelReplayError:
        pass
    what = f"{name} (HTTP {status})" if status is not None else name
    return ModelReplayError(f"replayed model error {what}: {message}", error_class=name, status_code=status)


def _rebuild(cls: type[Exception], doc: Mapping[str, Any], message: str, status: Any) -> Exception | None:
    http = resolve(str(doc["http"]), HTTP_PACKAGES) if doc.get("http") else None
    where = doc.get("request") or {}
    request = http.Request(where.get("method", "POST"), where.get("url", "http://replay.invalid/")) if http else None
    body = doc.get("body")
    attempts: list[Callable[[], Exception]] = []
    if http is not None and isinstance(status, int):
        content = b"" if body is None else (body if isinstance(body, str) else json.dumps(body)).encode()
        response = http.Response(status, headers=doc.get("headers") or {}, content=content, request=request)
        attempts.append(lambda: cls(message, response=response, body=body))  # type: ignore[call-arg]
    if request is not None:
        attempts.append(lambda: cls(message=message, request=request))  # type: ignore[call-arg]
        attempts.append(lambda: cls(request=request))  # type: ignore[call-arg]
    attempts.append(lambda: cls(message))
    for attempt in attempts:
        try:
            return attempt()
        except Exception:  # that constructor takes other arguments: try the next
            continue
    return None


# --- recording streams --------------------------------------------------------------------------------


def _end(state: dict[str, Any], keep: Keep) -> None:
    outcome: dict[str, Any] = {"stream": state["events"], "complete": state["complete"]}
    if state["error"] is not None:
        outcome["error"] = state["error"]
    keep(outcome)


class RecordingStream(WatchedStream):
    """A sync SDK stream whose events are kept as they pass; the recording is handed to `keep` once, when
    the stream ends, fails, is closed (or its `with` block left) or is collected: a stream the agent
    stopped reading is recorded as far as it was read (`complete: false`), which is what a replay of the
    same agent reads again."""

    # An exception of the stream is recorded (and replayed); an interrupt or a cancellation is not the
    # stream's: the recording stops there, as far as it was read.
    _self_failures = (Exception,)

    def __init__(self, wrapped: Any, keep: Keep) -> None:
        super().__init__(wrapped)
        self._self_state: dict[str, Any] = {"events": [], "complete": False, "error": None}
        self._self_finalizer = weakref.finalize(self, _end, self._self_state, keep)

    def _self_event(self, event: Any) -> None:
        try:
            dumped = dump_object(event)
        except Exception as exc:  # an event that cannot be kept: the recording fails there, as the stream would
            self._self_stop(error=exc)
            raise
        if dumped is not None:
            self._self_state["events"].append(dumped)

    def _self_stop(self, complete: bool = False, error: BaseException | None = None) -> None:
        if self._self_finalizer.alive:
            self._self_state["complete"] = complete
            self._self_state["error"] = dump_error(error) if error is not None else None
        self._self_finalizer()


class AsyncRecordingStream(RecordingStream, WatchedAsyncStream):
    """`RecordingStream` for an async SDK stream."""
