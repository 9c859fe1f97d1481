"""What the simulated model reads back from a conversation: its own tool calls and what each returned.

The model keeps no state between requests (the server may send the next turn to any thread), so every
turn starts by reconstructing this history from the messages, as an LLM does by reading its context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracevals.demo.tool_messages import Outcome, decode
from tracevals.simulator import Conversation


@dataclass(frozen=True)
class Step:
    position: int  # order among all tool calls of the conversation
    turn: int  # index of the assistant message that asked for it; parallel calls share it
    call_id: str
    name: str
    args: dict[str, Any]
    outcome: Outcome | None  # None: no tool message answered the call

    @property
    def ok(self) -> bool:
        return self.outcome is not None and self.outcome.ok

    @property
    def data(self) -> dict[str, Any]:
        return self.outcome.data if self.outcome is not None else {}


@dataclass(frozen=True)
class History:
    steps: tuple[Step, ...]

    @classmethod
    def of_conversation(cls, conversation: Conversation) -> History:
        pending: list[tuple[int, str, str, dict[str, Any]]] = []
        answers: dict[str, Outcome] = {}
        for index, message in enumerate(conversation.messages):
            if message.role == "assistant":
                for call in message.tool_calls:
                    pending.append((index, call.id, call.name, call.parsed_arguments() or {}))
            elif message.role == "tool" and message.tool_call_id is not None:
                answers[message.tool_call_id] = decode(message.content)
        steps = tuple(
            Step(position, turn, call_id, name, args, answers.get(call_id))
            for position, (turn, call_id, name, args) in enumerate(pending)
        )
        return cls(steps)

    def of(self, name: str, after: int = -1) -> list[Step]:
        """The calls of tool `name` made after position `after`."""
        return [s for s in self.steps if s.name == name and s.position > after]

    def used(self, key: str, value: Any) -> bool:
        """Whether any call so far passed `value` as argument `key`."""
        return any(s.args.get(key) == value for s in self.steps)

    def completed_tools(self) -> list[str]:
        """The tools that have succeeded at least once, in order of their first success."""
        return list(dict.fromkeys(s.name for s in self.steps if s.ok))
