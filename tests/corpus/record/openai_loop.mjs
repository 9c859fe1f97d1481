// The hand-written tool loop of the JavaScript OpenAI-client recorders (openai_v2.py's `run_scenario`, in
// JavaScript): no agent framework, the plain `openai` client, the way most TypeScript agents start.
//
// Call the model (Chat Completions at OPENAI_BASE_URL, model CORPUS_MODEL) with get_weather and get_time, run the
// tools it asks for, send their results back as `tool` messages (JSON text; a tool that throws is handed to the
// model as `Error: <name>: <message>`, here `Error: Error: unknown city: Atlantis`: JavaScript has no ValueError),
// until it answers without tool calls; every turn of a scenario shares one message history. The instrumentations
// make only model-call spans: the loop adds one plain span per user turn, `turn` (attribute `corpus.turn`, no
// GenAI attributes), so that the model calls of a turn share a trace. With CORPUS_API=responses the same loop
// speaks the Responses API (`client.responses.create`: the system prompt as `instructions`, the history as `input`
// items, the model's `function_call` items sent back with a `function_call_output` each), the API OpenAI now
// recommends for new agents. With CORPUS_STREAM=1 the chat calls are streamed.

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

const RESPONSE_TOOLS = SCHEMAS.map(({ function: f }) => ({ type: "function", ...f }));

function toolResult(name, args) {
  try {
    const result = TOOLS[name].execute(args);
    return typeof result === "string" ? result : JSON.stringify(result);
  } catch (error) {
    return `Error: ${error.name}: ${error.message}`;
  }
}

/** The loop's span per user turn unless the caller has its own: a plain `turn` span of the tracer `scope`. */
function plainTurn(scope) {
  const tracer = trace.getTracer(scope);
  return (index, run) =>
    tracer.startActiveSpan("turn", { attributes: { "corpus.turn": index } }, async (span) => {
      try {
        await run();
      } finally {
        span.end();
      }
    });
}

/** Play `scenario` ({turns: [{user}]}) with `OpenAI` (the client class, instrumented or patched by the caller);
 * `turn(index, run)` runs each user turn's calls (`run`) inside the turn's span. */
export async function runLoop(OpenAI, name, scenario, scope, turn = plainTurn(scope)) {
  const client = new OpenAI({ baseURL: env("OPENAI_BASE_URL"), apiKey: env("OPENAI_API_KEY", "sim") });
  const step = env("CORPUS_API", "chat") === "responses" ? responsesStep : chatStep;
  const history = [];
  for (const [index, { user }] of scenario.turns.entries()) {
    history.push({ role: "user", content: user });
    let answer = null;
    await turn(index, async () => {
      for (let n = 0; n < 8 && answer === null; n++) answer = await step(client, history);
    });
    log(name, user, answer);
  }
}

/** One Chat Completions call: its tool calls run and answered in `history` (null), or its text. Streamed with
 * CORPUS_STREAM=1 (the client's `stream()` helper, its final completion: what a chat UI's loop does). */
async function chatStep(client, history) {
  const request = {
    model: env("CORPUS_MODEL"),
    messages: [{ role: "system", content: SYSTEM }, ...history],
    tools: SCHEMAS,
  };
  const response =
    env("CORPUS_STREAM", "0") === "1"
      ? await client.chat.completions.stream({ ...request, stream_options: { include_usage: true } }).finalChatCompletion()
      : await client.chat.completions.create(request);
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
  history.push(entry);
  if (!calls.length) return message.content ?? "";
  for (const call of calls) {
    const args = JSON.parse(call.function.arguments || "{}");
    history.push({ role: "tool", tool_call_id: call.id, content: toolResult(call.function.name, args) });
  }
  return null;
}

/** One Responses API call: its output items kept in `history`, each function call answered (null), or its text. */
async function responsesStep(client, history) {
  const response = await client.responses.create({
    model: env("CORPUS_MODEL"),
    instructions: SYSTEM,
    input: history,
    tools: RESPONSE_TOOLS,
  });
  const calls = response.output.filter((item) => item.type === "function_call");
  for (const item of response.output) {
    if (item.type === "function_call") {
      history.push({ type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments });
    } else if (item.type === "message") {
      history.push({ role: "assistant", content: response.output_text });
    }
  }
  if (!calls.length) return response.output_text;
  for (const call of calls) {
    const output = toolResult(call.name, JSON.parse(call.arguments || "{}"));
    history.push({ type: "function_call_output", call_id: call.call_id, output });
  }
  return null;
}
