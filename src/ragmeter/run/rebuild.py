"""The one rebuild path: the system under test, the judge and generator clients and the dataset, built from
a run's record. A fresh run, `run --resume`, every Ray worker and `rescore` all come through here, so what
the record holds (a judge's timeout, retries and budget included) is what each of them gets."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.datasets.resolve import resolve_dataset as resolve_dataset  # its home; this name kept
from ragmeter.errors import InputError
from ragmeter.models import EvalDataset
from ragmeter.records import LLMRef, RunRecord, SystemRef

if TYPE_CHECKING:
    from ragmeter.systems import Retrieved

LLM_CACHE = Path(".ragmeter") / "llm-cache.sqlite"


class SystemAdapter:
    """Any system through ragmeter.systems' protocol: a System (sync or async `retrieve`, optional
    `answer`), or a plain callable `fn(question, k)` wrapped as a CallableSystem."""

    def __init__(self, system: Any) -> None:
        from ragmeter.systems import CallableSystem

        if not hasattr(system, "retrieve"):
            if not callable(system):
                raise InputError(f"not a system: {system!r} has no retrieve() and is not callable")
            system = CallableSystem(system, name=getattr(system, "__name__", "callable"))
        self.system = system

    async def retrieve(self, question: str, k: int) -> list[Retrieved]:
        from ragmeter.systems import aretrieve

        return await aretrieve(self.system, question, k)

    async def answer(self, question: str, contexts: list[Retrieved]) -> str | None:
        from ragmeter.systems import aanswer

        return await aanswer(self.system, question, contexts)

    def select_contexts(self, question: str, hits: list[Retrieved], k: int) -> list[Retrieved]:
        """What the generator is given: the top `k` hits, unless the system chooses (a diagnose replay's
        oracle contexts, ragmeter.diagnose.replay)."""
        choose = getattr(self.system, "select_contexts", None)
        return list(choose(question, hits, k)) if callable(choose) else list(hits[:k])

    async def retrieve_timed(self, question: str, k: int) -> tuple[list[Retrieved], float]:
        """The hits and the ms the system itself took (timed where it runs, not queued time)."""
        from ragmeter.systems.base import aretrieve_timed

        return await aretrieve_timed(self.system, question, k)

    async def answer_timed(self, question: str, contexts: list[Retrieved]) -> tuple[str | None, float]:
        from ragmeter.systems.base import aanswer_timed

        return await aanswer_timed(self.system, question, contexts)

    async def warm_up(self) -> None:
        """Load the system's indexes and models before the first query's clock starts."""
        from ragmeter.systems.base import awarm_up

        await awarm_up(self.system)


def _options(ref: SystemRef) -> dict[str, Any]:
    options = dict(ref.options)
    if isinstance(options.get("disable"), list):
        options["disable"] = set(options["disable"])
    return options


def check_system(ref: SystemRef, dataset: EvalDataset, *, source: str = "--system") -> None:
    """Refuse, before anything runs, a system reference that cannot be built (without building it:
    the built-in pipeline would index the corpus)."""
    if not ref.rebuildable and ref.kind != "object":
        raise InputError(f"cannot rebuild the system: {ref.why_not}", source=source)
    if ref.kind == "builtin":
        from ragmeter.systems.pipeline import COMPONENTS, MODES, Pipeline

        if not dataset.corpus:
            raise InputError(
                f"the built-in system needs a dataset with a corpus; {dataset.name!r} has none "
                "(give a dataset with its corpus, or --system module:function / URL / run file)",
                source="--dataset",
            )
        if ref.mode not in MODES:
            raise InputError(f"unknown mode {ref.mode!r}; use one of {', '.join(MODES)}", source="mode")
        known = set(inspect.signature(Pipeline.__init__).parameters) - {"self", "corpus", "llm", "collection"}
        unknown = sorted(set(ref.options) - known)
        if unknown:
            raise InputError(f"unknown pipeline option(s) {', '.join(unknown)}", source=source)
        bad = sorted(set(ref.options.get("disable") or ()) - COMPONENTS)
        if bad:
            raise InputError(f"unknown component(s) to disable: {', '.join(bad)}", source=source)
        _check_embedding(ref, source=source)
    elif ref.kind == "reference":
        if ":" not in ref.spec:
            raise InputError(
                "not a system: use 'builtin', module:function, an http(s):// URL or a run file path",
                source=ref.spec,
            )
        from ragmeter.systems.adapters import is_adapter_spec
        from ragmeter.systems.external import import_target

        import_target(ref.spec.partition(":")[2] if is_adapter_spec(ref.spec) else ref.spec)  # langchain:m:a
    elif ref.kind == "run_file":
        _check_run_file(ref, dataset)


def _check_run_file(ref: SystemRef, dataset: EvalDataset) -> None:
    """Read the run file now (binary data, a bad line): refused before a run row is stored. The error
    names the file and line already."""
    from ragmeter.systems.external import RunFileSystem

    RunFileSystem(Path(ref.spec).expanduser(), dataset=dataset)


def _check_embedding(ref: SystemRef, *, source: str) -> None:
    """An embedding backend or precision that is unknown, or not installed, fails before the run starts; so does
    a recorded embedding space this ragmeter would no longer produce (a resume would mix two spaces)."""
    backend = ref.options.get("embedding_backend", "torch")
    if ref.mode in ("bm25", "fulltext") or "dense" in (ref.options.get("disable") or ()):
        return
    from ragmeter.errors import RagmeterError
    from ragmeter.semantic.locate import check_local_model
    from ragmeter.systems.indexes import embedding_space

    if ref.options.get("model"):  # a folder that is not there fails now, before a run row is stored
        try:
            check_local_model(str(ref.options["model"]), what="embedding model")
        except RagmeterError as exc:
            raise InputError(str(exc), source=source) from None
    try:
        space = embedding_space(
            ref.options.get("model"),
            backend,
            ref.options.get("max_seq_length"),
            ref.options.get("embedding_precision"),
        )
    except InputError as exc:
        raise InputError(exc.reason, source=source) from None
    recorded = dict(ref.embedding or {})
    now = space.as_dict()
    if recorded and any(recorded.get(k) != v for k, v in now.items() if v is not None):
        raise InputError(
            f"the run's dense index was encoded as {_space_text(recorded)}; this ragmeter encodes "
            f"{_space_text(now)}: resuming would mix two embedding spaces (start a new run)",
            source=source,
        )
    if backend == "onnx":
        from ragmeter.errors import MissingExtraError
        from ragmeter.semantic.onnx import onnx_available

        if not onnx_available():
            raise MissingExtraError("onnx", "--embedding-backend onnx")


def _space_text(space: dict[str, Any]) -> str:
    return "/".join(str(space.get(k)) for k in ("model", "backend", "precision", "max_seq_length"))


def build_system(ref: SystemRef, dataset: EvalDataset, generator: Any = None) -> SystemAdapter:
    """Exactly the recorded system: its reference, mode, namespace and every option."""
    if ref.kind == "object":
        raise InputError(
            f"this run {ref.why_not}: resume it through the Python API, passing an object with the same "
            "fingerprint: run_evaluation(None, system, resume=RUN_ID)",
            source="--resume",
        )
    if not ref.rebuildable:
        raise InputError(f"cannot rebuild the system: {ref.why_not}", source="--resume")
    from ragmeter.systems import build_system as build

    return SystemAdapter(
        build(
            ref.spec, dataset=dataset, mode=ref.mode, collection=ref.namespace, llm=generator, **_options(ref)
        )
    )


def make_llm(ref: LLMRef, record: RunRecord) -> Any:
    """A client from a recorded spec and the options recorded with it (timeout, max_retries, budget); API
    keys come from the environment, never from the record."""
    from ragmeter.llm import from_spec

    kwargs: dict[str, Any] = {"concurrency": record.concurrency, "seed": record.seed, **ref.options}
    if record.cache:
        kwargs["cache"] = str(LLM_CACHE)
    return from_spec(ref.spec, **kwargs)


def build_clients(
    record: RunRecord, *, judge: Any = None, generator: Any = None, want_generator: bool = True
) -> tuple[Any, Any, list[Any]]:
    """(judge, generator, clients made here) for `record`: a client given in-process is used as it is,
    else it is made from the record (the generator only if `want_generator`). When both are the offline
    `local` model they share one server: the generator's requests go to the judge's server."""
    owned: list[Any] = []
    if judge is None and record.judge is not None:
        judge = make_llm(record.judge, record)
        owned.append(judge)
    if want_generator and generator is None and record.generator is not None and record.evaluate_generation:
        generator = make_llm(record.generator, record)
        share = getattr(generator, "share_server", None)
        if share is not None and getattr(judge, "backend", None) == "local":
            share(judge)
        owned.insert(0, generator)  # closed before the judge whose server it may use
    if judge is not None and record.escalation is not None:
        from ragmeter.judges.cascade import Cascade

        strong = make_llm(record.escalation.strong, record)
        owned.append(strong)
        esc = record.escalation
        judge = Cascade(judge, strong, metric=esc.metric, threshold=esc.threshold)
    return judge, generator, owned


def check_llm_spec(spec: str, *, source: str) -> dict[str, Any]:
    """Parse an LLM spec; returns the client's public description (no request is sent: SDK clients are
    made on first use)."""
    from ragmeter.llm import from_spec

    try:
        client = from_spec(spec)
    except InputError as exc:
        raise InputError(exc.reason, source=source) from None
    return dict(client.spec_public)
