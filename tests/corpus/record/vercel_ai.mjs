// The Vercel AI SDK scenarios, shared by the recorders of its major versions (vercel_ai_v5/v6/v7.mjs): each
// names its modes and how a version turns telemetry on; this file runs the agents. `ai`, `@ai-sdk/openai` and
// `zod` resolve from the recorder's own npm environment (run.py copies this file there).
//
// Agents are the SDK's agent class (`ToolLoopAgent`; AI SDK 5's `Experimental_Agent`) on
// `createOpenAI({baseURL}).chat(model)`: chat completions, as against any OpenAI-compatible server (the
// provider's default, the Responses API, sends `item_reference` items for earlier outputs, which the simulated
// model does not take).
//
// Handoff: the AI SDK has no hand-off primitive; its idiom is a sub-agent behind a tool. triage_agent's tool
// `transfer_to_billing_agent` runs billing_agent on the conversation so far (plus the transfer call and its
// return "Transferred to billing_agent.", as a hand-off continues a conversation) and returns billing's
// answer; triage stops on that call (`stopWhen: hasToolCall(...)`), so billing's answer is the turn's.

import { randomUUID } from "node:crypto";
import { createOpenAI } from "@ai-sdk/openai";
import * as ai from "ai";
import { z } from "zod";
import { cli, DESCRIPTIONS, env, INSTRUCTIONS, log, TOOLS, TRANSFERRED } from "./corpus.mjs";

const { tool, hasToolCall } = ai;
const stepCountIs = ai.stepCountIs ?? ai.isStepCount;
const Agent = ai.ToolLoopAgent ?? ai.Experimental_Agent;

/** The modes of the versions that turn telemetry on per call (`experimental_telemetry`, AI SDK 5 and 6). */
export const MODES = {
  content: { AI_RECORD_CONTENT: "1", AI_STREAM: "0" },
  stream: { AI_RECORD_CONTENT: "1", AI_STREAM: "1" },
  no_content: { AI_RECORD_CONTENT: "0", AI_STREAM: "0" },
};

/**
 * `experimental_telemetry` (AI SDK 5 and 6) as `settings` for recordScenario: the AI SDK has no agent name in its
 * spans, `functionId` is the documented label, so it carries the agent's name; it has no session either:
 * `metadata.sessionId` (one id per conversation) is the convention trace backends read
 * (`ai.telemetry.metadata.sessionId`). `metadata(agent)` adds what a stack's convention wants there.
 */
export const experimentalTelemetry =
  (metadata = () => ({})) =>
  (agent, { record, sessionId }) => ({
    experimental_telemetry: {
      isEnabled: true,
      functionId: agent,
      metadata: { ...metadata(agent), sessionId },
      recordInputs: record,
      recordOutputs: record,
    },
  });

/**
 * Run the scenario named on the command line. `modes` as run.py wants them (each sets AI_RECORD_CONTENT and
 * AI_STREAM, and may set more for `settings`); `start()` starts tracing and returns what to shut down;
 * `settings(agent, {record, sessionId})` is the telemetry part of an agent's settings; `instructions` is the
 * settings key of the system prompt.
 */
export async function recordScenario({ modes, start, settings, instructions = "instructions" }) {
  const { name, scenario } = cli(modes);
  const tracing = await start();
  const options = { record: env("AI_RECORD_CONTENT", "1") === "1", sessionId: randomUUID() };
  const stream = env("AI_STREAM", "0") === "1";
  const model = createOpenAI({ baseURL: env("OPENAI_BASE_URL"), apiKey: env("OPENAI_API_KEY", "sim") }).chat(
    env("CORPUS_MODEL"),
  );
  // stepCountIs(20) is ToolLoopAgent's default loop bound (6, 7); AI SDK 5's Experimental_Agent stops after one
  // step unless told otherwise.
  const agent = (id, tools, extra = {}) =>
    new Agent({
      id,
      model,
      [instructions]: INSTRUCTIONS[id],
      tools,
      stopWhen: stepCountIs(20),
      ...extra,
      ...settings(id, options),
    });

  async function run(who, messages) {
    if (!stream) return who.generate({ messages });
    const result = await who.stream({ messages });
    await result.consumeStream();
    return { text: await result.text, steps: await result.steps, response: await result.response };
  }

  const tools = (...names) =>
    Object.fromEntries(
      names.map((n) => {
        const { description, inputSchema, execute } = TOOLS[n];
        return [n, tool({ description, inputSchema, execute })];
      }),
    );

  function agents() {
    if (name !== "handoff") return agent("weather_agent", tools("get_weather", "get_time"));
    const billing = agent("billing_agent", tools("issue_refund"));
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
    return agent(
      "triage_agent",
      { transfer_to_billing_agent: transfer },
      { stopWhen: [hasToolCall("transfer_to_billing_agent"), stepCountIs(20)] },
    );
  }

  try {
    const who = agents();
    const messages = [];
    for (const turn of scenario.turns) {
      messages.push({ role: "user", content: turn.user });
      const result = await run(who, messages);
      const delegated = result.steps?.at(-1)?.toolResults?.[0]?.output;
      log(name, turn.user, name === "handoff" ? delegated : result.text);
      messages.push(...result.response.messages);
    }
  } finally {
    await tracing.shutdown(); // flushes the batch span processor
  }
}
