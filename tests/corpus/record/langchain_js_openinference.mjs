// Recorder for LangChain.js agents (`langchain` createAgent on LangGraph.js) traced by OpenInference's
// LangChain.js instrumentation (`@arizeai/openinference-instrumentation-langchain`).
//
//   node langchain_js_openinference.mjs --modes        # {mode: {ENV: value}}
//   node langchain_js_openinference.mjs --scenarios    # the scenarios it runs
//   node langchain_js_openinference.mjs <scenario>     # run one (see run.py)
//
// The instrumentation patches LangChain's callback manager (`manuallyInstrument(CallbackManagerModule)`, as its
// README says for ES modules) and writes OpenInference spans through the plain OpenTelemetry Node SDK, which
// exports OTLP/HTTP **JSON** here (`@opentelemetry/exporter-trace-otlp-http`), the other encoding Node sends.
//
// The mirror of the Python `langgraph_openinference` recorder: `createAgent` graphs with a checkpointer, every
// turn of a scenario on one thread (`configurable.thread_id`, which LangGraph copies into the run metadata,
// where OpenInference reads its session id). Handoff: a parent StateGraph with `triage_agent` (holding
// langgraph-supervisor's `createHandoffTool({agentName: "billing_agent"})`, which returns a `Command` to the
// parent graph) and `billing_agent` (issue_refund).

import { randomUUID } from "node:crypto";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { tool } from "@langchain/core/tools";
import { MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { createHandoffTool } from "@langchain/langgraph-supervisor";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";
import { z } from "zod";
import {
  cli,
  DESCRIPTIONS,
  env,
  getTime,
  getWeather,
  INSTRUCTIONS,
  issueRefund,
  log,
  startTracing,
} from "./corpus.mjs";

const MODES = {
  default: { CORPUS_OI_HIDE: "0" },
  hidden: { CORPUS_OI_HIDE: "1" },
};
const SCENARIOS = ["single", "tool_loop", "parallel", "multi_turn", "tool_error", "handoff"];
const { name, scenario } = cli(MODES, SCENARIOS);
const sdk = await startTracing({ json: true });
// OPENINFERENCE_HIDE_* variables are read only when a traceConfig object is given (openinference-core 2.7.1
// returns its defaults for none), so the hidden mode passes the options themselves.
const hide = env("CORPUS_OI_HIDE", "0") === "1";
const traceConfig = hide ? { hideInputs: true, hideOutputs: true } : undefined;
new LangChainInstrumentation({ traceConfig }).manuallyInstrument(CallbackManagerModule);

const model = new ChatOpenAI({
  model: env("CORPUS_MODEL"),
  apiKey: env("OPENAI_API_KEY", "sim"),
  configuration: { baseURL: env("OPENAI_BASE_URL") },
});
const city = z.object({ city: z.string() });
const getWeatherTool = tool(getWeather, { name: "get_weather", description: DESCRIPTIONS.get_weather, schema: city });
const getTimeTool = tool(getTime, { name: "get_time", description: DESCRIPTIONS.get_time, schema: city });
const issueRefundTool = tool(issueRefund, {
  name: "issue_refund",
  description: DESCRIPTIONS.issue_refund,
  schema: z.object({ order_id: z.number().int() }),
});

function build() {
  const checkpointer = new MemorySaver();
  if (name !== "handoff") {
    return createAgent({
      model,
      tools: [getWeatherTool, getTimeTool],
      systemPrompt: INSTRUCTIONS.weather_agent,
      name: "weather_agent",
      checkpointer,
    });
  }
  const triage = createAgent({
    model,
    tools: [createHandoffTool({ agentName: "billing_agent" })],
    systemPrompt: INSTRUCTIONS.triage_agent,
    name: "triage_agent",
  });
  const billing = createAgent({
    model,
    tools: [issueRefundTool],
    systemPrompt: INSTRUCTIONS.billing_agent,
    name: "billing_agent",
  });
  return new StateGraph(MessagesAnnotation)
    .addNode("triage_agent", triage.graph, { ends: ["billing_agent"] })
    .addNode("billing_agent", billing.graph)
    .addEdge(START, "triage_agent")
    .compile({ checkpointer });
}

try {
  const agent = build();
  const config = { configurable: { thread_id: randomUUID() } };
  for (const turn of scenario.turns) {
    const result = await agent.invoke({ messages: [{ role: "user", content: turn.user }] }, config);
    log(name, turn.user, result.messages.at(-1).content);
  }
} finally {
  await sdk.shutdown();
}
