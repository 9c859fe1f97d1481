"""Record a framework's real telemetry for the corpus: `tests/corpus/<framework>/<mode>/<scenario>.json`.

    .venv/bin/python tests/corpus/record/run.py openai_agents            # every mode and scenario
    .venv/bin/python tests/corpus/record/run.py langgraph --mode openinference --scenario tool_loop
    .venv/bin/python tests/corpus/record/run.py logfire --out /tmp/again   # elsewhere, to compare with tests/corpus

Run from the project's own environment. For each framework, `tests/corpus/record/<framework>.txt` pins what
its recorder needs; it is installed once into its own virtual environment under
`~/.cache/tracevals-corpus/<framework>` (never into the project's: the tests read only the recordings).
`tests/corpus/record/<framework>.py` is the recorder: `--modes` prints its content modes as JSON
(`{mode: {ENV: value}}`), and `<scenario>` runs that scenario of `scenarios.json` with the framework's own
agent, its tools and its own instrumentation, exporting OTLP/HTTP protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT`
and calling the model at `OPENAI_BASE_URL` (model name in `CORPUS_MODEL`).

A JavaScript stack has `<framework>.mjs` instead (the same command line; the scenarios file is in
`CORPUS_SCENARIOS`) and pins `<framework>.package.json` (and `<framework>.package-lock.json` when there is
one), installed with npm under the same cache; `corpus.mjs` is what the JavaScript recorders share, and
a recorder may import another `.mjs` of this folder (the Vercel AI SDK's versions share `vercel_ai.mjs`).

This script serves both: the simulated model (`tracevals.simulator`) answering with the scenario's
scripted turns, and an OTLP/HTTP receiver that keeps every request as it arrived (sized or chunked, as
Node's exporters send them). When the recorder exits,
the requests are merged into one OTLP/JSON document (hex ids, as the OTLP specification writes them) and
the model's answers, with the usage it reported, into `<scenario>.calls.json`: what the truth file's
tokens are written from. The truth files themselves (`<scenario>.truth.json`) are written by hand from the
scenario and the calls, never from tracevals' output.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.simulator.conversation import Conversation, ModelTurn, PlannedCall
from tracevals.simulator.engine import SimulatedModel
from tracevals.simulator.profiles import ProfileRegistry
from tracevals.simulator.rng import Decisions
from tracevals.simulator.server import SimulatedModelServer

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent
ROOT = CORPUS.parent.parent
SCENARIOS = {k: v for k, v in json.loads((HERE / "scenarios.json").read_text()).items() if not k.startswith("_")}
KNOWN_TOOLS = {"get_weather", "get_time", "issue_refund"}
MODEL = "corpus"


class ScriptedPolicy:
    """The scenario's model turns, in order: turn = how many user messages so far, step = how many assistant
    messages since the last one. `<handoff>` becomes the one offered tool that is none of the scenario's
    own (the framework's hand-off tool, whatever it is called), with the arguments a recorder's mode names in
    `CORPUS_HANDOFF_ARGUMENTS` (JSON) when that tool requires some (LlamaIndex's `handoff(to_agent, reason)`). A
    scenario tool the stack offers only under a qualified name (`Weather-get_weather`) is called by that name."""

    def __init__(
        self, scenario: dict[str, Any], handoff_arguments: dict[str, Any] | None = None, by_call_order: bool = False
    ) -> None:
        self.turns = scenario["turns"]
        self.handoff_arguments = handoff_arguments
        self.by_call_order = by_call_order
        self.answered = 0
        self._lock = threading.Lock()

    def respond(self, conversation: Conversation, decisions: Decisions) -> ModelTurn:
        if self.by_call_order:
            with self._lock:
                replies = [reply for turn in self.turns for reply in turn["model"]]
                reply = replies[min(self.answered, len(replies) - 1)]
                self.answered += 1
        else:
            messages = list(conversation.messages)
            users = [i for i, m in enumerate(messages) if m.role == "user"]
            turn = min(max(len(users) - 1, 0), len(self.turns) - 1)
            after = messages[users[-1] + 1 :] if users else messages
            step = sum(1 for m in after if m.role == "assistant")
            script = self.turns[turn]["model"]
            reply = script[min(step, len(script) - 1)]
        calls = []
        for call in reply.get("tool_calls", []):
            name, arguments = call["name"], call.get("arguments", {})
            if name == "<handoff>":
                offered = [n for n in conversation.tool_names() if n not in KNOWN_TOOLS]
                name = offered[0] if offered else name
                arguments = self.handoff_arguments or arguments
            elif name not in conversation.tool_names():
                # a stack that offers its tools under qualified names (Semantic Kernel's `Plugin-function`)
                qualified = [n for n in conversation.tool_names() if n.endswith(f"-{name}")]
                name = qualified[0] if len(qualified) == 1 else name
            calls.append(PlannedCall(name, arguments))
        return ModelTurn(content=reply.get("text"), tool_calls=tuple(calls))


class RecordingModel(SimulatedModel):
    """The simulated model, keeping each answer (text, calls, usage) in order."""

    def __init__(self, registry: ProfileRegistry) -> None:
        super().__init__(registry)
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def complete(self, conversation: Conversation) -> Any:
        completion = super().complete(conversation)
        with self._lock:
            self.calls.append(
                {
                    "text": completion.turn.content,
                    "tool_calls": [
                        {"name": call.name, "arguments": dict(call.arguments)} for call in completion.turn.tool_calls
                    ],
                    "input_tokens": completion.prompt_tokens,
                    "output_tokens": completion.completion_tokens,
                }
            )
        return completion


class Capture(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _CaptureHandler)
        self.requests: list[tuple[str, bytes, str]] = []  # (path, body, content type)
        self.lock = threading.Lock()


class _CaptureHandler(BaseHTTPRequestHandler):
    server: Capture

    protocol_version = "HTTP/1.1"  # keep-alive, as exporters expect

    def do_POST(self) -> None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = _read_chunked(self.rfile)  # Node's OTLP/HTTP exporters send chunked bodies
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            import gzip

            body = gzip.decompress(body)
        with self.server.lock:
            self.server.requests.append((self.path, body, self.headers.get("Content-Type") or ""))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _read_chunked(stream: Any) -> bytes:
    """An HTTP/1.1 chunked body: hex size line, data, CRLF ... a zero-size chunk, then trailers and a blank line."""
    body = bytearray()
    while True:
        size = int(stream.readline().split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while stream.readline() not in (b"\r\n", b"\n", b""):
                pass
            return bytes(body)
        body += stream.read(size)
        stream.readline()


_ID_KEYS = {"traceId", "spanId", "parentSpanId"}


def _hex_ids(value: Any) -> Any:
    """protobuf's JSON mapping writes bytes as base64; OTLP/JSON writes ids as hex."""
    if isinstance(value, dict):
        return {
            k: (base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def merge(requests: list[tuple[str, bytes, str]]) -> dict[str, Any]:
    doc: dict[str, list[Any]] = {"resourceSpans": [], "resourceLogs": []}
    for path, body, ctype in requests:
        if path.endswith("/v1/traces"):
            message: Any = ExportTraceServiceRequest()
            key = "resourceSpans"
        elif path.endswith("/v1/logs"):
            message = ExportLogsServiceRequest()
            key = "resourceLogs"
        else:
            continue  # metrics
        if "json" in ctype:
            doc[key] += json.loads(body).get(key, [])
            continue
        message.ParseFromString(body)
        doc[key] += _hex_ids(json_format.MessageToDict(message)).get(key, [])
    return doc


def venv_python(framework: str) -> Path:
    venv = Path.home() / ".cache" / "tracevals-corpus" / framework
    python = venv / "bin" / "python"
    requirements = HERE / f"{framework}.txt"
    stamp = venv / ".installed"
    if not stamp.exists() or stamp.read_text() != requirements.read_text():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(requirements)], check=True)
        stamp.write_text(requirements.read_text())
    return python


def node_env(framework: str) -> list[str]:
    """`<framework>.mjs`'s own npm environment: `<framework>.package.json` (and its lock, when there is one)
    installed under the same cache as the Python ones; the recorders are copied beside its `node_modules`,
    since ES modules resolve packages from where the script is. The `node` the package pins (npm's
    `node` package) runs it when there is one, else the machine's."""
    env = Path.home() / ".cache" / "tracevals-corpus" / framework
    env.mkdir(parents=True, exist_ok=True)
    manifest = HERE / f"{framework}.package.json"
    lock = HERE / f"{framework}.package-lock.json"
    pins = manifest.read_text() + (lock.read_text() if lock.exists() else "")
    stamp = env / ".installed"
    if not stamp.exists() or stamp.read_text() != pins:
        (env / "package.json").write_text(manifest.read_text())
        if lock.exists():
            (env / "package-lock.json").write_text(lock.read_text())
        install = ["npm", "ci" if lock.exists() else "install", "--no-audit", "--no-fund", "--loglevel=error"]
        subprocess.run(install, cwd=env, check=True)
        stamp.write_text(pins)
    for script in HERE.glob("*.mjs"):  # the recorder and the modules it shares with others
        (env / script.name).write_text(script.read_text())
    node = env / "node_modules" / ".bin" / "node"
    return [str(node) if node.exists() else "node", str(env / f"{framework}.mjs")]


def recorder(framework: str) -> list[str]:
    """The command that runs a framework's recorder: `<framework>.py` in its venv or `<framework>.mjs` in its
    npm environment."""
    if (HERE / f"{framework}.mjs").exists():
        return node_env(framework)
    return [str(venv_python(framework)), str(HERE / f"{framework}.py")]


def record(
    framework: str, mode: str, env_mode: dict[str, str], scenario: str, command: list[str], corpus: Path = CORPUS
) -> Path:
    registry = ProfileRegistry()
    handoff_arguments = json.loads(env_mode.get("CORPUS_HANDOFF_ARGUMENTS", "null"))
    by_call_order = env_mode.get("CORPUS_SCRIPT_ORDER") == "calls"
    registry.register(MODEL, ScriptedPolicy(SCENARIOS[scenario], handoff_arguments, by_call_order))
    model = RecordingModel(registry)
    capture = Capture()
    threading.Thread(target=capture.serve_forever, daemon=True).start()
    out = corpus / framework / mode
    out.mkdir(parents=True, exist_ok=True)
    server = SimulatedModelServer(registry=registry)
    server.model = model  # the same simulated model, keeping its answers
    try:
        with server:
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
                "OPENAI_BASE_URL": server.base_url,
                "OPENAI_API_KEY": "sim",
                "ANTHROPIC_BASE_URL": server.root_url,
                "ANTHROPIC_API_KEY": "sim",
                "CORPUS_MODEL": MODEL,
                "CORPUS_SCENARIOS": str(HERE / "scenarios.json"),
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{capture.server_address[1]}",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_SERVICE_NAME": f"corpus-{framework}",
                "OTEL_RESOURCE_ATTRIBUTES": f"corpus.mode={mode},corpus.scenario={scenario}",
                **env_mode,
            }
            done = subprocess.run([*command, scenario], env=env, timeout=300)
            if done.returncode != 0:
                raise SystemExit(f"{framework} {mode} {scenario}: the recorder exited {done.returncode}")
    finally:
        capture.shutdown()
    path = out / f"{scenario}.json"
    path.write_text(without_home(json.dumps(merge(capture.requests), indent=1, ensure_ascii=False)))
    (out / f"{scenario}.calls.json").write_text(json.dumps(model.calls, indent=1, ensure_ascii=False))
    return path


def without_home(text: str) -> str:
    """A recording without the recording machine's home directory: stack traces name the files of the stack's
    environment (under ~/.cache/tracevals-corpus), written `~/` instead."""
    return text.replace(f"{Path.home()}/", "~/")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("framework")
    parser.add_argument("--mode", action="append", help="only these content modes")
    parser.add_argument("--scenario", action="append", help="only these scenarios")
    parser.add_argument("--out", type=Path, default=CORPUS, help="the corpus folder to write (default: tests/corpus)")
    args = parser.parse_args()
    command = recorder(args.framework)
    listed = subprocess.run([*command, "--modes"], capture_output=True, text=True, check=True)
    modes: dict[str, dict[str, str]] = json.loads(listed.stdout)
    supported = subprocess.run([*command, "--scenarios"], capture_output=True, text=True, check=True)
    scenarios = json.loads(supported.stdout)
    for mode, env_mode in modes.items():
        if args.mode and mode not in args.mode:
            continue
        for scenario in scenarios:
            if args.scenario and scenario not in args.scenario:
                continue
            path = record(args.framework, mode, env_mode, scenario, command, args.out.resolve())
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
