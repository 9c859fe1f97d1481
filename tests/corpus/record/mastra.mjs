// Recorder for Mastra agents traced by Mastra's own observability (`@mastra/observability`) exported with
// `@mastra/otel-exporter`.
//
//   node mastra.mjs --modes        # {mode: {ENV: value}}
//   node mastra.mjs --scenarios    # the scenarios it runs
//   node mastra.mjs <scenario>     # run one (see run.py, which installs mastra.package.json)
//
// Mastra traces its agents itself (AGENT_RUN, MODEL_GENERATION, MODEL_STEP, TOOL_CALL ... spans) and hands
// them to exporters; `OtelExporter` converts them to OpenTelemetry spans (GenAI conventions plus `mastra.*`)
// and sends them with the OTLP/HTTP protobuf exporter it loads (`provider: {custom: {endpoint, protocol}}`).
// It does not read OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES: the recorder passes them as the
// observability config's `serviceName` and the exporter's `resourceAttributes`.
//
// The session is Mastra's memory thread: every agent has `Memory` on an `InMemoryStore`, and each generate()
// of a scenario names one thread (`memory: {thread, resource}`), so turn 2 of multi_turn gets turn 1 from
// memory and the spans carry the thread id as `gen_ai.conversation.id`.
//
// Handoff: Mastra's sub-agents (`agents: {...}`) become tools `agent-<name>` whose input requires a `prompt`;
// the scenario's hand-off call has no arguments, so the recorder uses the other documented idiom, an agent
// called from a tool: triage_agent's tool `transfer_to_billing_agent` runs billing_agent on the conversation so
// far (the tool context's messages plus the transfer call with its return "Transferred to billing_agent.", as a
// sealed stored message: see below), inside the tool's tracing context, and returns billing's answer; triage stops on that call (a `stopWhen`
// condition on the last step's tool calls).

import { randomUUID } from "node:crypto";
import { createOpenAI } from "@ai-sdk/openai";
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { Memory } from "@mastra/memory";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { z } from "zod";
import { cli, DESCRIPTIONS, env, INSTRUCTIONS, log, TOOLS, TRANSFERRED } from "./corpus.mjs";

const MODES = {
  default: { MASTRA_HIDE: "0" },
  hidden: { MASTRA_HIDE: "1" },
};
const { name, scenario } = cli(MODES);
process.env.MASTRA_TELEMETRY_DISABLED = "true"; // Mastra's own usage analytics (PostHog), not the traces
const hide = env("MASTRA_HIDE", "0") === "1";

const resourceAttributes = Object.fromEntries(
  env("OTEL_RESOURCE_ATTRIBUTES", "")
    .split(",")
    .filter(Boolean)
    .map((pair) => pair.split("=", 2)),
);
const exporter = new OtelExporter({
  provider: { custom: { endpoint: env("OTEL_EXPORTER_OTLP_ENDPOINT"), protocol: "http/protobuf" } },
  resourceAttributes,
});
const model = createOpenAI({ baseURL: env("OPENAI_BASE_URL"), apiKey: env("OPENAI_API_KEY", "sim") }).chat(
  env("CORPUS_MODEL"),
);
const memory = new Memory({ storage: new InMemoryStore() });
const thread = randomUUID();
const tracingOptions = hide ? { hideInput: true, hideOutput: true } : {};

const tools = Object.fromEntries(
  Object.entries(TOOLS).map(([id, { description, inputSchema, execute }]) => [
    id,
    createTool({ id, description, inputSchema, execute: async (input) => execute(input) }),
  ]),
);

const agent = (id, agentTools) =>
  new Agent({ id, name: id, instructions: INSTRUCTIONS[id], model, tools: agentTools, memory });

const billing = agent("billing_agent", { issue_refund: tools.issue_refund });
const transfer = createTool({
  id: "transfer_to_billing_agent",
  description: DESCRIPTIONS.transfer_to_billing_agent,
  inputSchema: z.object({}),
  execute: async (input, context) => {
    const { messages, toolCallId } = context.agent;
    const toolName = "transfer_to_billing_agent";
    // Mastra's message list folds an assistant message it was given into the run's first answer (they become
    // one assistant turn on the wire), so billing's second model call would see the same conversation shape as
    // its first. The history is therefore given as Mastra's stored messages (format 2, in order), the transfer
    // sealed (Mastra's own flag for a finished stored message) so that it stays a turn of its own.
    const start = Date.now() - messages.length - 1;
    const stored = (id, role, parts, at, metadata) => ({
      id,
      role,
      createdAt: new Date(start + at),
      content: { format: 2, parts, ...(metadata ? { metadata } : {}) },
    });
    const text = (content) =>
      typeof content === "string" ? [{ type: "text", text: content }] : content.filter((p) => p.type === "text");
    const history = [
      ...messages.map((m, i) => stored(`history-${i}`, m.role, text(m.content), i)),
      stored(
        `transfer-${toolCallId}`,
        "assistant",
        [{ type: "tool-invocation", toolInvocation: { state: "result", toolCallId, toolName, args: input, result: TRANSFERRED } }],
        messages.length,
        { mastra: { sealed: true } },
      ),
    ];
    const result = await billing.generate(history, { tracingContext: context.tracingContext, tracingOptions });
    return result.text;
  },
});
const agents =
  name === "handoff"
    ? { triage_agent: agent("triage_agent", { transfer_to_billing_agent: transfer }), billing_agent: billing }
    : { weather_agent: agent("weather_agent", { get_weather: tools.get_weather, get_time: tools.get_time }) };

const mastra = new Mastra({
  agents,
  storage: new InMemoryStore(),
  logger: false,
  observability: new Observability({
    configs: { otel: { serviceName: env("OTEL_SERVICE_NAME", "mastra-service"), exporters: [exporter] } },
  }),
});

function transferred({ steps }) {
  const calls = steps.at(-1)?.toolCalls ?? [];
  return calls.some((call) => (call.payload?.toolName ?? call.toolName) === "transfer_to_billing_agent");
}

try {
  const main = mastra.getAgent(name === "handoff" ? "triage_agent" : "weather_agent");
  for (const turn of scenario.turns) {
    const result = await main.generate(turn.user, {
      memory: { thread, resource: "corpus-user" },
      tracingOptions,
      ...(name === "handoff" ? { stopWhen: transferred } : {}),
    });
    const delegated = result.steps?.at(-1)?.toolResults?.[0]?.payload?.result;
    log(name, turn.user, name === "handoff" ? (delegated ?? result.text) : result.text);
  }
} finally {
  await mastra.shutdown(); // flushes the exporters
}
