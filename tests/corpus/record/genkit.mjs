// Recorder for Genkit (Firebase Genkit, `genkit`) agents traced by Genkit's own OpenTelemetry spans.
//
//   node genkit.mjs --modes        # {mode: {ENV: value}}
//   node genkit.mjs --scenarios    # the scenarios it runs (no handoff: Genkit has no hand-off of its own)
//   node genkit.mjs <scenario>     # run one (see run.py, which installs genkit.package.json)
//
// Genkit traces every action it runs (flows, `generate`, model calls, tools) with the OpenTelemetry API, its
// attributes its own (`genkit:name`, `genkit:type`, `genkit:metadata:subtype`, `genkit:input`, `genkit:output`
// as JSON ...), and exports them through a NodeSDK it starts itself: `enableTelemetry(config)` (from
// `genkit/tracing`) takes the NodeSDK configuration, here a batch processor of an OTLP/HTTP protobuf span exporter to
// OTEL_EXPORTER_OTLP_ENDPOINT and the resource from the environment only.
//
// The agent, as Genkit's documentation writes one: a flow `weather_agent` a user turn, running `ai.generate` with
// the system prompt, the conversation so far (`messages`, the last turn's `response.messages`), the user's text
// and the two tools (Genkit runs the tool loop itself). The model is the simulated one through
// `@genkit-ai/compat-oai`'s OpenAI-compatible plugin (Chat Completions at OPENAI_BASE_URL, model
// `sim/<CORPUS_MODEL>`). A Genkit tool that throws aborts the generate call, so get_weather's tool returns the
// error's text instead (`Error: <message>`), what the model then sees.

import { openAICompatible } from "@genkit-ai/compat-oai";
import { envDetector } from "@opentelemetry/resources";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { genkit, z } from "genkit";
import { enableTelemetry, flushTracing } from "genkit/tracing";
import { cli, DESCRIPTIONS, env, log, SCENARIOS, TOOLS } from "./corpus.mjs";

const MODES = { default: {} };
const { name, scenario } = cli(
  MODES,
  SCENARIOS.filter((s) => s !== "handoff"),
);

await enableTelemetry({
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  resourceDetectors: [envDetector],
});
const ai = genkit({
  plugins: [openAICompatible({ name: "sim", baseURL: env("OPENAI_BASE_URL"), apiKey: env("OPENAI_API_KEY", "sim") })],
});

const city = z.object({ city: z.string() });
const tools = ["get_weather", "get_time"].map((id) =>
  ai.defineTool({ name: id, description: DESCRIPTIONS[id], inputSchema: city }, async (input) => {
    try {
      return TOOLS[id].execute(input);
    } catch (error) {
      return `Error: ${error.message}`;
    }
  }),
);

let history = [];
const agent = ai.defineFlow({ name: "weather_agent", inputSchema: z.string(), outputSchema: z.string() }, async (user) => {
  const response = await ai.generate({
    model: `sim/${env("CORPUS_MODEL")}`,
    system: "You are a weather assistant. Use the tools to answer.",
    messages: history,
    prompt: user,
    tools,
  });
  history = response.messages.filter((m) => m.role !== "system");
  return response.text;
});

for (const turn of scenario.turns) {
  log(name, turn.user, await agent(turn.user));
}
await flushTracing();
