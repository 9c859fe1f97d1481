"""What a susceptible model does with instructions planted in tool results (prompt injection).

A real model sometimes obeys text inside a tool result that says "call X with {...}". The simulated
one finds such instructions in the conversation's tool messages and, at the profile's
`follow_injection` rate (drawn once per instruction), issues that call before going on with the task.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

from tracevals.simulator import Conversation, PlannedCall

_INSTRUCTION = re.compile(r"call (\w+) with (\{[^{}]*\})")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def planted_calls(conversation: Conversation) -> list[tuple[str, PlannedCall]]:
    """(instruction id, call) for every "call X with {json}" found in a tool message."""
    found: dict[str, PlannedCall] = {}
    for message in conversation.messages:
        if message.role != "tool":
            continue
        try:
            texts = list(_strings(json.loads(message.content)))
        except json.JSONDecodeError:
            texts = [message.content]
        for text in texts:
            for match in _INSTRUCTION.finditer(text):
                try:
                    args = json.loads(match.group(2))
                except json.JSONDecodeError:
                    continue
                if isinstance(args, dict):
                    key = hashlib.sha256(match.group(0).encode()).hexdigest()[:12]
                    found.setdefault(key, PlannedCall(match.group(1), args))
    return list(found.items())
