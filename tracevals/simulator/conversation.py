"""The provider-neutral shape of a model request and of a model's answer.

Each wire format (OpenAI chat completions, OpenAI Responses, Anthropic messages; each plain or
streamed) parses its request into a `Conversation` and renders a `ModelTurn` back, so behaviour
profiles are written once and never see a provider's JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """A tool call an assistant message made earlier in the conversation."""

    id: str
    name: str
    arguments: str  # JSON text, exactly as the client sent it back

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as a dict, or None when they are not a JSON object."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Message:
    role: str  # system | developer | user | assistant | tool
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # on role "tool": the call this message answers


@dataclass(frozen=True)
class ToolSpec:
    """A function the client declared to the model."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @staticmethod
    def schema(value: Any, bad: Callable[[], Exception]) -> Mapping[str, Any]:
        """A declared tool's parameters: none (absent, null) is `{}`, an object is itself; anything else is the wire
        format's own error (`bad()`), never a failure further on."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise bad()
        return value

    @staticmethod
    def listed(
        raw: Any, read: Callable[[int, Any], ToolSpec], not_a_list: Callable[[], Exception]
    ) -> tuple[ToolSpec, ...]:
        """A request's `tools`: none when absent, else each item read by `read(index, item)`, which raises
        the wire format's own error for an item it cannot read (`not_a_list()` for anything but a list)."""
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise not_a_list()
        return tuple(read(i, tool) for i, tool in enumerate(raw))


@dataclass(frozen=True)
class Conversation:
    """One model request: which profile, what was said so far, which tools may be called."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    seed: int | None = None
    tool_choice: Any = None  # as sent ("auto", "none", "required" or a named function); profiles may honour it

    @staticmethod
    def requested_model(data: Mapping[str, Any], missing: Callable[[], Exception]) -> str:
        """A request's `model`: a non-empty string, else the wire format's own error (`missing()`)."""
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise missing()
        return model

    @staticmethod
    def requested_seed(data: Mapping[str, Any], invalid: Callable[[], Exception]) -> int | None:
        """A request's `seed`: absent, or an integer (not a bool), else the wire format's own error."""
        seed = data.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise invalid()
        return seed

    def texts(self, role: str) -> list[str]:
        return [m.content for m in self.messages if m.role == role]

    def first_user_text(self) -> str:
        users = self.texts("user")
        return users[0] if users else ""

    def system_text(self) -> str:
        return "\n".join(m.content for m in self.messages if m.role in ("system", "developer"))

    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)


@dataclass(frozen=True)
class PlannedCall:
    """A tool call a profile wants the model to make; the engine gives it an id."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def arguments_json(self) -> str:
        # sort_keys: the same decision renders to the same bytes, so responses are byte-stable.
        return json.dumps(dict(self.arguments), sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class ModelTurn:
    """What the model answers: text, tool calls (run in parallel by the client), or both."""

    content: str | None = None
    tool_calls: tuple[PlannedCall, ...] = ()

    @classmethod
    def say(cls, text: str) -> ModelTurn:
        return cls(content=text)

    @classmethod
    def call(cls, *calls: PlannedCall) -> ModelTurn:
        return cls(tool_calls=tuple(calls))

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"
