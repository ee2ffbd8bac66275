"""Child process that serves a GGUF over the OpenAI API with xllamacpp until its stdin closes.

Run by `ragmeter.llm.local`; stdin is a pipe from the parent, so the server dies with the parent.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ragmeter.llm._serve")
    ap.add_argument("--model", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--ctx-per-slot", type=int, default=8192)
    ap.add_argument("--alias", default="local")
    args = ap.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx_per_slot * args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    params.verbosity = 1  # errors only
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:
        print(f"ragmeter: could not start the server: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"READY http://127.0.0.1:{args.port}/v1", flush=True)
    # Block until the parent closes the pipe (aclose, exit, or death).
    while sys.stdin.buffer.read(65536):
        pass
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
