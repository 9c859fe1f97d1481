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
import {
  cli,
  DESCRIPTIONS,
  env,
  getTime,
  getWeather,
  INSTRUCTIONS,
  issueRefund,
  log,
  TRANSFERRED,
} from "./corpus.mjs";

export const SCENARIOS = ["single", "tool_loop", "parallel", "multi_turn", "tool_error", "handoff"];
const { tool, hasToolCall } = ai;
const stepCountIs = ai.stepCountIs ?? ai.isStepCount;
const Agent = ai.ToolLoopAgent ?? ai.Experimental_Agent;

/**
 * Run the scenario named on the command line. `modes` as run.py wants them (each sets AI_RECORD_CONTENT and
 * AI_STREAM, and may set more for `settings`); `start()` starts tracing and returns what to shut down;
 * `settings(agent, {record, sessionId})` is the telemetry part of an agent's settings; `instructions` is the
 * settings key of the system prompt.
 */
export async function recordScenario({ modes, start, settings, instructions = "instructions" }) {
  const { name, scenario } = cli(modes, SCENARIOS);
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

  function agents() {
    const city = z.object({ city: z.string() });
    if (name !== "handoff") {
      return agent("weather_agent", {
        get_weather: tool({ description: DESCRIPTIONS.get_weather, inputSchema: city, execute: getWeather }),
        get_time: tool({ description: DESCRIPTIONS.get_time, inputSchema: city, execute: getTime }),
      });
    }
    const billing = agent("billing_agent", {
      issue_refund: tool({
        description: DESCRIPTIONS.issue_refund,
        inputSchema: z.object({ order_id: z.number().int() }),
        execute: issueRefund,
      }),
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
