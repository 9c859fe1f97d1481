// Recorder for the OpenAI Agents SDK for JavaScript (`@openai/agents`) traced by OpenInference's bridge
// (`@arizeai/openinference-instrumentation-openai-agents`), the SDK's own tracing routed to OpenTelemetry.
//
//   node openai_agents_js_openinference.mjs --modes        # {mode: {ENV: value}}
//   node openai_agents_js_openinference.mjs --scenarios    # the scenarios it runs
//   node openai_agents_js_openinference.mjs <scenario>     # run one (see run.py)
//
// The JavaScript mirror of the Python `openai_agents` recorder (its `openinference` modes). The bridge is a
// `TracingProcessor`: `manuallyInstrument(agents)` replaces the SDK's processors with it (exclusive mode, so
// nothing is uploaded to OpenAI), and it writes OpenInference spans through the plain OpenTelemetry Node SDK
// (OTLP/HTTP protobuf). The model is the Chat Completions API at OPENAI_BASE_URL (`setOpenAIAPI
// ('chat_completions')` with a default client on that URL). Every turn of a scenario runs in one in-memory
// `MemorySession`; each `runner.run()` is one SDK trace (one OTLP trace per turn) with the session id as the
// Runner's `groupId` and, for OpenInference, in the context (`setSession`, the JavaScript `using_session`). Content
// switches: OpenInference's traceConfig (mode `hidden`) or the SDK's own `traceIncludeSensitiveData: false`
// (mode `sdk_no_sensitive`: the SDK's spans carry no inputs or outputs for the bridge to write). Handoff: the SDK's own (`handoffs: [billing_agent]`, tool `transfer_to_billing_agent`). A failing tool
// goes through the SDK's default error function (the model is told what failed).

import { randomUUID } from "node:crypto";
import { setSession } from "@arizeai/openinference-core";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import * as agents from "@openai/agents";
import { context } from "@opentelemetry/api";
import OpenAI from "openai";
import { cli, env, INSTRUCTIONS, log, startTracing, TOOLS } from "./corpus.mjs";

const { Agent, MemorySession, Runner, setDefaultOpenAIClient, setOpenAIAPI, tool } = agents;
const MODES = {
  default: { CORPUS_OI_HIDE: "0", CORPUS_SENSITIVE: "1" },
  hidden: { CORPUS_OI_HIDE: "1", CORPUS_SENSITIVE: "1" },
  sdk_no_sensitive: { CORPUS_OI_HIDE: "0", CORPUS_SENSITIVE: "0" },
};
const { name, scenario } = cli(MODES);
const sdk = await startTracing();
// As for LangChain.js, openinference-core 2.7.1 reads OPENINFERENCE_HIDE_* only when a traceConfig is given.
const hide = env("CORPUS_OI_HIDE", "0") === "1";
const traceConfig = hide ? { hideInputs: true, hideOutputs: true } : undefined;
new OpenAIAgentsInstrumentation({ traceConfig }).manuallyInstrument(agents);

setDefaultOpenAIClient(new OpenAI({ baseURL: env("OPENAI_BASE_URL"), apiKey: env("OPENAI_API_KEY", "sim") }));
setOpenAIAPI("chat_completions");
const model = env("CORPUS_MODEL");
const tools = (...names) =>
  names.map((n) => {
    const { description, inputSchema, execute } = TOOLS[n];
    return tool({ name: n, description, parameters: inputSchema, execute });
  });

function build() {
  if (name !== "handoff") {
    return new Agent({
      name: "weather_agent",
      instructions: INSTRUCTIONS.weather_agent,
      model,
      tools: tools("get_weather", "get_time"),
    });
  }
  const billing = new Agent({
    name: "billing_agent",
    instructions: INSTRUCTIONS.billing_agent,
    model,
    tools: tools("issue_refund"),
  });
  return new Agent({ name: "triage_agent", instructions: INSTRUCTIONS.triage_agent, model, handoffs: [billing] });
}

try {
  const agent = build();
  const groupId = randomUUID();
  const session = new MemorySession({ sessionId: groupId });
  const traceIncludeSensitiveData = env("CORPUS_SENSITIVE", "1") === "1";
  const runner = new Runner({ groupId, traceIncludeSensitiveData });
  for (const turn of scenario.turns) {
    const result = await context.with(setSession(context.active(), { sessionId: groupId }), () =>
      runner.run(agent, turn.user, { session }),
    );
    log(name, turn.user, result.finalOutput);
  }
} finally {
  await sdk.shutdown();
}
