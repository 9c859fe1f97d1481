// The LangChain.js scenarios, shared by the recorders of its instrumentations (langchain_js_openinference.mjs,
// langchain_js_openllmetry.mjs): the JavaScript mirror of the Python `langgraph_*` recorders. `createAgent`
// graphs (langchain 1.x on LangGraph.js) with a checkpointer, every turn of a scenario on one thread
// (`configurable.thread_id`, which LangGraph copies into the run metadata). Handoff: a parent StateGraph with
// `triage_agent` (holding langgraph-supervisor's `createHandoffTool({agentName: "billing_agent"})`, which returns
// a `Command` to the parent graph) and `billing_agent` (issue_refund). Tool errors: createAgent's ToolNode turns
// the tool's Error into an error ToolMessage the model sees.

import { randomUUID } from "node:crypto";
import { tool } from "@langchain/core/tools";
import { MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { createHandoffTool } from "@langchain/langgraph-supervisor";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";
import { env, INSTRUCTIONS, log, TOOLS } from "./corpus.mjs";

const tools = (...names) =>
  names.map((n) => {
    const { description, inputSchema, execute } = TOOLS[n];
    return tool(execute, { name: n, description, schema: inputSchema });
  });

function build(name) {
  const model = new ChatOpenAI({
    model: env("CORPUS_MODEL"),
    apiKey: env("OPENAI_API_KEY", "sim"),
    configuration: { baseURL: env("OPENAI_BASE_URL") },
  });
  const checkpointer = new MemorySaver();
  if (name !== "handoff") {
    return createAgent({
      model,
      tools: tools("get_weather", "get_time"),
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
    tools: tools("issue_refund"),
    systemPrompt: INSTRUCTIONS.billing_agent,
    name: "billing_agent",
  });
  return new StateGraph(MessagesAnnotation)
    .addNode("triage_agent", triage.graph, { ends: ["billing_agent"] })
    .addNode("billing_agent", billing.graph)
    .addEdge(START, "triage_agent")
    .compile({ checkpointer });
}

/** Every turn of the scenario through one agent, on one checkpointer thread. */
export async function runScenario(name, scenario) {
  const agent = build(name);
  const config = { configurable: { thread_id: randomUUID() } };
  for (const turn of scenario.turns) {
    const result = await agent.invoke({ messages: [{ role: "user", content: turn.user }] }, config);
    log(name, turn.user, result.messages.at(-1).content);
  }
}
