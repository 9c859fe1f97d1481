// What every JavaScript recorder shares (corpus.py is the Python side): the scenarios, the three tools of
// scenarios.json's `_tools` (with their zod input schemas, for the stack to wrap in its own tool type), the
// command line run.py speaks (`--modes`, `--scenarios`, `<scenario>`) and the two ways the stacks export: the
// plain OpenTelemetry SDK and OpenLLMetry's `traceloop.initialize()`. run.py copies this file beside each
// recorder, into the recorder's own npm environment, so the imports below resolve from that environment's
// node_modules (every one has zod).

import { readFileSync } from "node:fs";
import { z } from "zod";

export const SCENARIOS = ["single", "tool_loop", "parallel", "multi_turn", "tool_error", "handoff"];

const WEATHER = {
  Paris: { city: "Paris", forecast: "sunny", temp_c: 21 },
  London: { city: "London", forecast: "rainy", temp_c: 14 },
  Rome: { city: "Rome", forecast: "cloudy", temp_c: 18 },
};

// JavaScript has no ValueError: the unknown city is a plain Error, as a JavaScript tool would throw it.
function getWeather({ city }) {
  if (!(city in WEATHER)) throw new Error(`unknown city: ${city}`);
  return { ...WEATHER[city] };
}

function getTime({ city }) {
  return { city, time: "14:00" };
}

function issueRefund({ order_id }) {
  return { order_id, status: "refunded" };
}

export const DESCRIPTIONS = {
  get_weather: "Get the current weather for a city.",
  get_time: "Get the local time in a city.",
  issue_refund: "Refund an order.",
  transfer_to_billing_agent: "Hand the conversation to the billing agent, which handles refunds.",
};

const city = z.object({ city: z.string() });
/** The tools by name: `{description, inputSchema, execute}`, for each stack to wrap in its own tool type. */
export const TOOLS = {
  get_weather: { description: DESCRIPTIONS.get_weather, inputSchema: city, execute: getWeather },
  get_time: { description: DESCRIPTIONS.get_time, inputSchema: city, execute: getTime },
  issue_refund: {
    description: DESCRIPTIONS.issue_refund,
    inputSchema: z.object({ order_id: z.number().int() }),
    execute: issueRefund,
  },
};

export const INSTRUCTIONS = {
  weather_agent: "You are a weather assistant. Use the tools to answer.",
  triage_agent: "You are the triage agent. Send billing questions to the billing agent.",
  billing_agent: "You are the billing agent. Refund orders with issue_refund.",
};

export const TRANSFERRED = "Transferred to billing_agent.";

/** `--modes` / `--scenarios` print and exit; otherwise the scenario named on the command line. */
export function cli(modes, scenarios = SCENARIOS) {
  const arg = process.argv[2];
  if (arg === "--modes") {
    console.log(JSON.stringify(modes));
    process.exit(0);
  }
  if (arg === "--scenarios") {
    console.log(JSON.stringify(scenarios));
    process.exit(0);
  }
  const all = JSON.parse(readFileSync(process.env.CORPUS_SCENARIOS, "utf8"));
  if (!(arg in all)) throw new Error(`unknown scenario ${arg}`);
  return { name: arg, scenario: all[arg] };
}

export const env = (name, fallback) => process.env[name] ?? fallback;

export function log(name, user, answer) {
  console.error(`[${name}] ${JSON.stringify(user)} -> ${JSON.stringify(answer)}`);
}

/**
 * The plain OpenTelemetry Node SDK: an OTLP/HTTP protobuf (or JSON, `json: true`) span exporter to
 * OTEL_EXPORTER_OTLP_ENDPOINT, the resource from OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES only (no host
 * or process detectors: a recording holds no machine names or paths). With `logs: true`, log records too (an
 * OTLP/HTTP protobuf log exporter, batched: the instrumentations that write message content as events).
 * Returns the started NodeSDK; its `shutdown()` flushes.
 */
export async function startTracing({ json = false, logs = false, instrumentations = [] } = {}) {
  const { NodeSDK } = await import("@opentelemetry/sdk-node");
  const { envDetector } = await import("@opentelemetry/resources");
  const { OTLPTraceExporter } = await import(
    json ? "@opentelemetry/exporter-trace-otlp-http" : "@opentelemetry/exporter-trace-otlp-proto"
  );
  const logRecordProcessors = [];
  if (logs) {
    const { BatchLogRecordProcessor } = await import("@opentelemetry/sdk-logs");
    const { OTLPLogExporter } = await import("@opentelemetry/exporter-logs-otlp-proto");
    logRecordProcessors.push(new BatchLogRecordProcessor({ exporter: new OTLPLogExporter() })); // sdk-logs 3: options
  }
  const sdk = new NodeSDK({
    traceExporter: new OTLPTraceExporter(),
    logRecordProcessors,
    resourceDetectors: [envDetector],
    instrumentations,
  });
  sdk.start();
  return sdk;
}

/**
 * OpenLLMetry JS: `traceloop.initialize()` (the `@traceloop/node-server-sdk` module, imported by the recorder
 * before its framework) sets up its own Node SDK with an OTLP/HTTP protobuf exporter to `baseUrl` (here
 * OTEL_EXPORTER_OTLP_ENDPOINT; no API key, no prompt-registry sync); `appName` is the service name. Its NodeSDK
 * runs every resource detector (host id, process command line ...): a recording holds no machine names or paths,
 * so only the environment's (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES). `instrumentModules` hands it the modules
 * an ES module imported (`{openAI: OpenAI}`): its require hooks do not see them. Returns what to shut down (a flush).
 */
export function startTraceloop(traceloop, instrumentModules = undefined) {
  process.env.OTEL_NODE_RESOURCE_DETECTORS = "env";
  traceloop.initialize({
    appName: env("OTEL_SERVICE_NAME"),
    baseUrl: env("OTEL_EXPORTER_OTLP_ENDPOINT"),
    traceloopSyncEnabled: false,
    silenceInitializationMessage: true,
    ...(instrumentModules ? { instrumentModules } : {}),
  });
  return { shutdown: () => traceloop.forceFlush() };
}
