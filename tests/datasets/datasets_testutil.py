"""Helpers for the dataset tests: a static HTTP server on 127.0.0.1 and tiny dataset writers."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    """Serve `root` over HTTP on 127.0.0.1; yields the base URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_lying_length(body: bytes, claimed: int) -> Iterator[str]:
    """A server that announces `claimed` bytes, sends `body` and closes: a truncated download."""

    class Handler(_Quiet):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(claimed))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def small_native() -> dict[str, Any]:
    return {
        "name": "tiny",
        "description": "two questions",
        "version": "2.0",
        "queries": [
            {
                "query_id": "q1",
                "question": "What colour is the sky?",
                "ground_truth_answer": "blue",
                "relevant_doc_ids": ["d1"],
                "metadata": {"topic": "weather"},
            },
            {
                "query_id": "q2",
                "question": "What do bees make?",
                "ground_truth_answer": "honey",
                "relevant_doc_ids": ["d2"],
                "relevance": {"d2": 2, "d1": 0},
            },
        ],
        "corpus": [
            {"doc_id": "d1", "title": "Sky", "text": "The sky is blue on a clear day."},
            {"doc_id": "d2", "title": "Bees", "text": "Bees make honey from nectar."},
        ],
    }
