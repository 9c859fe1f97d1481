"""Record/replay of tool calls: cassettes keyed by a hash of the tool name and canonical arguments.

One human-diffable JSON file per task in the cassette folder (`<task_id>.json`; an id that is no plain
short file name gets a readable prefix and a digest, see `cassette_name`). Each interaction
is keyed by the attempt (attempts differ by seed, so each replays its own recording; attempt 0 serves
every attempt that has no recording of its own, as a set extracted from production traffic holds), by
`sha256(tool + canonical JSON arguments)[:16]` (less `idempotency_key`, which carries the run id by
design) and by its occurrence within the attempt (the second identical call may return something
else: a 429, then success). Modes:

- `record`: every call runs live and is written down (the first recording of a key wins);
- `replay`: no call runs live; a miss is an error that lists the nearest recorded keys;
- `record-new`: replay what is recorded, run and record the rest.

Errors are recorded too (type, message, status, retryable, retry-after) and raised again on replay,
so a recorded run with injected faults replays identically. Secrets are scrubbed from the stored
arguments and results by the lake's redaction rule (`tracevals.lake.redaction`; the keys are
computed before scrubbing, so replay still matches).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tracevals.instrumentation.tools import ToolError
from tracevals.lake.names import path_segment
from tracevals.lake.redaction import Redactor
from tracevals.model import json_text

MODES = ("record", "replay", "record-new")
FORMAT_VERSION = 1
ANY_ATTEMPT = 0  # a recording for every attempt that has none of its own (`tracevals cases extract` writes these)

# Secrets never land in a cassette: the one redaction rule of the lake and the instrumentation.
_SECRETS = Redactor()


class CassetteMiss(LookupError):
    """Replay found no recording for a call; the message lists the nearest recorded keys."""


class CassetteError(ValueError):
    """A cassette file that cannot be read as one (not JSON, not an object of interactions, an interaction
    without its fields): one line naming the file and what to do."""


# Arguments that differ between runs by design (an idempotency key carries the run id) are not part
# of the key: the same call in the replay must find its recording.
KEY_IGNORES = frozenset({"idempotency_key"})


def cassette_name(task_id: str) -> str:
    """The file of a task's cassette: `<task_id>.json` when the id is a plain, short file name; else a
    readable prefix and a digest of the whole id, so that `a/b` and `a_b` never share a file and a long id
    never exceeds the file-name limit."""
    return f"{path_segment(task_id)}.json"


def call_key(tool: str, arguments: Mapping[str, Any]) -> str:
    kept = {k: v for k, v in arguments.items() if k not in KEY_IGNORES}
    canonical = json.dumps({"tool": tool, "args": kept}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _SECRETS.redact(value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    return value


@dataclass
class Cassette:
    """The recordings of one task, shared by its attempts (thread-safe).

    The file logic is shared with the model cassettes (`model_cassettes.ModelCassette`), whose
    interactions name a model method and its request where these name a tool and its arguments."""

    NAME: ClassVar[str] = "tool"  # the field of an interaction that names the call
    ARGS: ClassVar[str] = "args"  # the field that holds its (scrubbed) input
    KIND: ClassVar[str] = "cassette"
    # what replay reads of an interaction besides its slot (attempt, key, occurrence): its fields and types, and
    # the fields of which it holds one at least (what the call answered)
    FIELDS: ClassVar[tuple[tuple[str, type], ...]] = (("tool", str), ("args", dict))
    ANSWERS: ClassVar[tuple[str, ...]] = ("result", "error")

    path: Path
    mode: str
    interactions: dict[tuple[int, str, int], dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _dirty: bool = False

    @classmethod
    def open(cls, folder: str | Path, task_id: str, mode: str, required: bool = True) -> Cassette:
        """The task's cassette; in `replay` mode a missing file is an error unless not `required` (then
        it is empty, and each call misses)."""
        if mode not in MODES:
            raise ValueError(f"cassette mode {mode!r} is not one of {', '.join(MODES)}")
        cassette = cls(path=Path(folder) / cassette_name(task_id), mode=mode)
        if cassette.path.exists():
            for item in cls._read(cassette.path):
                cassette.interactions[(item["attempt"], item["key"], item["occurrence"])] = item
        elif mode == "replay" and required:
            raise CassetteMiss(f"no {cls.KIND} for task {task_id!r} at {cassette.path}; record it first (--record)")
        return cassette

    @classmethod
    def _read(cls, path: Path) -> list[dict[str, Any]]:
        """The interactions of the cassette file at `path`; a `CassetteError` when it is not one (a hand edit,
        a copy cut short): a replay from it would fail call by call inside the attempts, or record over it."""
        try:
            doc = json_text.loads(path.read_bytes())
        except OSError as exc:
            raise CassetteError(f"{cls.KIND} {path} cannot be read: {exc.strerror or exc}") from None
        except ValueError as exc:  # not UTF-8, not JSON, nested too deep
            raise CassetteError(f"{cls.KIND} {path} is not JSON ({exc}); {_REDO}") from None
        items = doc.get("interactions", []) if isinstance(doc, dict) else None
        if not isinstance(items, list):
            raise CassetteError(f"{cls.KIND} {path} is not an object with a list of interactions; {_REDO}")
        for n, item in enumerate(items, 1):
            wrong = cls._wrong(item)
            if wrong is not None:
                raise CassetteError(f"{cls.KIND} {path}: interaction {n} {wrong}; {_REDO}")
        return items

    @classmethod
    def _wrong(cls, item: Any) -> str | None:
        """What an interaction lacks of what replay reads (None: nothing)."""
        if not isinstance(item, dict):
            return "is not an object"
        for name, kind in (("attempt", int), ("key", str), ("occurrence", int), *cls.FIELDS):
            value = item.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                return f"has no {name} ({'an integer' if kind is int else 'an object' if kind is dict else 'a string'})"
        if not any(answer in item for answer in cls.ANSWERS):
            return f"has none of {', '.join(cls.ANSWERS)}"
        return None

    def lookup(self, attempt: int, key: str, occurrence: int) -> dict[str, Any] | None:
        with self._lock:
            found = self.interactions.get((attempt, key, occurrence))
            return found if found is not None else self.interactions.get((ANY_ATTEMPT, key, occurrence))

    def record(
        self, attempt: int, key: str, occurrence: int, tool: str, arguments: Mapping[str, Any], outcome: dict[str, Any]
    ) -> None:
        self.put(attempt, key, occurrence, {"tool": tool, "args": dict(arguments), **outcome})

    def put(self, attempt: int, key: str, occurrence: int, fields: Mapping[str, Any]) -> None:
        """Keep one interaction (scrubbed of secrets); the first recording of a slot wins."""
        with self._lock:
            if (attempt, key, occurrence) in self.interactions:
                return
            self.interactions[(attempt, key, occurrence)] = {
                "attempt": attempt,
                "key": key,
                "occurrence": occurrence,
                **scrub(dict(fields)),
            }
            self._dirty = True

    def nearest(self, attempt: int, tool: str, arguments: Mapping[str, Any], n: int = 3) -> list[str]:
        wanted = json.dumps(arguments, sort_keys=True, default=str)
        scored = []
        for item in self.interactions.values():
            if item["attempt"] not in (attempt, ANY_ATTEMPT):
                continue
            recorded = json.dumps(item[self.ARGS], sort_keys=True, default=str)
            similarity = difflib.SequenceMatcher(None, wanted, recorded).ratio()
            name = item[self.NAME]
            scored.append((name == tool, similarity, f"{item['key']} {name}({_abridged(recorded)})"))
        scored.sort(key=lambda s: (not s[0], -s[1]))
        return [s[2] for s in scored[:n]]

    def save(self) -> None:
        with self._lock:
            if not self._dirty:
                return
            items = sorted(
                self.interactions.values(), key=lambda i: (i["attempt"], i[self.NAME], i["key"], i["occurrence"])
            )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".json.tmp")
            # An interaction's own fields sorted; what it holds in the order it came: a replayed result must
            # be the very object the tool returned (an agent that serialises it sends the model the same text).
            doc = {"interactions": [{k: i[k] for k in sorted(i)} for i in items], "version": FORMAT_VERSION}
            tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n")
            os.replace(tmp, self.path)
            self._dirty = False


_REDO = "restore it, or delete it and record again (--record)"


def _abridged(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def miss_message(call: str, n: int, attempt: int, near: list[str]) -> str:
    """The one wording of a replay miss, for tools and model calls alike."""
    hint = (
        "; nearest recorded: " + " | ".join(near)
        if near
        else f"; attempt {attempt} was not recorded (record with at least as many attempts)"
    )
    return f"no recording of {call} #{n} in attempt {attempt}{hint}"


@dataclass
class CassettePlayer:
    """One attempt's view of a cassette: counts occurrences, replays or records each call."""

    cassette: Cassette
    attempt: int = 1
    occurrences: dict[str, int] = field(default_factory=dict)
    live_calls: int = 0
    on_miss: Callable[[str], None] | None = None  # told of every replay miss (the run reports them)

    def begin(self, tool: str, arguments: Mapping[str, Any]) -> tuple[str, int, dict[str, Any] | None]:
        """(key, occurrence, the recording to replay or None to run live); a replay miss raises."""
        key = call_key(tool, arguments)
        n = self.occurrences[key] = self.occurrences.get(key, 0) + 1
        recorded = self.cassette.lookup(self.attempt, key, n)
        if recorded is not None and self.cassette.mode in ("replay", "record-new"):
            return key, n, recorded
        if self.cassette.mode == "replay":
            near = self.cassette.nearest(self.attempt, tool, arguments)
            call = f"{tool}({json.dumps(dict(arguments), default=str)})"
            message = miss_message(call, n, self.attempt, near)
            if self.on_miss is not None:
                self.on_miss(message)
            raise CassetteMiss(message)
        self.live_calls += 1
        return key, n, None

    def recorded_result(self, key: str, n: int, tool: str, arguments: Mapping[str, Any], result: Any) -> None:
        self.cassette.record(self.attempt, key, n, tool, arguments, {"result": result})

    def recorded_error(self, key: str, n: int, tool: str, arguments: Mapping[str, Any], exc: BaseException) -> None:
        if isinstance(exc, ToolError):
            error = _error_dict(exc)
        else:
            error = {"error_type": type(exc).__qualname__, "message": str(exc), "retryable": False}
        self.cassette.record(self.attempt, key, n, tool, arguments, {"error": error})


def _error_dict(exc: ToolError) -> dict[str, Any]:
    return {
        "error_type": exc.error_type,
        "message": str(exc),
        "status_code": exc.status_code,
        "retryable": exc.retryable,
        "retry_after_s": exc.retry_after_s,
    }


def replay(recorded: Mapping[str, Any]) -> Any:
    """The recorded result, or the recorded error raised again."""
    error = recorded.get("error")
    if error is not None:
        raise ToolError(
            str(error.get("message", "")),
            error_type=str(error.get("error_type", "tool_error")),
            status_code=error.get("status_code"),
            retryable=bool(error.get("retryable", False)),
            retry_after_s=error.get("retry_after_s"),
        )
    return recorded.get("result")
