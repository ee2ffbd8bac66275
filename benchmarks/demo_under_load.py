"""`ragmeter demo` beside one CPU-bound process: does it show a generated and judged answer, how soon, and
where the time goes.

    PYTHONPATH=src python benchmarks/demo_under_load.py [--busy 1] [--budget 150] [--json OUT]

Starts `--busy` processes that spin (`python -c "while True: pass"`), then runs `python -m ragmeter demo` in
a fresh folder (its own SQLite store and output folder) and timestamps every line it prints. When the demo
ends it reads the judged run the demo stored (hybrid-judged.json) and reports, per judged question: the
generation's and each judge's seconds and prompt / reply tokens as recorded in the run (the client's usage).
Then, still beside the busy processes, it times the local judge server's start on its own (process start,
model load, first answer to /v1/models) and one short call, so server start, model load, prompt and reply
are each measured. Needs the local judge installed (see docs/runs.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def spin(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def run_demo(folder: Path, budget: float) -> tuple[list[tuple[float, str]], float, int]:
    cmd = [
        sys.executable,
        "-m",
        "ragmeter",
        "demo",
        "--no-progress",
        "--budget",
        str(budget),
        "--db",
        f"sqlite:///{folder / 'demo.db'}",
        "--output-dir",
        str(folder / "out"),
    ]
    env = {**os.environ, "COLUMNS": "160"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    lines = []
    assert proc.stdout is not None
    for raw in proc.stdout:
        lines.append((time.perf_counter() - t0, raw.decode(errors="replace").rstrip()))
    rc = proc.wait()
    return lines, time.perf_counter() - t0, rc


def stage_times(path: Path) -> list[dict[str, Any]]:
    """Per judged question: its stage latencies and the LLM usage the run recorded (generator and judges:
    calls, prompt and reply tokens, seconds)."""
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    return [
        {
            "query_id": q.get("query_id"),
            "latency_ms": q.get("latency_ms") or {},
            "usage": q.get("usage") or {},
        }
        for q in data.get("per_query", [])
    ]


def server_start(busy: int) -> dict[str, float]:
    """Time the local server's start and one short call, beside the busy processes."""
    import urllib.request

    from ragmeter.llm.local import default_threads, ensure_model, start_server

    t0 = time.perf_counter()
    path = ensure_model()
    t1 = time.perf_counter()
    threads = default_threads()
    server = start_server(path, threads=threads, parallel=2)
    t2 = time.perf_counter()
    body = json.dumps(
        {
            "model": "local",
            "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 8,
            "temperature": 0,
        }
    ).encode()
    req = urllib.request.Request(
        server.url + "/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=600) as r:
        reply = json.loads(r.read())
    t3 = time.perf_counter()
    server.stop()
    timings = reply.get("timings") or {}
    return {
        "threads": threads,
        "model_file_ready_s": t1 - t0,
        "server_start_and_load_s": t2 - t1,
        "first_short_call_s": t3 - t2,
        "prompt_ms_per_token": float(timings.get("prompt_per_token_ms", float("nan"))),
        "reply_ms_per_token": float(timings.get("predicted_per_token_ms", float("nan"))),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--busy", type=int, default=1, help="CPU-bound processes beside the demo")
    ap.add_argument("--budget", type=float, default=150.0, help="the demo's --budget")
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()
    spinners = spin(args.busy)
    try:
        time.sleep(2)
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            lines, wall, rc = run_demo(folder, args.budget)
            stages = stage_times(folder / "out" / "hybrid-judged.json")
        start = server_start(args.busy)
    finally:
        for p in spinners:
            p.kill()
    print(
        f"demo beside {args.busy} spinning process(es), load {load:.1f} at its start: exit {rc}, {wall:.0f} s"
    )
    for t, line in lines:
        print(f"  [{t:6.1f} s] {line}")
    judged_line = next((t for t, line in lines if line.lstrip().startswith("5.")), None)
    print(f"judged step began at {judged_line if judged_line is None else round(judged_line, 1)} s")
    for row in stages:
        print(f"  {row['query_id']}: latency_ms {row['latency_ms']}")
        for role, labels in row["usage"].items():
            for label, line in labels.items():
                print(f"    {role} {label}: {line}")
    print(
        "local server beside the same load: model file {model_file_ready_s:.1f} s, process start + model "
        "load until /v1/models answers {server_start_and_load_s:.1f} s, one short call {first_short_call_s:.1f} s "
        "({threads} thread(s); prompt {prompt_ms_per_token:.1f} ms/token, reply {reply_ms_per_token:.1f} "
        "ms/token)".format(**start)
    )
    shown = any("judge" in line.lower() and "stopped" not in line.lower() for _, line in lines)
    print(
        f"within 4 minutes: {'yes' if wall <= 240 else 'NO'} ({wall:.0f} s); a judged answer printed: "
        f"{'see the lines above' if shown else 'no'}"
    )
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {"wall": wall, "rc": rc, "load": load, "lines": lines, "stages": stages, "server": start}
            )
        )


if __name__ == "__main__":
    main()
