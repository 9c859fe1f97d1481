// Recorder for the Vercel AI SDK 6 (`ai`) exporting through OpenLLMetry JS (`@traceloop/node-server-sdk`).
//
//   node vercel_ai_v6_openllmetry.mjs --modes        # {mode: {ENV: value}}
//   node vercel_ai_v6_openllmetry.mjs --scenarios    # the scenarios it runs
//   node vercel_ai_v6_openllmetry.mjs <scenario>     # run one (see run.py)
//
// The agents are vercel_ai.mjs's, their spans the AI SDK's own (`experimental_telemetry`), as in vercel_ai_v6;
// here `traceloop.initialize()` is the tracer provider, and its span processor rewrites the SDK's `ai.*` spans
// before export (GenAI names and attributes, `traceloop.*`). OpenLLMetry's documented AI SDK convention names
// the agent in `metadata.agent`; the recorder also keeps `functionId` = the agent and `metadata.sessionId`.
// (corpus.mjs's startTraceloop: its NodeSDK runs every resource detector, OTEL_NODE_RESOURCE_DETECTORS=env keeps
// machine names and paths out.)

import * as traceloop from "@traceloop/node-server-sdk";
import { startTraceloop } from "./corpus.mjs";
import { experimentalTelemetry, MODES, recordScenario } from "./vercel_ai.mjs";

await recordScenario({
  modes: { content: MODES.content, no_content: MODES.no_content },
  start: () => startTraceloop(traceloop),
  settings: experimentalTelemetry((agent) => ({ agent })),
});
