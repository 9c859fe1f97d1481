// What every JavaScript recorder shares: the scenarios, the three tools of scenarios.json's `_tools`, the
// command line run.py speaks (`--modes`, `--scenarios`, `<scenario>`) and, for the stacks that export
// through the plain OpenTelemetry SDK, its setup. run.py copies this file beside each recorder, into the
// recorder's own npm environment, so the imports below resolve from that environment's node_modules.

import { readFileSync } from "node:fs";

const WEATHER = {
  Paris: { city: "Paris", forecast: "sunny", temp_c: 21 },
  London: { city: "London", forecast: "rainy", temp_c: 14 },
  Rome: { city: "Rome", forecast: "cloudy", temp_c: 18 },
};

// JavaScript has no ValueError: the unknown city is a plain Error, as a JavaScript tool would throw it.
export function getWeather({ city }) {
  if (!(city in WEATHER)) throw new Error(`unknown city: ${city}`);
  return { ...WEATHER[city] };
}

export function getTime({ city }) {
  return { city, time: "14:00" };
}

export function issueRefund({ order_id }) {
  return { order_id, status: "refunded" };
}

export const DESCRIPTIONS = {
  get_weather: "Get the current weather for a city.",
  get_time: "Get the local time in a city.",
  issue_refund: "Refund an order.",
  transfer_to_billing_agent: "Hand the conversation to the billing agent, which handles refunds.",
};

export const INSTRUCTIONS = {
  weather_agent: "You are a weather assistant. Use the tools to answer.",
  triage_agent: "You are the triage agent. Send billing questions to the billing agent.",
  billing_agent: "You are the billing agent. Refund orders with issue_refund.",
};

export const TRANSFERRED = "Transferred to billing_agent.";

/** `--modes` / `--scenarios` print and exit; otherwise the scenario named on the command line. */
export function cli(modes, scenarios) {
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
 * or process detectors: a recording holds no machine names or paths). Returns the started NodeSDK; its
 * `shutdown()` flushes.
 */
export async function startTracing({ json = false, instrumentations = [] } = {}) {
  const { NodeSDK } = await import("@opentelemetry/sdk-node");
  const { envDetector } = await import("@opentelemetry/resources");
  const { OTLPTraceExporter } = await import(
    json ? "@opentelemetry/exporter-trace-otlp-http" : "@opentelemetry/exporter-trace-otlp-proto"
  );
  const sdk = new NodeSDK({
    traceExporter: new OTLPTraceExporter(),
    resourceDetectors: [envDetector],
    instrumentations,
  });
  sdk.start();
  return sdk;
}
