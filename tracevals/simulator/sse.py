"""Server-sent events: how every wire format streams a response.

A streamed response is rendered in full before the first byte goes out (the engine decides the whole
turn at once, as a real model's sampling is fixed by the request and seed), then written as one
HTTP chunk per event, so clients parse it incrementally exactly as they would a provider's stream.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

DONE = "[DONE]"  # OpenAI chat completions end their stream with this literal data line


@dataclass(frozen=True)
class Event:
    data: Any  # a JSON value, or a str sent verbatim (such as DONE)
    name: str | None = None  # the `event:` line; OpenAI chat streams have none

    def encode(self) -> bytes:
        head = f"event: {self.name}\n" if self.name else ""
        body = self.data if isinstance(self.data, str) else json.dumps(self.data, separators=(",", ":"))
        return f"{head}data: {body}\n\n".encode()


@dataclass(frozen=True)
class EventStream:
    """A response body of server-sent events (`Content-Type: text/event-stream`)."""

    events: tuple[Event, ...]

    def chunks(self) -> Iterator[bytes]:
        for event in self.events:
            yield event.encode()


_PIECE = re.compile(r"\s*\S+")


def pieces(text: str, size: int = 3) -> list[str]:
    """`text` cut into deltas of about `size` words; joined, they give `text` back exactly."""
    words = _PIECE.findall(text)
    tail = text[len("".join(words)) :]  # trailing whitespace the pattern leaves behind
    out = ["".join(words[i : i + size]) for i in range(0, len(words), size)]
    if tail:
        out.append(tail)
    return out or ([text] if text else [])
