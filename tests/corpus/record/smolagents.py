"""Recorder: Hugging Face smolagents (`ToolCallingAgent`) under OpenInference's smolagents instrumentation.

    python smolagents.py --modes | --scenarios | <scenario>

See run.py for the contract. Four framework-side adjustments, all on smolagents' side of the wire (the
simulated model and the scenario are untouched):

1. `ToolCallingAgent` ends a run only through its `final_answer` tool, and a reply without a tool call is
   an `AgentParsingError` (the step fails and the agent asks again). The scripted model answers in plain
   text, so the model's `parse_tool_calls` (smolagents' own hook for "APIs that do not return the tool call
   as a specific object") turns a plain-text reply into a `final_answer(answer=<text>)` call: the run ends
   on that reply, with smolagents' ordinary `final_answer` TOOL span.
2. smolagents sends tool observations as `user` messages by default (`tool_role_conversions`); the
   scripted model counts user messages to know the turn, so `custom_role_conversions` sends them with the
   `system` role instead (tool calls stay `assistant`). The content is the same.
3. handoff: the triage agent lists its managed agent before `final_answer` among the tools it offers (the
   scripted model's `<handoff>` is the first offered tool that is not one of the scenario's), and the
   managed agent accepts a call without a `task` (the scripted hand-off has no arguments): it then gets
   the user's request as its task.
4. A step's tool calls are kept in the agent's memory before they run (smolagents keeps them only after they
   all succeeded, so a failed call left no assistant message behind and the model was asked the same again).
"""

from __future__ import annotations

import os
from typing import Any

from corpus import TOOLS, log, main, otel, turns

MODES = {
    "openinference": {},
    "openinference_hidden": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
}


def build(scenario: str) -> Any:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool
    from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

    class Model(OpenAIServerModel):
        def parse_tool_calls(self, message: Any) -> Any:
            if not message.tool_calls and message.content:
                message.role = MessageRole.ASSISTANT
                message.tool_calls = [
                    ChatMessageToolCall(
                        id="final_answer_0",
                        type="function",
                        function=ChatMessageToolCallFunction(
                            name="final_answer", arguments={"answer": message.content}
                        ),
                    )
                ]
            return super().parse_tool_calls(message)

    def model() -> Any:
        return Model(
            model_id=os.environ["CORPUS_MODEL"],
            api_base=os.environ["OPENAI_BASE_URL"],
            api_key="sim",
            custom_role_conversions={
                MessageRole.TOOL_CALL: MessageRole.ASSISTANT,
                MessageRole.TOOL_RESPONSE: MessageRole.SYSTEM,
            },
            client_kwargs={"max_retries": 0},
        )

    @tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city.

        Args:
            city: The city's name.
        """
        return TOOLS["get_weather"](city)

    @tool
    def get_time(city: str) -> dict:
        """Get the local time in a city.

        Args:
            city: The city's name.
        """
        return TOOLS["get_time"](city)

    @tool
    def issue_refund(order_id: int) -> dict:
        """Refund an order.

        Args:
            order_id: The order's number.
        """
        return TOOLS["issue_refund"](order_id)

    from smolagents.memory import ToolCall

    class Agent(ToolCallingAgent):
        def process_tool_calls(self, chat_message: Any, memory_step: Any) -> Any:
            # smolagents stores a step's tool calls only once they all succeeded: a failed call would leave
            # no assistant message in the memory (and the scripted model would be asked the same again).
            memory_step.tool_calls = [
                ToolCall(name=c.function.name, arguments=c.function.arguments, id=c.id) for c in chat_message.tool_calls
            ]
            yield from super().process_tool_calls(chat_message, memory_step)

    if scenario != "handoff":
        return Agent(tools=[get_weather, get_time], model=model(), name="weather_agent", max_steps=6, verbosity_level=0)

    user_text = turns("handoff")[0]

    class Billing(Agent):
        def __call__(self, task: str | None = None, **kwargs: Any) -> Any:
            return super().__call__(task or user_text, **kwargs)

    class Triage(Agent):
        @property
        def tools_and_managed_agents(self) -> list[Any]:
            return list(self.managed_agents.values()) + list(self.tools.values())

    billing = Billing(
        tools=[issue_refund],
        model=model(),
        name="billing_agent",
        description="Handles refunds and billing questions.",
        max_steps=6,
        verbosity_level=0,
    )
    triage = Triage(
        tools=[], model=model(), name="triage_agent", managed_agents=[billing], max_steps=6, verbosity_level=0
    )
    billing.inputs["task"]["nullable"] = True  # set by the manager: the scripted hand-off passes no task
    return triage


def record(scenario: str) -> None:
    with otel() as providers:
        from openinference.instrumentation import using_session
        from openinference.instrumentation.smolagents import SmolagentsInstrumentor

        SmolagentsInstrumentor().instrument(tracer_provider=providers.tracer)
        agent = build(scenario)
        with using_session(f"corpus-{scenario}"):
            for i, user in enumerate(turns(scenario)):
                log(scenario, user, agent.run(user, reset=(i == 0)))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
