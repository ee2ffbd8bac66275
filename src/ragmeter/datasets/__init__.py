"""Datasets: the native format, loaders for public formats, named benchmarks and the shipped demo.

`load_dataset(name_or_path)` is the one entry point: a registry name (`demo`, `squad_mini`, `squad`,
`natural_questions`, `hotpotqa`, `scifact`) or a path (native JSON/JSONL, SQuAD JSON, HotpotQA or
NQ-open JSONL, or a BEIR folder). Every dataset comes back with its corpus inline.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ragmeter.errors import InputError
from ragmeter.models import EvalDataset

__all__ = ["demo_dataset", "load_dataset", "validate_dataset"]


@lru_cache(maxsize=1)
def _demo_json() -> str:
    return resources.files("ragmeter.datasets").joinpath("demo/demo.json").read_text(encoding="utf-8")


def demo_dataset() -> EvalDataset:
    """The demo shipped in the package: short documents about ragmeter itself, with questions, answers
    and relevant document ids."""
    return EvalDataset.model_validate_json(_demo_json())


def _sniff_jsonl(path: Path) -> str:
    """Which JSONL layout a file uses, from its first record: hotpotqa, nq-open or native. Only the first
    record is read; a bad file is reported (file and line) by the reader of its layout."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            first_line = next((raw for raw in fh if raw.strip()), b"")
        first = json.loads(first_line.decode("utf-8-sig"))
    except (OSError, EOFError, UnicodeDecodeError, ValueError, RecursionError):
        return "native"  # the native reader names the file, the line and what is wrong
    if isinstance(first, dict) and "supporting_facts" in first and "context" in first:
        return "hotpotqa"
    if isinstance(first, dict) and "ctxs" in first and "question" in first:
        return "nq-open"
    return "native"


def _is_squad_json(path: Path) -> bool:
    with path.open("rb") as fh:
        head = fh.read(4096).decode("utf-8", "ignore")
    return '"data"' in head and '"queries"' not in head and '"paragraphs"' in head


def load_path(path: Path, *, seed: int = 42, split: str | None = None) -> EvalDataset:
    """Load a dataset from a path, recognising its format."""
    from ragmeter.datasets.beir import is_beir_folder, load_beir
    from ragmeter.datasets.native import load_native

    if path.is_dir():
        if is_beir_folder(path):
            return load_beir(path, split=split)
        raise InputError(
            "a dataset folder must be in BEIR layout (corpus.jsonl, queries.jsonl, qrels/)", source=str(path)
        )
    if not path.is_file():
        raise InputError("no such file or folder", source=str(path))
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz")):
        kind = _sniff_jsonl(path)
        if kind == "hotpotqa":
            from ragmeter.datasets.qa import load_hotpotqa

            return load_hotpotqa(path)
        if kind == "nq-open":
            from ragmeter.datasets.qa import load_nq_open

            return load_nq_open(path)
    elif name.endswith(".json") and _is_squad_json(path):
        from ragmeter.datasets.qa import load_squad

        return load_squad(path)
    return load_native(path)


def load_dataset(
    name_or_path: str,
    *,
    seed: int = 42,
    data_dir: str | Path | None = None,
    split: str | None = None,
) -> EvalDataset:
    """A named benchmark or a dataset file/folder, with its corpus inline.

    Named benchmarks are looked for in `data_dir`, `$RAGMETER_DATA_DIR`, then the user cache, and are
    downloaded (checksummed) into the cache when absent. `seed` drives sampling (`squad_mini`).
    """
    from ragmeter.datasets import registry

    if name_or_path == "demo":
        return demo_dataset()
    if name_or_path in registry.BENCHMARKS:
        folder = registry.resolve(name_or_path, data_dir=data_dir)
        return registry.BENCHMARKS[name_or_path].load(folder, seed, split)
    path = Path(name_or_path).expanduser()
    if path.exists() or any(sep in name_or_path for sep in ("/", "\\", ".")):
        return load_path(path, seed=seed, split=split)
    registry.get_benchmark(name_or_path)  # raises: unknown name
    raise AssertionError("unreachable")


def validate_dataset(path: str | Path) -> list[str]:
    """Every problem of a native dataset file (JSON or JSONL), each as `location: message`; [] when valid.

    Checks: JSON syntax, fields and their types, duplicate query/doc ids, empty questions and documents,
    relevant ids missing from the corpus. Other formats (BEIR, SQuAD, ...) are checked by loading them.
    """
    from ragmeter.datasets.native import Problems, check_dataset, parse_native

    p = Path(path).expanduser()
    if p.is_file() and p.suffix.lower() in {".json", ".jsonl"}:
        kind = (
            _sniff_jsonl(p) if p.suffix.lower() == ".jsonl" else ("squad" if _is_squad_json(p) else "native")
        )
        if kind == "native":
            return parse_native(p)[1]
    try:
        dataset = load_path(p)
    except InputError as exc:
        return [str(exc)]
    problems = Problems()
    check_dataset(
        dataset,
        problems,
        query_locations=[f"{p}: query {q.query_id}" for q in dataset.queries],
        doc_locations=[f"{p}: document {d.doc_id}" for d in dataset.corpus or []],
    )
    return problems.items
