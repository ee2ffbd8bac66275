"""`ragmeter judge-server`: start the offline judge and print its URL, for other tools to share."""

from __future__ import annotations

import time

import click


@click.command("judge-server")
@click.option(
    "--threads", type=int, default=None, help="CPU threads (default: RAGMETER_LOCAL_THREADS or cores, max 8)."
)
@click.option("--parallel", type=int, default=2, show_default=True, help="Requests served at once.")
@click.option("--port", type=int, default=None, help="Port on 127.0.0.1 (default: a free one).")
def judge_server(threads: int | None, parallel: int, port: int | None) -> None:
    """Serve the local judge model (Qwen2.5-Coder-1.5B) on 127.0.0.1 until interrupted."""
    from ragmeter.errors import MissingExtraError
    from ragmeter.llm.local import INSTALL_HINT, MODEL_NAME, local_model_installed, start_server

    if not local_model_installed():
        raise MissingExtraError("local-judge", f"the local judge (and its weights: {INSTALL_HINT})")
    click.echo("assembling and verifying the model, starting the server ...", err=True)
    server = start_server(threads=threads, parallel=parallel, port=port)
    click.echo(server.url)
    click.echo(f"judge spec: openai-compatible:{MODEL_NAME}@{server.url}  (Ctrl-C to stop)", err=True)
    try:
        while server.alive:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    if server.process.returncode not in (0, None, -15):
        raise click.ClickException(f"the judge server exited with code {server.process.returncode}")
