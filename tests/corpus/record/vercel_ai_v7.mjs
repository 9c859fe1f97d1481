// Recorder for the Vercel AI SDK 7 (`ai`) with its OpenTelemetry integration package `@ai-sdk/otel`.
//
//   node vercel_ai_v7.mjs --modes        # {mode: {ENV: value}}
//   node vercel_ai_v7.mjs --scenarios    # the scenarios it runs
//   node vercel_ai_v7.mjs <scenario>     # run one (see run.py, which installs vercel_ai_v7.package.json)
//
// The agents are vercel_ai.mjs's. AI SDK 7 moved its spans out of `ai` into `@ai-sdk/otel`, registered once
// with `registerTelemetry(...)`: `OpenTelemetry` (new in 7: GenAI semantic conventions) or
// `LegacyOpenTelemetry` (AI SDK 6's `ai.*` spans). Telemetry is on for every call once registered; each agent
// passes `telemetry: {functionId: <agent name>, recordInputs, recordOutputs}`. AI SDK 7 dropped telemetry
// `metadata`: the session id travels as `runtimeContext: {sessionId}`, which reaches the spans only where it
// is asked for (`telemetry.includeRuntimeContext: {sessionId: true}`, and `OpenTelemetry({runtimeContext:
// true})` for the new integration).

import { startTracing } from "./corpus.mjs";
import { recordScenario } from "./vercel_ai.mjs";

const genai = { AI_INTEGRATION: "genai" };
await recordScenario({
  modes: {
    genai: { ...genai, AI_RECORD_CONTENT: "1", AI_STREAM: "0" },
    genai_stream: { ...genai, AI_RECORD_CONTENT: "1", AI_STREAM: "1" },
    genai_no_content: { ...genai, AI_RECORD_CONTENT: "0", AI_STREAM: "0" },
    legacy: { AI_INTEGRATION: "legacy", AI_RECORD_CONTENT: "1", AI_STREAM: "0" },
  },
  start: async () => {
    const tracing = await startTracing();
    const { registerTelemetry } = await import("ai");
    const { LegacyOpenTelemetry, OpenTelemetry } = await import("@ai-sdk/otel");
    const legacy = process.env.AI_INTEGRATION === "legacy";
    registerTelemetry(legacy ? new LegacyOpenTelemetry() : new OpenTelemetry({ runtimeContext: true }));
    return tracing;
  },
  settings: (agent, { record, sessionId }) => ({
    runtimeContext: { sessionId },
    telemetry: {
      functionId: agent,
      recordInputs: record,
      recordOutputs: record,
      includeRuntimeContext: { sessionId: true },
    },
  }),
});
