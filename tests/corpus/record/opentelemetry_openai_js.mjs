// Recorder for OpenTelemetry's own OpenAI instrumentation for Node.js (`@opentelemetry/instrumentation-openai`,
// opentelemetry-js-contrib) around openai_loop.mjs's hand-written tool loop.
//
//   node opentelemetry_openai_js.mjs --modes        # {mode: {ENV: value}}
//   node opentelemetry_openai_js.mjs --scenarios    # the scenarios it runs
//   node opentelemetry_openai_js.mjs <scenario>     # run one (see run.py)
//
// The JavaScript twin of the Python `openai_v2` recorder. The instrumentation patches the `openai` module through
// its require hook, so the client is loaded with `require` after the SDK has started (an ES `import` would need
// Node's --import loader hook). Spans `chat <model>`; message content, when captured
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), as log records (`gen_ai.*.message`, `gen_ai.choice`), the
// event name in an `event.name` attribute; the records are written without content too. The `responses_*` modes
// run the loop on the Responses API (semantic conventions 1.38: one `gen_ai.client.inference.operation.details`
// record per call); `stream_content` streams the chat calls.

import { createRequire } from "node:module";
import { OpenAIInstrumentation } from "@opentelemetry/instrumentation-openai";
import { cli, startTracing } from "./corpus.mjs";
import { LOOP_SCENARIOS, runLoop } from "./openai_loop.mjs";

const CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
const RESPONSES = { CORPUS_API: "responses" };
const MODES = {
  content: { [CAPTURE]: "true" },
  no_content: { [CAPTURE]: "false" },
  responses_content: { [CAPTURE]: "true", ...RESPONSES },
  responses_no_content: { [CAPTURE]: "false", ...RESPONSES },
  stream_content: { [CAPTURE]: "true", CORPUS_STREAM: "1" },
};
const { name, scenario } = cli(MODES, LOOP_SCENARIOS);
const sdk = await startTracing({ logs: true, instrumentations: [new OpenAIInstrumentation()] });
const { OpenAI } = createRequire(import.meta.url)("openai");
try {
  await runLoop(OpenAI, name, scenario, "corpus.opentelemetry_openai_js.loop");
} finally {
  await sdk.shutdown();
}
