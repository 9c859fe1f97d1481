// Sends spans (or log records) through Node's real OTLP exporters, as applications would, and prints what
// each sender sent and what each of its exports returned, as one JSON object keyed by service name. Run by
// the tests with `node`; the senders run at once, each with its own provider and exporter:
//
//   node send.cjs '[{"exporter": "http-json", "url": "http://127.0.0.1:4318/v1/traces",
//                    "compression": "gzip", "spans": 20, "service": "node-http-json"}, ...]'
//
// exporter: http-json | http-proto | grpc (spans), logs-http-json | logs-http-proto (log records).
// Spans go through a BatchSpanProcessor in batches of 8, so one exporter sends several requests over
// its kept-alive connection.
"use strict";

const { BasicTracerProvider, BatchSpanProcessor } = require("@opentelemetry/sdk-trace-base");
const { LoggerProvider, BatchLogRecordProcessor } = require("@opentelemetry/sdk-logs");
const { resourceFromAttributes } = require("@opentelemetry/resources");

// A string cut inside a surrogate pair, as an application's truncation of a tool's output mid-emoji leaves it:
// JSON.stringify writes its lone surrogate as an escape (the JSON exporters), protobufjs as U+FFFD.
const CUT = "tool said \u{1F600} ok".slice(0, 11);

const EXPORTERS = {
  "http-json": () => require("@opentelemetry/exporter-trace-otlp-http").OTLPTraceExporter,
  "http-proto": () => require("@opentelemetry/exporter-trace-otlp-proto").OTLPTraceExporter,
  grpc: () => require("@opentelemetry/exporter-trace-otlp-grpc").OTLPTraceExporter,
  "logs-http-json": () => require("@opentelemetry/exporter-logs-otlp-http").OTLPLogExporter,
  "logs-http-proto": () => require("@opentelemetry/exporter-logs-otlp-proto").OTLPLogExporter,
};

// What every export returned (0 = SUCCESS), counted on the way back from the real exporter.
function recording(exporter, results) {
  const inner = exporter.export.bind(exporter);
  exporter.export = (items, done) =>
    inner(items, (result) => {
      results.push({ code: result.code, items: items.length, error: result.error ? String(result.error) : "" });
      done(result);
    });
  return exporter;
}

async function sendSpans(options, exporter, results) {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": options.service }),
    spanProcessors: [
      new BatchSpanProcessor(recording(exporter, results), { maxExportBatchSize: 8, scheduledDelayMillis: 20 }),
    ],
  });
  const tracer = provider.getTracer("tracevals.node.test", "1.0");
  const sent = [];
  for (let i = 0; i < options.spans; i++) {
    const span = tracer.startSpan(`chat step ${i}`, {
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": `${options.service}-conv`,
        "gen_ai.usage.input_tokens": i,
        "step.index": i,
        "text.unicode": "größe ✓",
        "text.cut": CUT,
      },
    });
    span.end();
    const ctx = span.spanContext();
    sent.push(`${ctx.traceId}:${ctx.spanId}`);
  }
  await finish(provider);
  return sent;
}

async function sendLogs(options, exporter, results) {
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ "service.name": options.service }),
    processors: [new BatchLogRecordProcessor({ exporter: recording(exporter, results), maxExportBatchSize: 8 })],
  });
  const logger = provider.getLogger("tracevals.node.test", "1.0");
  const sent = [];
  for (let i = 0; i < options.spans; i++) {
    logger.emit({ body: `record ${i}`, severityNumber: 9, attributes: { "record.index": i, "text.cut": CUT } });
    sent.push(`record ${i}`);
  }
  await finish(provider);
  return sent;
}

// Flush and shut down; a failed export rejects the flush, and is reported in `results` already.
async function finish(provider) {
  try {
    await provider.forceFlush();
  } catch (error) {
    process.stderr.write(`send.cjs: flush failed: ${error}\n`);
  }
  await provider.shutdown().catch(() => {});
}

async function sender(options) {
  const Exporter = EXPORTERS[options.exporter]();
  const exporter = new Exporter({ url: options.url, compression: options.compression, timeoutMillis: 10000 });
  const results = [];
  const send = options.exporter.startsWith("logs-") ? sendLogs : sendSpans;
  const sent = await send(options, exporter, results);
  return [options.service, { sent, results }];
}

async function main() {
  const senders = await Promise.all(JSON.parse(process.argv[2]).map(sender));
  process.stdout.write(JSON.stringify(Object.fromEntries(senders)) + "\n");
}

main().catch((error) => {
  process.stderr.write(`send.cjs: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
