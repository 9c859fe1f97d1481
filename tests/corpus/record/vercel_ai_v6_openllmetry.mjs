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
// Its NodeSDK runs every resource detector: OTEL_NODE_RESOURCE_DETECTORS=env keeps machine names and paths out.

import * as traceloop from "@traceloop/node-server-sdk";
import { env } from "./corpus.mjs";
import { recordScenario } from "./vercel_ai.mjs";

await recordScenario({
  modes: {
    content: { AI_RECORD_CONTENT: "1", AI_STREAM: "0" },
    no_content: { AI_RECORD_CONTENT: "0", AI_STREAM: "0" },
  },
  start: async () => {
    process.env.OTEL_NODE_RESOURCE_DETECTORS = "env";
    traceloop.initialize({
      appName: env("OTEL_SERVICE_NAME"),
      baseUrl: env("OTEL_EXPORTER_OTLP_ENDPOINT"),
      traceloopSyncEnabled: false,
      silenceInitializationMessage: true,
    });
    return { shutdown: () => traceloop.forceFlush() };
  },
  settings: (agent, { record, sessionId }) => ({
    experimental_telemetry: {
      isEnabled: true,
      functionId: agent,
      metadata: { agent, sessionId },
      recordInputs: record,
      recordOutputs: record,
    },
  }),
});
