// Recorder for the Vercel AI SDK 6 (`ai`) with its built-in OpenTelemetry spans (`experimental_telemetry`).
//
//   node vercel_ai_v6.mjs --modes        # {mode: {ENV: value}}
//   node vercel_ai_v6.mjs --scenarios    # the scenarios it runs
//   node vercel_ai_v6.mjs <scenario>     # run one (see run.py, which installs vercel_ai_v6.package.json)
//
// Agents are `ToolLoopAgent`s (AI SDK 6's agent class) on `createOpenAI({baseURL}).chat(model)`: chat
// completions, as against any OpenAI-compatible server (the provider's default, the Responses API, sends
// `item_reference` items for earlier outputs, which the simulated model does not take). Telemetry is the SDK's own: `experimental_telemetry: {isEnabled, functionId:
// <agent name>, metadata: {sessionId}, recordInputs, recordOutputs}` with the plain OpenTelemetry Node SDK
// exporting OTLP/HTTP protobuf. The AI SDK has no agent name in its spans: `functionId` is the documented
// label, so it carries the agent's name. It has no session either: `metadata.sessionId` (one id per
// conversation) is the convention trace backends read (`ai.telemetry.metadata.sessionId`).
//
// Handoff: the AI SDK has no hand-off primitive; its idiom is a sub-agent behind a tool. triage_agent's tool
// `transfer_to_billing_agent` runs billing_agent on the conversation so far (plus the transfer call and its
// return "Transferred to billing_agent.", as a hand-off continues a conversation) and returns billing's
// answer; triage stops on that call (`stopWhen: hasToolCall(...)`), so billing's answer is the turn's.

import { randomUUID } from "node:crypto";
import { createOpenAI } from "@ai-sdk/openai";
import { hasToolCall, stepCountIs, ToolLoopAgent, tool } from "ai";
import { z } from "zod";
import {
  cli,
  DESCRIPTIONS,
  env,
  getTime,
  getWeather,
  INSTRUCTIONS,
  issueRefund,
  log,
  startTracing,
  TRANSFERRED,
} from "./corpus.mjs";

const MODES = {
  content: { AI_RECORD_CONTENT: "1", AI_STREAM: "0" },
  stream: { AI_RECORD_CONTENT: "1", AI_STREAM: "1" },
  no_content: { AI_RECORD_CONTENT: "0", AI_STREAM: "0" },
};
const SCENARIOS = ["single", "tool_loop", "parallel", "multi_turn", "tool_error", "handoff"];

const { name, scenario } = cli(MODES, SCENARIOS);
const sdk = await startTracing();
const record = env("AI_RECORD_CONTENT", "1") === "1";
const stream = env("AI_STREAM", "0") === "1";
const sessionId = randomUUID();
const model = createOpenAI({ baseURL: env("OPENAI_BASE_URL"), apiKey: env("OPENAI_API_KEY", "sim") }).chat(
  env("CORPUS_MODEL"),
);

const telemetry = (agent) => ({
  isEnabled: true,
  functionId: agent,
  metadata: { sessionId },
  recordInputs: record,
  recordOutputs: record,
});

const city = z.object({ city: z.string() });
const weatherTools = {
  get_weather: tool({ description: DESCRIPTIONS.get_weather, inputSchema: city, execute: getWeather }),
  get_time: tool({ description: DESCRIPTIONS.get_time, inputSchema: city, execute: getTime }),
};

async function run(agent, messages) {
  if (!stream) return agent.generate({ messages });
  const result = await agent.stream({ messages });
  await result.consumeStream();
  return { text: await result.text, steps: await result.steps, response: await result.response };
}

function agents() {
  if (name !== "handoff") {
    return new ToolLoopAgent({
      id: "weather_agent",
      model,
      instructions: INSTRUCTIONS.weather_agent,
      tools: weatherTools,
      experimental_telemetry: telemetry("weather_agent"),
    });
  }
  const billing = new ToolLoopAgent({
    id: "billing_agent",
    model,
    instructions: INSTRUCTIONS.billing_agent,
    tools: {
      issue_refund: tool({
        description: DESCRIPTIONS.issue_refund,
        inputSchema: z.object({ order_id: z.number().int() }),
        execute: issueRefund,
      }),
    },
    experimental_telemetry: telemetry("billing_agent"),
  });
  const transfer = tool({
    description: DESCRIPTIONS.transfer_to_billing_agent,
    inputSchema: z.object({}),
    execute: async (input, { messages, toolCallId }) => {
      const toolName = "transfer_to_billing_agent";
      const history = [
        ...messages,
        { role: "assistant", content: [{ type: "tool-call", toolCallId, toolName, input }] },
        {
          role: "tool",
          content: [{ type: "tool-result", toolCallId, toolName, output: { type: "text", value: TRANSFERRED } }],
        },
      ];
      return (await run(billing, history)).text;
    },
  });
  return new ToolLoopAgent({
    id: "triage_agent",
    model,
    instructions: INSTRUCTIONS.triage_agent,
    tools: { transfer_to_billing_agent: transfer },
    stopWhen: [hasToolCall("transfer_to_billing_agent"), stepCountIs(20)],
    experimental_telemetry: telemetry("triage_agent"),
  });
}

try {
  const agent = agents();
  const messages = [];
  for (const turn of scenario.turns) {
    messages.push({ role: "user", content: turn.user });
    const result = await run(agent, messages);
    const answer = name === "handoff" ? result.steps?.at(-1)?.toolResults?.[0]?.output : result.text;
    log(name, turn.user, answer ?? result.text);
    messages.push(...result.response.messages);
  }
} finally {
  await sdk.shutdown(); // flushes the batch span processor
}
