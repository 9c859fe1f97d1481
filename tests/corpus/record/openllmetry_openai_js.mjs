// Recorder for OpenLLMetry JS's OpenAI instrumentation (`@traceloop/instrumentation-openai`, set up by
// `@traceloop/node-server-sdk`'s `traceloop.initialize()`) around openai_loop.mjs's hand-written tool loop.
//
//   node openllmetry_openai_js.mjs --modes        # {mode: {ENV: value}}
//   node openllmetry_openai_js.mjs --scenarios    # the scenarios it runs
//   node openllmetry_openai_js.mjs <scenario>     # run one (see run.py)
//
// The JavaScript twin of the Python `openllmetry_openai` recorder. An ES module's `import OpenAI` is not seen by the
// SDK's require hooks, so the class is handed to it (`instrumentModules: {openAI: OpenAI}`, as its docs say for
// ES modules). Mode `no_content`: TRACELOOP_TRACE_CONTENT=false. The OpenTelemetry API is pinned to the version the
// SDK brings (1.9.1): a newer copy for the loop would not see its tracer provider (the loop's `turn` spans lost).

import * as traceloop from "@traceloop/node-server-sdk";
import OpenAI from "openai";
import { cli, startTraceloop } from "./corpus.mjs";
import { LOOP_SCENARIOS, runLoop } from "./openai_loop.mjs";

const MODES = { default: { TRACELOOP_TRACE_CONTENT: "true" }, no_content: { TRACELOOP_TRACE_CONTENT: "false" } };
const { name, scenario } = cli(MODES, LOOP_SCENARIOS);
const tracing = startTraceloop(traceloop, { openAI: OpenAI });
try {
  await runLoop(OpenAI, name, scenario, "corpus.openllmetry_openai_js.loop");
} finally {
  await tracing.shutdown();
}
