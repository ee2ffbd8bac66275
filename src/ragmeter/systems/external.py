"""The user's own system: a Python callable, an HTTP endpoint, or precomputed results in a file."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import random
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError, RagmeterError
from ragmeter.models import EvalDataset
from ragmeter.systems.base import Retrieved, coerce_results


class SystemCallError(RagmeterError):
    """The system under test failed for one query (HTTP error after retries, bad reply...)."""


class _AnswerMemo:
    """Systems that return an answer together with their results: keep it for `answer()`."""

    def __init__(self) -> None:
        self._answers: dict[str, Any] = {}

    def _remember(self, query: str, raw: Any) -> Any:
        if isinstance(raw, Mapping):
            answer = raw.get("answer")
            if isinstance(answer, str):
                confidence = raw.get("confidence")
                # with a confidence, answer() returns {"answer", "confidence"} (read by systems.base)
                self._answers[query] = (
                    answer if confidence is None else {"answer": answer, "confidence": confidence}
                )
            return raw.get("results", raw.get("retrieved", []))
        return raw

    def answer(self, query: str, contexts: list[Retrieved]) -> Any:
        return self._answers.get(query)


def import_target(spec: str) -> Any:
    """`package.module:attr[.attr]` -> the object; the working directory is importable."""
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise InputError("expected module:function", source=spec)
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"cannot import module {module_name!r}: {exc}", source=spec) from None
    except Exception as exc:  # the module's own code raised: one line, where and what, no traceback
        raise InputError(
            f"importing module {module_name!r} raised {type(exc).__name__}: {' '.join(str(exc).split())}"
            f"{_where(exc)}",
            source=spec,
        ) from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InputError(f"module {module_name!r} has no attribute {attr_path!r}", source=spec) from None
    return obj


def _where(exc: BaseException) -> str:
    """` (FILE, line N)` of the innermost frame of the user's code that raised, if any."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename]
    return f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""


class CallableSystem(_AnswerMemo):
    """A function `f(query, k)` (sync or async) returning results, or `{results, answer}`."""

    def __init__(self, fn: Any, *, name: str) -> None:
        super().__init__()
        if not callable(fn):
            raise InputError("not callable", source=name)
        self.fn = fn
        self.name = name

    async def retrieve(self, query: str, k: int) -> list[Retrieved]:
        if inspect.iscoroutinefunction(self.fn):
            raw = await self.fn(query, k)
        else:
            raw = await asyncio.to_thread(self.fn, query, k)
            if inspect.isawaitable(raw):
                raw = await raw
        return coerce_results(self._remember(query, raw), source=self.name)


class HttpSystem(_AnswerMemo):
    """POST `{"query": ..., "k": ...}` to `url`; the reply is `{"results": [{id, score, text}], "answer"?}`.
    Timeouts, connection errors, 429 and 5xx are retried with jittered exponential backoff."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.url = url
        self.name = url
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.headers = {"Content-Type": "application/json", **(headers or {})}

    def _post_once(self, body: bytes) -> Any:
        request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as resp:
            payload = resp.read()
        try:
            return json.loads(payload)
        except json.JSONDecodeError:
            raise SystemCallError(f"{self.url}: the reply is not JSON") from None

    def _post(self, query: str, k: int) -> Any:
        body = json.dumps({"query": query, "k": k}).encode()
        attempt = 0
        while True:
            try:
                return self._post_once(body)
            except urllib.error.HTTPError as exc:
                retryable = exc.code == 429 or exc.code >= 500
                reason = f"HTTP {exc.code} {exc.reason}"
                if not retryable:
                    raise SystemCallError(f"{self.url}: {reason}") from None
            except (TimeoutError, urllib.error.URLError, ConnectionError) as exc:
                reason = f"{getattr(exc, 'reason', exc) or type(exc).__name__}"
            if attempt >= self.retries:
                raise SystemCallError(f"{self.url}: {reason} (gave up after {attempt + 1} attempts)")
            time.sleep(random.uniform(0, self.backoff * 2**attempt))
            attempt += 1

    async def retrieve(self, query: str, k: int) -> list[Retrieved]:
        raw = await asyncio.to_thread(self._post, query, k)
        if not isinstance(raw, Mapping) or "results" not in raw:
            raise SystemCallError(f"{self.url}: the reply has no 'results' list")
        return coerce_results(self._remember(query, raw), source=self.url)


class RunFileSystem(_AnswerMemo):
    """Precomputed results: a TREC run file (`qid Q0 docid rank score tag`) or a JSONL of
    `{query_id, retrieved: [...], answer?, contexts?}`. A query is found by its text in `dataset` (or
    when it is itself a query id); a query missing from the file retrieved nothing."""

    def __init__(self, path: Path, *, dataset: EvalDataset | None = None) -> None:
        super().__init__()
        self.path = path
        self.name = f"run:{path.name}"
        self.results: dict[str, list[Retrieved]] = {}
        self.answers_by_id: dict[str, str] = {}
        self.contexts_by_id: dict[str, list[str]] = {}
        if not path.is_file():
            raise InputError("no such run file", source=str(path))
        if path.suffix.lower() in (".jsonl", ".json"):
            self._read_jsonl(path)
        else:
            self._read_trec(path)
        self._qid_by_text: dict[str, str] = {}
        self._texts: dict[str, str] = {}
        if dataset is not None:
            for q in dataset.queries:
                self._qid_by_text.setdefault(q.question, q.query_id)
            self._texts = {d.doc_id: d.text for d in dataset.corpus or []}

    def _read_trec(self, path: Path) -> None:
        # The IR engine's reader: same errors, and trec_eval's ranking (float32 score desc, doc id desc).
        from ragmeter.ir import Run

        run = Run.from_trec(path)
        for qid in run.query_ids:
            self.results[qid] = [Retrieved(d, s, "") for d, s in run.query(qid)]

    def _read_jsonl(self, path: Path) -> None:
        from ragmeter.datasets.native import iter_jsonl

        for lineno, rec in iter_jsonl(path):  # bad bytes or JSON: an InputError naming the line
            if not isinstance(rec, dict) or "query_id" not in rec or "retrieved" not in rec:
                raise InputError("each line needs 'query_id' and 'retrieved'", source=str(path), line=lineno)
            qid = str(rec["query_id"])
            if qid in self.results:
                raise InputError(f"query {qid!r} appears twice", source=str(path), line=lineno)
            try:
                self.results[qid] = coerce_results(rec["retrieved"], source=f"{path}:{lineno}")
            except InputError as exc:
                raise InputError(exc.reason, source=str(path), line=lineno) from None
            if isinstance(rec.get("answer"), str):
                self.answers_by_id[qid] = rec["answer"]
            if isinstance(rec.get("contexts"), list):
                self.contexts_by_id[qid] = [str(c) for c in rec["contexts"]]

    def query_id(self, query: str) -> str:
        if query in self._qid_by_text:
            return self._qid_by_text[query]
        if query in self.results or not self._qid_by_text:
            return query
        raise InputError(
            f"query {query[:60]!r} is not in the dataset this run file was matched to", source=str(self.path)
        )

    def retrieve(self, query: str, k: int) -> list[Retrieved]:
        hits = self.results.get(self.query_id(query), [])[:k]
        return [r if r.text else Retrieved(r.doc_id, r.score, self._texts.get(r.doc_id, "")) for r in hits]

    def answer(self, query: str, contexts: list[Retrieved]) -> str | None:
        return self.answers_by_id.get(self.query_id(query))


def import_system_module(spec: str | None) -> None:
    """Import the module a `--system module:attr` (or `langchain:module:attr`, ...) names, before the
    invocation is checked: metrics it registers (docs/metrics.md, "A metric of your own") are then known
    to --metrics and --fail-under. Anything else (builtin, a URL, a file) is left alone; an import error
    is left for the system's own check, which names it."""
    if not spec or spec == "builtin" or "://" in spec or Path(spec).expanduser().exists():
        return
    from ragmeter.systems.adapters._prefixes import PREFIXES

    prefix, sep, rest = spec.partition(":")
    target = rest if sep and prefix in PREFIXES else spec
    module_name, sep, _ = target.partition(":")
    if not sep or not module_name:
        return
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        importlib.import_module(module_name)
    except Exception:  # reported by the system check, which names the reason
        return
