// Recorder for OpenInference's OpenAI instrumentation for JavaScript (`@arizeai/openinference-instrumentation-openai`)
// around openai_loop.mjs's hand-written tool loop.
//
//   node openinference_openai_js.mjs --modes        # {mode: {ENV: value}}
//   node openinference_openai_js.mjs --scenarios    # the scenarios it runs
//   node openinference_openai_js.mjs <scenario>     # run one (see run.py)
//
// The JavaScript twin of the Python `openinference_openai` recorder: `manuallyInstrument(OpenAI)` patches the client
// class an ES module imported, spans through the plain OpenTelemetry Node SDK (OTLP/HTTP protobuf). Mode `hidden`
// hides inputs and outputs through the instrumentation's traceConfig (as for LangChain.js, openinference-core reads
// OPENINFERENCE_HIDE_* only when a traceConfig is given). Mode `responses` runs the loop on the Responses API,
// `stream` streams its chat calls.

import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import OpenAI from "openai";
import { cli, env, startTracing } from "./corpus.mjs";
import { LOOP_SCENARIOS, runLoop } from "./openai_loop.mjs";

const MODES = {
  default: { CORPUS_OI_HIDE: "0" },
  hidden: { CORPUS_OI_HIDE: "1" },
  responses: { CORPUS_OI_HIDE: "0", CORPUS_API: "responses" },
  stream: { CORPUS_OI_HIDE: "0", CORPUS_STREAM: "1" },
};
const { name, scenario } = cli(MODES, LOOP_SCENARIOS);
const sdk = await startTracing();
const hide = env("CORPUS_OI_HIDE", "0") === "1";
const traceConfig = hide ? { hideInputs: true, hideOutputs: true } : undefined;
new OpenAIInstrumentation({ traceConfig }).manuallyInstrument(OpenAI);
try {
  await runLoop(OpenAI, name, scenario, "corpus.openinference_openai_js.loop");
} finally {
  await sdk.shutdown();
}
