"""The conventions: tracevals' own attributes and the rules for every stack, the OpenTelemetry GenAI semantic
conventions (current and legacy), the providers' message shapes, OpenInference and OpenLLMetry. Their order in
`CONVENTIONS` is the order in which their column keys are read, before any framework's: a convention's key wins
over a framework's where a span carries both."""

from __future__ import annotations

from dataclasses import replace

from tracevals.model import attributes as tv
from tracevals.spans.declare import NAME, By, Dialect, Key, Messages, Parts, Unwrap

_LLM_OPERATIONS = ("chat", "text_completion", "generate_content", "completion", "embeddings")
_AGENT_OPERATIONS = ("invoke_agent", "create_agent", "invoke_workflow")
_LLAMA_INDEX_WORKFLOWS = tuple(
    f"{c}.workflow" for c in ("FunctionAgent", "ReActAgent", "CodeActAgent", "AgentWorkflow")
)

# What every span may carry, whatever its dialect: tracevals' own attributes (hand-offs, session ends, runs),
# the wrappers frameworks put around a tool's arguments or result, and the placeholders instrumentations
# write where they withhold a value.
GENERIC = Dialect(
    "tracevals",
    "tracevals' own attributes (its instrumentation and harness), and the rules for every stack",
    kind=(
        By(tv.HANDOFF_REASON, kind="handoff"),
        By(tv.SESSION_END, {"true": "session_end"}, otherwise=None, fold="json"),
    ),
    columns={
        "tool_effect": (tv.TOOL_EFFECT,),
        "tool_args_hash": (tv.TOOL_ARGS_HASH,),
        "run_id": (tv.RUN_ID,),
        "task_id": (tv.TASK_ID,),
        "attempt": (tv.ATTEMPT,),
        "variant": (tv.VARIANT,),
    },
    unwrap=(
        Unwrap(frozenset({"result"}), ("result",)),  # Google ADK: a result that is not an object
        Unwrap(frozenset({"output"}), ("output",)),  # LangChain.js (OpenInference): {"output": ToolMessage}
        Unwrap(frozenset({"output", "kwargs"}), ("output",)),  # OpenLLMetry's LangChain callback: output + kwargs
        Unwrap(frozenset({"kwargs"}), ("kwargs",)),  # LlamaIndex (OpenInference): a tool's bound arguments
        Unwrap(frozenset({"args", "kwargs"}), ("kwargs",), empty="args"),  # Traceloop JS, Langfuse's @observe
        Unwrap(frozenset({"input_str", "inputs"}), ("inputs",), exact=False),  # LangChain's callback envelope
        # a serialised ToolMessage: LangChain Python's {"type": "tool", "data": ...}, LangChain.js's constructor,
        # and its fields as they are ({"content", "type": "tool", "tool_call_id", ...}: Langfuse's LangChain handler)
        Unwrap(frozenset({"type", "data"}), ("data", "content"), exact=False, when=(("type", "tool"),)),
        Unwrap(frozenset({"type", "content", "tool_call_id"}), ("content",), exact=False, when=(("type", "tool"),)),
        # a LangGraph `Command` a tool returns (a hand-off: langgraph-supervisor's): its answer is the last message
        # of its update, the ToolMessage it adds
        Unwrap(frozenset({"graph", "update", "goto"}), ("update", "messages", -1), exact=False),
        Unwrap(frozenset({"lc", "type", "id", "kwargs"}), ("kwargs", "content"), when=(("type", "constructor"),)),
        Unwrap(frozenset({"tool_name", "raw_output"}), ("raw_output",), exact=False),  # LlamaIndex's ToolOutput
        # LlamaIndex's ToolCallResult event (OpenLLMetry: a tool step's output), around its ToolOutput
        Unwrap(frozenset({"tool_name", "tool_kwargs", "tool_output"}), ("tool_output",), exact=False),
        # a Gemini FunctionResponse (OpenInference's ADK instrumentor: a tool's output is the part ADK sends back)
        Unwrap(frozenset({"id", "name", "response"}), ("response",)),
    ),
    placeholders=("__REDACTED__", "[REDACTED]", "<redacted>", "<elided>", "<not specified>"),
    placeholder_prefixes=("[Scrubbed due to ",),  # Logfire's scrubbing: "[Scrubbed due to 'session']"
    precedence=0,
)

# The kind a GenAI operation names (an operation not listed is no call)
_GENAI_OPERATION = By(
    "gen_ai.operation.name",
    {**dict.fromkeys(_LLM_OPERATIONS, "llm"), "execute_tool": "tool", **dict.fromkeys(_AGENT_OPERATIONS, "agent")},
)

GENAI = Dialect(
    "genai",
    "OpenTelemetry GenAI semantic conventions, current (gen_ai.operation.name, gen_ai.provider.name)",
    recognise_keys=("gen_ai.operation.name", "gen_ai.provider.name"),
    kind=(
        _GENAI_OPERATION,
        By("gen_ai.tool.name", kind="tool"),
        By("gen_ai.provider.name", kind="other"),  # a provider named, no operation: no call
    ),
    columns={
        "operation": ("gen_ai.operation.name",),
        "session_id": ("gen_ai.conversation.id",),
        "agent_name": ("gen_ai.agent.name",),
        "provider": ("gen_ai.provider.name",),
        "model": ("gen_ai.response.model", "gen_ai.request.model"),
        "input_tokens": ("gen_ai.usage.input_tokens",),
        "output_tokens": ("gen_ai.usage.output_tokens",),
        "tool_name": ("gen_ai.tool.name",),
        "tool_call_id": ("gen_ai.tool.call.id",),
        # some instrumentations put a framework's envelope here too (OpenLLMetry's LangChain callback payload)
        "tool_args": (Key("gen_ai.tool.call.arguments", envelope=True),),
        "tool_result": (Key("gen_ai.tool.call.result", envelope=True),),
        "error_type": ("error.type",),
    },
    messages=(
        Messages("gen_ai.input.messages", "input", 1),
        Messages("gen_ai.output.messages", "output", 1),
        Messages("gen_ai.input.messages", "input", 6, on="agent"),
        Messages("gen_ai.output.messages", "output", 6, on="agent"),
    ),
    parts=Parts(
        call_types=("tool_call", "function_call"),
        result_types=("tool_call_response", "tool_result", "function_call_output"),
        args=("$.arguments",),
        results=("$.response", "$.result"),
        # `call_id` before `id`: OpenAI's Responses items, and the instrumentations that pass them on as parts
        # (OpenTelemetry's for Node.js), name a call's own item `id` (fc_...) and the call `call_id` (call_...),
        # the id its output carries
        ids=("$.call_id", "$.id"),
        names=("$.name",),
    ),
    agent_span_names=(r"^invoke_agent\s+(.+)$",),
    precedence=30,
)

GENAI_LEGACY = Dialect(
    "genai_legacy",
    "OpenTelemetry GenAI semantic conventions before v1.37 (gen_ai.system, gen_ai.usage.prompt_tokens)",
    recognise_prefixes=("gen_ai.",),
    kind=(By("gen_ai.tool.name", kind="tool"), By("gen_ai.request.model", kind="llm"), By("gen_ai.system", kind="llm")),
    columns={
        "provider": ("gen_ai.system",),
        "input_tokens": ("gen_ai.usage.prompt_tokens",),
        "output_tokens": ("gen_ai.usage.completion_tokens",),
    },
    precedence=40,
)

# The message shapes of the providers' own APIs, whichever dialect carries them: OpenAI chat
# ({"tool_calls": [{"function": ...}]}), Gemini ({"function_call": ...}), Bedrock Converse ({"toolUse": ...}),
# Anthropic's Messages API ({"type": "tool_use", "id", "name", "input"} / {"type": "tool_result", "tool_use_id",
# "content"}; OpenAI's Responses API items are the GenAI conventions' `function_call` / `function_call_output`).
PROVIDERS = Dialect(
    "providers",
    "the providers' message shapes (OpenAI, Gemini, Bedrock, Anthropic), read in any dialect's messages",
    parts=Parts(
        call_types=("tool_use",),
        call_objects=("function_call", "toolUse", "function"),
        result_objects=("toolResult", "function_response"),
        args=("$.function_call.args", "$.toolUse.input", "$.function.arguments", "$.input"),
        results=("$.function_response.response", "$.toolResult.content"),
        ids=(
            "$.function_call.id",
            "$.function_response.id",
            "$.toolUse.toolUseId",
            "$.toolResult.toolUseId",
            "$.tool_use_id",
        ),
        names=("$.function_call.name", "$.function.name", "$.function_response.name", "$.toolUse.name"),
    ),
)

OPENINFERENCE = Dialect(
    "openinference",
    "OpenInference (Arize): openinference.span.kind, llm.*, tool.*, input.value / output.value",
    recognise_keys=("openinference.span.kind",),
    kind=(
        By("openinference.span.kind", {"LLM": "llm", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain"}, fold="upper"),
    ),
    columns={
        "operation": ("openinference.span.kind",),
        "session_id": ("session.id",),
        "agent_name": ("agent.name",),
        "provider": ("llm.provider", "llm.system"),
        "model": ("llm.model_name",),
        "input_tokens": ("llm.token_count.prompt",),
        "output_tokens": ("llm.token_count.completion",),
        "tool_name": ("tool.name",),
        "tool_call_id": ("tool_call.id", "tool.call.id"),
    },
    # Not `tool.parameters`: that is the tool's JSON Schema; the call's arguments are its `input.value`.
    tool_columns={
        "tool_args": (Key("input.value", envelope=True),),
        "tool_result": (Key("output.value", envelope=True),),
    },
    precedence=10,
)

OPENLLMETRY = Dialect(
    "openllmetry",
    "OpenLLMetry / Traceloop: traceloop.span.kind, traceloop.entity.*, llm.request.type",
    recognise_keys=("traceloop.span.kind", "llm.request.type"),
    kind=(
        By("llm.request.type", kind="llm"),
        # a span whose GenAI operation is known is that operation, whatever its Traceloop kind (LlamaIndex's
        # `OpenAILike.task`: a model call OpenLLMetry marks a task and describes by the GenAI conventions)
        replace(_GENAI_OPERATION, otherwise=None),
        # a task that ran a tool (LlamaIndex's `BaseWorkflowAgent.task` with the tool's name and arguments)
        By("tool.name", kind="tool"),
        # the run of one of LlamaIndex's agent classes: a workflow named by the class, its agents named in its
        # steps' events (dialects/llama_index.py), as OpenInference's CHAIN root is
        By(NAME, dict.fromkeys(_LLAMA_INDEX_WORKFLOWS, "chain"), otherwise=None),
        By("traceloop.span.kind", {"workflow": "agent", "agent": "agent", "task": "chain", "tool": "tool"}),
    ),
    columns={
        "operation": ("traceloop.span.kind",),
        "session_id": ("traceloop.association.properties.session_id",),
        "model": ("llm.response.model",),
        "input_tokens": ("llm.usage.prompt_tokens",),
        "output_tokens": ("llm.usage.completion_tokens",),
    },
    tool_columns={
        "tool_name": ("traceloop.entity.name",),
        "tool_args": (Key("traceloop.entity.input", envelope=True), "tool.arguments"),
        "tool_result": (Key("traceloop.entity.output", envelope=True),),
        # the event a LlamaIndex tool step returns, `ToolCallResult` {tool_name, tool_kwargs, tool_id, tool_output}
        "tool_call_id": (Key("traceloop.entity.output", ("tool_id",)),),
    },
    # an agent's run as text, where no model call span holds the turn's texts (OpenLLMetry's Agno)
    agent_inputs=("traceloop.entity.input",),
    agent_outputs=("traceloop.entity.output",),
    precedence=20,
)

CONVENTIONS: tuple[Dialect, ...] = (GENERIC, GENAI, GENAI_LEGACY, PROVIDERS, OPENINFERENCE, OPENLLMETRY)
