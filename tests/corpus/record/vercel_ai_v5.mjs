// Recorder for the Vercel AI SDK 5 (`ai`) with its built-in OpenTelemetry spans (`experimental_telemetry`).
//
//   node vercel_ai_v5.mjs --modes        # {mode: {ENV: value}}
//   node vercel_ai_v5.mjs --scenarios    # the scenarios it runs
//   node vercel_ai_v5.mjs <scenario>     # run one (see run.py, which installs vercel_ai_v5.package.json)
//
// The agents are vercel_ai.mjs's (AI SDK 5's agent class is `Experimental_Agent`). Telemetry is the SDK's
// own: `experimental_telemetry: {isEnabled, functionId: <agent name>, metadata: {sessionId}, recordInputs,
// recordOutputs}` with the plain OpenTelemetry Node SDK exporting OTLP/HTTP protobuf. The AI SDK has no agent name in its spans: `functionId` is the
// documented label, so it carries the agent's name. It has no session either: `metadata.sessionId` (one id per
// conversation) is the convention trace backends read (`ai.telemetry.metadata.sessionId`).

import { startTracing } from "./corpus.mjs";
import { experimentalTelemetry, MODES, recordScenario } from "./vercel_ai.mjs";

await recordScenario({
  instructions: "system", // AI SDK 5's Experimental_Agent takes `system`; 6 renamed it `instructions`
  modes: MODES,
  start: () => startTracing(),
  settings: experimentalTelemetry(),
});
