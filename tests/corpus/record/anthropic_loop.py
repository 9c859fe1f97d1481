"""The hand-written tool loop of the recorders that trace the plain `anthropic` client (openinference_anthropic.py,
openllmetry_anthropic.py), see run.py: openai_v2.py's loop, in the Messages API's shapes.

Call the model (`messages.create` at the simulated model's root URL, model CORPUS_MODEL, the system prompt as
`system`, the tools as `input_schema`s), run the tools its `tool_use` blocks ask for, hand their results back in one
user message of `tool_result` blocks (the result as JSON text; a tool that raises as `Error: <Type>: <message>`
with `is_error: true`, as the Messages API asks), until it answers without tools. All turns share one history; one
plain span `turn` per user turn (no GenAI attributes) makes a turn one trace.
"""

from __future__ import annotations

import json
import os
from typing import Any

from corpus import SCHEMAS, TOOLS, log, main, otel, turns

__all__ = ["main", "otel", "run_scenario"]

SYSTEM = "You are a weather assistant. Use the tools for weather and time."
TOOL_SCHEMAS = [
    {"name": s["function"]["name"], "description": s["function"]["description"],
     "input_schema": s["function"]["parameters"]}
    for s in (SCHEMAS["get_weather"], SCHEMAS["get_time"])
]  # fmt: skip


def _run(name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    try:
        return json.dumps(TOOLS[name](**arguments)), False
    except Exception as error:
        return f"Error: {type(error).__name__}: {error}", True


def run_scenario(scenario: str, tracer: Any) -> None:
    from anthropic import Anthropic

    base = os.environ["OPENAI_BASE_URL"].removesuffix("/").removesuffix("/v1")  # run.py's simulated model
    client = Anthropic(base_url=base, api_key=os.environ.get("ANTHROPIC_API_KEY", "sim"), max_retries=0)
    messages: list[dict[str, Any]] = []
    for index, user in enumerate(turns(scenario)):
        messages.append({"role": "user", "content": user})
        answer = None
        with tracer.start_as_current_span("turn", attributes={"corpus.turn": index}):
            for _ in range(8):
                response = client.messages.create(
                    model=os.environ["CORPUS_MODEL"], max_tokens=1024, system=SYSTEM, messages=messages,
                    tools=TOOL_SCHEMAS,
                )  # fmt: skip
                blocks = [b.model_dump(exclude_none=True) for b in response.content]
                messages.append({"role": "assistant", "content": blocks})
                uses = [b for b in response.content if b.type == "tool_use"]
                answer = "".join(b.text for b in response.content if b.type == "text")
                if not uses:
                    break
                results = []
                for use in uses:
                    content, failed = _run(use.name, dict(use.input))
                    results.append({"type": "tool_result", "tool_use_id": use.id, "content": content,
                                    **({"is_error": True} if failed else {})})  # fmt: skip
                messages.append({"role": "user", "content": results})
        log(scenario, user, answer)
