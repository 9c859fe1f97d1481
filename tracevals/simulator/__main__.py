"""`python -m tracevals.simulator`: serve the registered profiles over HTTP until interrupted.

    python -m tracevals.simulator --port 8000               # the demo's order-support profiles
    python -m tracevals.simulator --load mypkg.profiles     # modules that call register_profile()

Any OpenAI client can then use `base_url=http://127.0.0.1:8000/v1`, and any Anthropic client
`base_url=http://127.0.0.1:8000`, with any api key.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import threading

from tracevals.simulator.profiles import profile_names
from tracevals.simulator.server import SimulatedModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tracevals.simulator", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="added to every response")
    parser.add_argument(
        "--load",
        action="append",
        metavar="MODULE",
        help="import MODULE first so it registers its profiles (repeatable; default: tracevals.demo)",
    )
    args = parser.parse_args(argv)
    for module in args.load or ["tracevals.demo"]:
        importlib.import_module(module)
    with SimulatedModelServer(args.host, args.port, args.latency_ms) as server:
        print(f"simulated model server at {server.base_url}", flush=True)
        print(f"models: {', '.join(profile_names()) or '(none registered)'}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
