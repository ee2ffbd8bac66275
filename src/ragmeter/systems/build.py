"""`build_system(spec)`: one function that turns what the user named into a System."""

from __future__ import annotations

import contextlib
import inspect
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError
from ragmeter.models import EvalDataset
from ragmeter.systems.base import System


def build_system(
    spec: str,
    *,
    dataset: EvalDataset | None = None,
    mode: str = "hybrid",
    collection: str | None = None,
    llm: object | None = None,
    index_dir: str | Path | None = None,
    disable: set[str] | frozenset[str] = frozenset(),
    **options: Any,
) -> System:
    """The system named by `spec`:

    - `builtin`: the built-in Pipeline over `dataset.corpus` (`mode`, `disable`, `llm`, options such as
      chunk_size, chunk_overlap, model, weights, rrf_k, reranker);
    - `module:function`: a callable `f(query, k)` (or an object/class with `retrieve`);
    - `http://...` / `https://...`: an HTTP endpoint (options: timeout, retries, headers);
    - `langchain:module:attr`, `llamaindex:module:attr`, `haystack:module:attr`: a framework object
      (or a function returning one) through `ragmeter.systems.adapters` (options go to the adapter);
    - a path to a TREC run file or a JSONL results file.
    """
    if spec == "builtin":
        from ragmeter.systems.pipeline import Pipeline

        if dataset is None or not dataset.corpus:
            raise InputError("the built-in system needs a dataset with a corpus", source="builtin")
        try:
            return Pipeline(
                dataset.corpus,
                mode=mode,
                collection=collection or dataset.name,
                index_dir=index_dir,
                disable=disable,
                llm=llm,
                **options,
            )
        except TypeError as exc:
            raise InputError(f"bad pipeline option: {exc}", source="builtin") from None
    if spec.startswith(("http://", "https://")):
        from ragmeter.systems.external import HttpSystem

        return HttpSystem(spec, **options)
    from ragmeter.systems.adapters import from_spec, is_adapter_spec

    if is_adapter_spec(spec):  # langchain: / llamaindex: / haystack: module:attr
        system: System = from_spec(spec, **options)
        return system
    path = Path(spec).expanduser()
    if path.is_file():
        from ragmeter.systems.external import RunFileSystem

        return RunFileSystem(path, dataset=dataset)
    if ":" in spec and not path.exists():
        from ragmeter.systems.external import CallableSystem, import_target

        target = import_target(spec)
        if inspect.isclass(target):
            target = target(**options)
        if hasattr(target, "retrieve"):
            if not hasattr(target, "name"):
                with contextlib.suppress(AttributeError):
                    target.name = spec
            return target  # type: ignore[no-any-return]
        return CallableSystem(target, name=spec)
    raise InputError(
        "not a system: use 'builtin', module:function, an http(s):// URL or a run file path", source=spec
    )
