"""The user's own system: module:function, HTTP endpoint, run files; and the sync/async protocol."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ragmeter.errors import InputError
from ragmeter.models import Document, EvalDataset, EvalQuery
from ragmeter.systems import (
    CallableSystem,
    HttpSystem,
    Retrieved,
    RunFileSystem,
    aanswer,
    aretrieve,
    build_system,
    coerce_results,
    document_level,
)
from ragmeter.systems.external import SystemCallError


def test_coerce_accepts_the_documented_shapes() -> None:
    raw = [
        Retrieved("a", 3.0, "t"),
        ("b", 2),
        ("c", 1.5, "x"),
        {"id": "d", "score": 1, "text": "y"},
        {"doc_id": "e"},
        "f",
    ]
    out = coerce_results(raw, source="s")
    assert [r.doc_id for r in out] == ["a", "b", "c", "d", "e", "f"]
    assert out[1] == Retrieved("b", 2.0, "") and out[3] == Retrieved("d", 1.0, "y")
    assert out[5].score == 1.0  # bare ids are scored by rank: n - i
    with pytest.raises(InputError, match="s: result 0: a result tuple needs 2 or 3 fields"):
        coerce_results([("a",)], source="s")
    with pytest.raises(InputError, match="must return a list"):
        coerce_results("abc", source="s")
    with pytest.raises(InputError, match="result 0"):
        coerce_results([{"score": 1}], source="s")


def test_document_level_keeps_each_document_once() -> None:
    chunks = [Retrieved("a#2", 0.9), Retrieved("b#0", 0.8), Retrieved("a#0", 0.7), Retrieved("c#x", 0.6)]
    assert [r.doc_id for r in document_level(chunks)] == ["a", "b", "c#x"]


class SyncSystem:
    name = "sync"

    def retrieve(self, query: str, k: int) -> list[tuple[str, float]]:
        return [(f"{query}-{i}", 1.0 / (i + 1)) for i in range(k)]

    def answer(self, query: str, contexts: list[Retrieved]) -> str:
        return f"{query} [1] from {contexts[0].doc_id}"


class AsyncSystem:
    name = "async"

    async def retrieve(self, query: str, k: int) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        return [{"id": "x", "score": 1.0, "text": "t"}][:k]


async def test_aretrieve_and_aanswer_accept_sync_and_async() -> None:
    assert await aretrieve(SyncSystem(), "q", 2) == [Retrieved("q-0", 1.0, ""), Retrieved("q-1", 0.5, "")]
    assert await aretrieve(AsyncSystem(), "q", 1) == [Retrieved("x", 1.0, "t")]
    assert await aanswer(SyncSystem(), "q", [Retrieved("d", 1.0)]) == "q [1] from d"
    assert await aanswer(AsyncSystem(), "q", []) is None  # no answer() method


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "my_rag.py").write_text(
        "import asyncio\n"
        "def search(query, k):\n"
        "    return [('doc1', 0.9, 'one'), ('doc2', 0.5, 'two')][:k]\n"
        "async def asearch(query, k):\n"
        "    await asyncio.sleep(0)\n"
        "    return {'results': [{'id': 'doc3', 'score': 2.0}], 'answer': 'it is doc3 [1]'}\n"
        "class Retriever:\n"
        "    def __init__(self, prefix='p'):\n"
        "        self.prefix = prefix\n"
        "    def retrieve(self, query, k):\n"
        "        return [self.prefix + query]\n"
        "not_callable = 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_rag"
    sys.modules.pop("my_rag", None)


async def test_module_function_systems(user_module: str) -> None:
    sync = build_system(f"{user_module}:search")
    assert isinstance(sync, CallableSystem) and sync.name == "my_rag:search"
    assert await aretrieve(sync, "q", 1) == [Retrieved("doc1", 0.9, "one")]
    assert await aanswer(sync, "q", []) is None
    asys = build_system(f"{user_module}:asearch")
    assert await aretrieve(asys, "q", 5) == [Retrieved("doc3", 2.0, "")]
    assert await aanswer(asys, "q", []) == "it is doc3 [1]"
    obj = build_system(f"{user_module}:Retriever", prefix="z-")
    assert await aretrieve(obj, "q", 1) == [Retrieved("z-q", 1.0, "")]
    with pytest.raises(InputError, match="has no attribute 'missing'"):
        build_system(f"{user_module}:missing")
    with pytest.raises(InputError, match="not callable"):
        build_system(f"{user_module}:not_callable")
    with pytest.raises(InputError, match="cannot import module"):
        build_system("no_such_module_xyz:f")


class _Endpoint(BaseHTTPRequestHandler):
    plan: ClassVar[list[int]] = []
    bodies: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        status = type(self).plan.pop(0) if type(self).plan else 200
        if status != 200:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        payload = json.dumps(
            {
                "results": [
                    {"id": f"d{i}", "score": 1.0 - i / 10, "text": body["query"]} for i in range(body["k"])
                ],
                "answer": "ok [1]",
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Endpoint.plan, _Endpoint.bodies = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/search"
    server.shutdown()
    server.server_close()


async def test_http_system_posts_query_and_k_and_retries(endpoint: str) -> None:
    system = build_system(endpoint, retries=2, backoff=0.01)
    assert isinstance(system, HttpSystem)
    _Endpoint.plan = [503, 429]
    results = await aretrieve(system, "hello", 2)
    assert [r.doc_id for r in results] == ["d0", "d1"] and results[0].text == "hello"
    assert _Endpoint.bodies[-1] == {"query": "hello", "k": 2} and len(_Endpoint.bodies) == 3
    assert await aanswer(system, "hello", results) == "ok [1]"
    _Endpoint.plan = [500, 500, 500]
    with pytest.raises(SystemCallError, match=r"HTTP 500.*gave up after 3 attempts"):
        await aretrieve(system, "x", 1)
    _Endpoint.plan = [404]
    n = len(_Endpoint.bodies)
    with pytest.raises(SystemCallError, match="HTTP 404"):
        await aretrieve(system, "x", 1)
    assert len(_Endpoint.bodies) == n + 1  # a 4xx is not retried


async def test_http_system_times_out() -> None:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)  # accepts connections, never answers
    try:
        system = HttpSystem(
            f"http://127.0.0.1:{sock.getsockname()[1]}/", timeout=0.3, retries=1, backoff=0.01
        )
        with pytest.raises(SystemCallError, match="gave up after 2 attempts"):
            await aretrieve(system, "q", 1)
    finally:
        sock.close()


def _dataset() -> EvalDataset:
    return EvalDataset(
        name="t",
        queries=[EvalQuery(query_id="1", question="first?"), EvalQuery(query_id="2", question="second?")],
        corpus=[Document(doc_id="A", text="text of A"), Document(doc_id="B", text="text of B")],
    )


async def test_trec_run_file(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 B 1 0.5 sys\n1 Q0 A 2 0.9 sys\n2 Q0 A 1 1.0 sys\n")
    system = build_system(str(run), dataset=_dataset())
    assert isinstance(system, RunFileSystem)
    assert await aretrieve(system, "first?", 10) == [
        Retrieved("A", 0.9, "text of A"),
        Retrieved("B", 0.5, "text of B"),
    ]
    assert await aretrieve(system, "first?", 1) == [Retrieved("A", 0.9, "text of A")]
    assert [r.doc_id for r in await aretrieve(system, "2", 5)] == ["A"]  # a query id works too
    with pytest.raises(InputError, match="not in the dataset"):
        await aretrieve(system, "unknown question", 5)
    run.write_text("1 Q0 A 1 0.5 sys\n1 Q0 A 2 0.4 sys\n")
    with pytest.raises(InputError, match=r"run.trec:2: document 'A' appears twice"):
        build_system(str(run), dataset=_dataset())
    run.write_text("1 Q0 A 1\n")
    with pytest.raises(InputError, match=r"run.trec:1: expected 6 whitespace-separated columns"):
        build_system(str(run))
    # the IR engine's ranking: scores equal as float32 tie, ties by doc id descending (trec_eval)
    run.write_text("1 Q0 A 1 0.5 sys\n1 Q0 B 2 0.50000001 sys\n1 Q0 C 3 0.9 sys\n")
    system = build_system(str(run), dataset=_dataset())
    assert [r.doc_id for r in await aretrieve(system, "first?", 3)] == ["C", "B", "A"]


async def test_jsonl_results_file(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(
        json.dumps(
            {"query_id": "1", "retrieved": ["B", "A"], "answer": "B says [1]", "contexts": ["text of B"]}
        )
        + "\n"
        + json.dumps({"query_id": "2", "retrieved": [{"id": "A", "score": 3, "text": "own text"}]})
        + "\n"
    )
    system = build_system(str(path), dataset=_dataset())
    first = await aretrieve(system, "first?", 5)
    assert first == [Retrieved("B", 2.0, "text of B"), Retrieved("A", 1.0, "text of A")]
    assert await aanswer(system, "first?", first) == "B says [1]"
    assert await aanswer(system, "second?", []) is None
    assert await aretrieve(system, "second?", 5) == [Retrieved("A", 3.0, "own text")]
    assert isinstance(system, RunFileSystem) and system.contexts_by_id["1"] == ["text of B"]
    path.write_text('{"query_id": "1"}\n')
    with pytest.raises(InputError, match=r"results.jsonl:1: each line needs"):
        build_system(str(path))


def test_unknown_spec_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a system"):
        build_system(str(tmp_path / "nothing-here"))
    with pytest.raises(InputError, match="needs a dataset with a corpus"):
        build_system("builtin")
