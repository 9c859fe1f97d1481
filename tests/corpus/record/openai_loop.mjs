// The hand-written tool loop of the JavaScript OpenAI-client recorders (openai_v2.py's `run_scenario`, in
// JavaScript): no agent framework, the plain `openai` client, the way most TypeScript agents start.
//
// Call the model (Chat Completions at OPENAI_BASE_URL, model CORPUS_MODEL) with get_weather and get_time, run the
// tools it asks for, send their results back as `tool` messages (JSON text; a tool that throws is handed to the
// model as `Error: <name>: <message>`, here `Error: Error: unknown city: Atlantis`: JavaScript has no ValueError),
// until it answers without tool calls; every turn of a scenario shares one message history. The instrumentations
// make only model-call spans: the loop adds one plain span per user turn, `turn` (attribute `corpus.turn`, no
// GenAI attributes), so that the model calls of a turn share a trace.

import { trace } from "@opentelemetry/api";
import { env, log, TOOLS } from "./corpus.mjs";

/** A plain client has no hand-off: the scenarios a hand-written loop plays. */
export const LOOP_SCENARIOS = ["single", "tool_loop", "parallel", "multi_turn", "tool_error"];

const SYSTEM = "You are a weather assistant. Use the tools for weather and time.";
const CITY = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const SCHEMAS = [
  { type: "function", function: { name: "get_weather", description: "Get the current weather for a city.", parameters: CITY } },
  { type: "function", function: { name: "get_time", description: "Get the current local time in a city.", parameters: CITY } },
];

function toolResult(name, args) {
  try {
    const result = TOOLS[name].execute(args);
    return typeof result === "string" ? result : JSON.stringify(result);
  } catch (error) {
    return `Error: ${error.name}: ${error.message}`;
  }
}

/** Play `scenario` ({turns: [{user}]}) with `OpenAI` (the client class, instrumented or patched by the caller). */
export async function runLoop(OpenAI, name, scenario, scope) {
  const client = new OpenAI({ baseURL: env("OPENAI_BASE_URL"), apiKey: env("OPENAI_API_KEY", "sim") });
  const tracer = trace.getTracer(scope);
  const messages = [{ role: "system", content: SYSTEM }];
  for (const [index, turn] of scenario.turns.entries()) {
    messages.push({ role: "user", content: turn.user });
    await tracer.startActiveSpan("turn", { attributes: { "corpus.turn": index } }, async (span) => {
      try {
        for (let step = 0; step < 8; step++) {
          const response = await client.chat.completions.create({
            model: env("CORPUS_MODEL"),
            messages,
            tools: SCHEMAS,
          });
          const message = response.choices[0].message;
          const calls = message.tool_calls ?? [];
          const entry = { role: "assistant", content: message.content };
          if (calls.length) {
            entry.tool_calls = calls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.function.name, arguments: c.function.arguments },
            }));
          }
          messages.push(entry);
          if (!calls.length) break;
          for (const call of calls) {
            const args = JSON.parse(call.function.arguments || "{}");
            messages.push({ role: "tool", tool_call_id: call.id, content: toolResult(call.function.name, args) });
          }
        }
      } finally {
        span.end();
      }
    });
    log(name, turn.user, messages[messages.length - 1].content);
  }
}
