// Recorder for LangChain.js agents (`langchain` createAgent on LangGraph.js, see langchain_js.mjs) traced by
// OpenInference's LangChain.js instrumentation (`@arizeai/openinference-instrumentation-langchain`).
//
//   node langchain_js_openinference.mjs --modes        # {mode: {ENV: value}}
//   node langchain_js_openinference.mjs --scenarios    # the scenarios it runs
//   node langchain_js_openinference.mjs <scenario>     # run one (see run.py)
//
// The instrumentation patches LangChain's callback manager (`manuallyInstrument(CallbackManagerModule)`, as its
// README says for ES modules) and writes OpenInference spans through the plain OpenTelemetry Node SDK, which
// exports OTLP/HTTP **JSON** here (`@opentelemetry/exporter-trace-otlp-http`), the other encoding Node sends.
// OpenInference reads its session id from the run metadata's `thread_id`.

import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { cli, env, startTracing } from "./corpus.mjs";
import { runScenario } from "./langchain_js.mjs";

const MODES = {
  default: { CORPUS_OI_HIDE: "0" },
  hidden: { CORPUS_OI_HIDE: "1" },
};
const { name, scenario } = cli(MODES);
const sdk = await startTracing({ json: true });
// OPENINFERENCE_HIDE_* variables are read only when a traceConfig object is given (openinference-core 2.7.1
// returns its defaults for none), so the hidden mode passes the options themselves.
const hide = env("CORPUS_OI_HIDE", "0") === "1";
const traceConfig = hide ? { hideInputs: true, hideOutputs: true } : undefined;
new LangChainInstrumentation({ traceConfig }).manuallyInstrument(CallbackManagerModule);

try {
  await runScenario(name, scenario);
} finally {
  await sdk.shutdown();
}
