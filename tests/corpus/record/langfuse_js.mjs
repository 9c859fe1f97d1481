// Recorder for the Langfuse TypeScript SDK (v5: `@langfuse/tracing`, `@langfuse/otel`, `@langfuse/openai`) around
// openai_loop.mjs's hand-written tool loop, instrumented the way Langfuse documents it for TypeScript.
//
//   node langfuse_js.mjs --modes        # {mode: {ENV: value}}
//   node langfuse_js.mjs --scenarios    # the scenarios it runs
//   node langfuse_js.mjs <scenario>     # run one (see run.py)
//
// The JavaScript twin of the Python `langfuse` recorder, on the plain client's loop: OpenTelemetry's
// NodeTracerProvider with Langfuse's `LangfuseSpanProcessor` (its own OTLP/HTTP exporter to
// `<LANGFUSE_BASE_URL>/api/public/otel/v1/traces`, basic auth: the recorder points LANGFUSE_BASE_URL at run.py's
// receiver with dummy keys), the client wrapped by `observeOpenAI` (generations), each tool wrapped by
// `observe(fn, {asType: "tool"})`, each user turn a `startActiveObservation("weather_agent", ..., {asType:
// "agent"})`, and `propagateAttributes({sessionId})` around the scenario's turns. `responses`: the loop on the
// Responses API.

import { LangfuseSpanProcessor } from "@langfuse/otel";
import { observeOpenAI } from "@langfuse/openai";
import { observe, propagateAttributes, startActiveObservation } from "@langfuse/tracing";
import { detectResources, envDetector } from "@opentelemetry/resources";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import OpenAI from "openai";
import { cli, env, TOOLS } from "./corpus.mjs";
import { LOOP_SCENARIOS, runLoop } from "./openai_loop.mjs";

const MODES = { default: {}, responses: { CORPUS_API: "responses" } };
const { name, scenario } = cli(MODES, LOOP_SCENARIOS);
process.env.LANGFUSE_BASE_URL = env("OTEL_EXPORTER_OTLP_ENDPOINT");
process.env.LANGFUSE_PUBLIC_KEY ??= "pk-lf-corpus";
process.env.LANGFUSE_SECRET_KEY ??= "sk-lf-corpus";

const resource = detectResources({ detectors: [envDetector] }); // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
const provider = new NodeTracerProvider({ resource, spanProcessors: [new LangfuseSpanProcessor()] });
provider.register();
for (const [tool, spec] of Object.entries(TOOLS)) spec.execute = observe(spec.execute, { name: tool, asType: "tool" });
/** The client class the loop constructs: Langfuse's wrapper of a plain client. */
class ObservedOpenAI {
  constructor(options) {
    return observeOpenAI(new OpenAI(options));
  }
}
const agentTurn = (index, run) => startActiveObservation("weather_agent", () => run(), { asType: "agent" });
try {
  await propagateAttributes({ sessionId: `corpus-${name}` }, () =>
    runLoop(ObservedOpenAI, name, scenario, "corpus.langfuse_js.loop", agentTurn),
  );
} finally {
  await provider.shutdown();
}
