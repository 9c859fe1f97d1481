// Recorder for LangChain.js agents (`langchain` createAgent on LangGraph.js, see langchain_js.mjs) traced by
// OpenLLMetry JS (`@traceloop/node-server-sdk`).
//
//   node langchain_js_openllmetry.mjs --modes        # {mode: {ENV: value}}
//   node langchain_js_openllmetry.mjs --scenarios    # the scenarios it runs
//   node langchain_js_openllmetry.mjs <scenario>     # run one (see run.py)
//
// `traceloop.initialize()` (corpus.mjs's startTraceloop) sets up its own OpenTelemetry Node SDK with an OTLP/HTTP
// protobuf exporter to OTEL_EXPORTER_OTLP_ENDPOINT and always enables its LangChain instrumentation (it patches
// @langchain/core's callback manager, ESM included). Like the Python `langgraph_openllmetry` recorder, the session
// is only the checkpointer thread (LangGraph's `thread_id` run metadata).

import * as traceloop from "@traceloop/node-server-sdk";
import { cli, startTraceloop } from "./corpus.mjs";
import { runScenario } from "./langchain_js.mjs";

// One mode: `traceContent: false` (or TRACELOOP_TRACE_CONTENT=false) does not reach the LangChain instrumentation
// in 0.27.0 (initialize() turns content off for the other instrumentations only), so a content-off recording
// would hold the same content as this one.
const MODES = { default: {} };
const { name, scenario } = cli(MODES);
const tracing = startTraceloop(traceloop);

try {
  await runScenario(name, scenario);
} finally {
  await tracing.shutdown();
}
