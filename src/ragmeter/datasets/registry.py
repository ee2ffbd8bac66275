"""Named benchmarks: where their files come from, their checksums, and how each becomes an EvalDataset.

A named dataset is looked for in `data_dir` (argument), then `$RAGMETER_DATA_DIR`, then the user cache
(`$RAGMETER_CACHE_DIR`, else `$XDG_CACHE_HOME/ragmeter`, else `~/.cache/ragmeter`, + `/datasets`), and
is downloaded into the cache when absent. `$RAGMETER_DATASETS_URL` (or `base_url=`) names a mirror that
serves the same folder layout as the data directory (`<base>/<folder>/<path>`): plain files, no archive.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragmeter import paths
from ragmeter.datasets.download import download_file, download_zip_members
from ragmeter.errors import InputError
from ragmeter.models import EvalDataset

_BEIR = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
_GH = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class DataFile:
    """One file of a benchmark: its path in the benchmark's folder, where to get it, and its checksum."""

    path: str
    url: str
    sha256: str
    size: int
    member: str | None = None  # when `url` is a zip: the member to extract


@dataclass(frozen=True)
class Benchmark:
    name: str
    folder: str
    description: str
    license: str
    files: tuple[DataFile, ...]
    load: Callable[[Path, int, str | None], EvalDataset]


def _squad(limit: int | None, name: str) -> Callable[[Path, int, str | None], EvalDataset]:
    def load(folder: Path, seed: int, split: str | None) -> EvalDataset:
        from ragmeter.datasets.qa import load_squad

        _only_split(name, split, "dev")
        return load_squad(folder / "dev-v1.1.json", limit=limit, seed=seed, name=name)

    return load


def _nq(folder: Path, seed: int, split: str | None) -> EvalDataset:
    from ragmeter.datasets.qa import load_nq_open

    _only_split("natural_questions", split, "dev")
    # A fixed sample (seed 0, as the shared sample file), so that numbers are comparable across runs.
    return load_nq_open(
        folder / "nq-open-oracle.jsonl.gz", sample=1000, sample_seed=0, name="natural_questions"
    )


def _hotpot(folder: Path, seed: int, split: str | None) -> EvalDataset:
    from ragmeter.datasets.qa import load_hotpotqa

    _only_split("hotpotqa", split, "dev")
    return load_hotpotqa(folder / "hotpotqa_dev_distractor_500.jsonl", name="hotpotqa")


def _scifact(folder: Path, seed: int, split: str | None) -> EvalDataset:
    from ragmeter.datasets.beir import load_beir

    return load_beir(folder, split=split or "test", name="scifact")


def _only_split(name: str, split: str | None, only: str) -> None:
    if split not in (None, only):
        raise InputError(f"dataset {name!r} has only the {only!r} split, not {split!r}")


_SQUAD_FILE = DataFile(
    "dev-v1.1.json",
    "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json",
    "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
    4854279,
)

BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in [
        Benchmark(
            "squad_mini",
            "squad",
            "100 SQuAD v1.1 dev questions sampled with the run's seed; all 2,067 dev paragraphs as corpus",
            "CC BY-SA 4.0",
            (_SQUAD_FILE,),
            _squad(100, "squad_mini"),
        ),
        Benchmark(
            "squad",
            "squad",
            "SQuAD v1.1 dev: 10,570 questions, 2,067 paragraphs as corpus",
            "CC BY-SA 4.0",
            (_SQUAD_FILE,),
            _squad(None, "squad"),
        ),
        Benchmark(
            "natural_questions",
            "natural_questions",
            "NQ-open dev, lost-in-the-middle oracle passages: 1,000 questions (fixed sample, seed 0)",
            "CC BY-SA 3.0",
            (
                DataFile(
                    "nq-open-oracle.jsonl.gz",
                    f"{_GH}/nelson-liu/lost-in-the-middle/29b8a6d042ce29abccee3db1a73171a107d7e6af/"
                    "qa_data/nq-open-oracle.jsonl.gz",
                    "6a7f72b846f663a133ef952244e5a4e43f06bcf190afe34e8fbe687ce0d1653e",
                    900334,
                ),
            ),
            _nq,
        ),
        Benchmark(
            "hotpotqa",
            "hotpotqa",
            "HotpotQA dev distractor: 500 questions, their 10 context paragraphs pooled as corpus",
            "CC BY-SA 4.0",
            (
                DataFile(
                    "hotpotqa_dev_distractor_500.jsonl",
                    f"{_GH}/megagonlabs/RPT/cf2bc1b1b4edd0318b84179e732ec476c4e20a6e/data/hotpotqa/test.jsonl",
                    "3ab48ee61e64301dff1efbb956ca5ebdfcd1569a2e9d7381fd882e070badfb2a",
                    3124218,
                ),
            ),
            _hotpot,
        ),
        Benchmark(
            "scifact",
            "beir_scifact",
            "BEIR SciFact: 5,183 abstracts, 300 test claims (train split: 809)",
            "CC BY-NC 2.0",
            (
                DataFile(
                    "corpus.jsonl",
                    _BEIR,
                    "dec31c8182f3d744c7d2c09423756fd1d17cbef75808db13ba01cc0aab4d1ac6",
                    8106566,
                    "scifact/corpus.jsonl",
                ),
                DataFile(
                    "queries.jsonl",
                    _BEIR,
                    "f9f862a1e8e0a52b4b83d1bd800f90a9dd2b6ba5a42caac5d346827ee0dcbbfa",
                    146829,
                    "scifact/queries.jsonl",
                ),
                DataFile(
                    "qrels/test.tsv",
                    _BEIR,
                    "0864bb985e0ca2367ba217977e72004d549054b2b06666ed9d4825ac7c21284c",
                    5389,
                    "scifact/qrels/test.tsv",
                ),
                DataFile(
                    "qrels/train.tsv",
                    _BEIR,
                    "a53f2114831916c096b6c37d9e54da68cef4efdcdbd5ed46533601af972acf1d",
                    14502,
                    "scifact/qrels/train.tsv",
                ),
            ),
            _scifact,
        ),
    ]
}

NAMES = ("demo", *BENCHMARKS)


def cache_dir() -> Path:
    """The user cache for downloaded datasets."""
    return paths.cache_dir() / "datasets"


def search_dirs(data_dir: str | Path | None = None) -> list[Path]:
    """Where named datasets are looked for, in order: `data_dir`, `$RAGMETER_DATA_DIR`, the cache."""
    dirs: list[Path] = []
    if data_dir is not None:
        dirs.append(Path(data_dir).expanduser())
    env = os.environ.get("RAGMETER_DATA_DIR")
    if env:
        dirs.append(Path(env).expanduser())
    dirs.append(cache_dir())
    return dirs


def _complete(bench: Benchmark, folder: Path) -> bool:
    return all((folder / f.path).is_file() for f in bench.files)


def get_benchmark(name: str) -> Benchmark:
    bench = BENCHMARKS.get(name)
    if bench is None:
        raise InputError(f"unknown dataset {name!r}; known: {', '.join(NAMES)} (or give a file/folder path)")
    return bench


def locate(name: str, data_dir: str | Path | None = None) -> Path | None:
    """The folder holding every file of benchmark `name`, or None when it is nowhere yet."""
    bench = get_benchmark(name)
    for root in search_dirs(data_dir):
        if _complete(bench, root / bench.folder):
            return root / bench.folder
    return None


def fetch(
    name: str,
    *,
    dest_root: Path | None = None,
    base_url: str | None = None,
    progress: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Download the missing files of benchmark `name` into `dest_root` (default: the cache); return its
    folder. Every file is verified against its sha256 before it gets its final name."""
    bench = get_benchmark(name)
    folder = (dest_root or cache_dir()) / bench.folder
    mirror = base_url or os.environ.get("RAGMETER_DATASETS_URL")
    missing = [f for f in bench.files if not (folder / f.path).is_file()]
    made = _first_missing(folder)
    try:
        _download(bench, folder, missing, mirror, progress=progress, timeout=timeout)
    except BaseException:
        if made is not None:  # a failed download leaves no folder behind either
            _remove_empty(made)
        raise
    return folder


def _first_missing(folder: Path) -> Path | None:
    """The topmost folder on the way to `folder` that does not exist yet (None: it exists)."""
    if folder.exists():
        return None
    top = folder
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    return top


def _remove_empty(top: Path) -> None:
    """Remove `top` and the folders under it, bottom up, as far as they are empty."""
    for root, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            Path(root).rmdir()


def _download(
    bench: Benchmark,
    folder: Path,
    missing: list[DataFile],
    mirror: str | None,
    *,
    progress: bool,
    timeout: float,
) -> None:
    zips: dict[str, dict[str, tuple[Path, str, int | None]]] = {}
    for f in missing:
        dest = folder / f.path
        if mirror:
            url = f"{mirror.rstrip('/')}/{bench.folder}/{f.path}"
            download_file(url, dest, sha256=f.sha256, size=f.size, progress=progress, timeout=timeout)
        elif f.member is not None:
            zips.setdefault(f.url, {})[f.member] = (dest, f.sha256, f.size)
        else:
            download_file(f.url, dest, sha256=f.sha256, size=f.size, progress=progress, timeout=timeout)
    for url, members in zips.items():
        download_zip_members(url, members, progress=progress, timeout=timeout)


def resolve(
    name: str, *, data_dir: str | Path | None = None, download: bool = True, base_url: str | None = None
) -> Path:
    """The folder of benchmark `name`: found locally, else downloaded into the cache."""
    found = locate(name, data_dir)
    if found is not None:
        return found
    if not download:
        where = ", ".join(str(d) for d in search_dirs(data_dir))
        raise InputError(f"dataset {name!r} is not in {where} and downloading is off")
    return fetch(name, base_url=base_url)
