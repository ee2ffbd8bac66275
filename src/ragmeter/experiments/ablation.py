"""Ablation grids: run variants of the built-in pipeline on one dataset with one seed, tabulate them.

An experiment file (YAML or JSON)::

    name: scifact-ablation
    dataset: beir_scifact          # a named benchmark or a dataset path (as `ragmeter run`)
    seed: 42
    limit: null                    # sample this many queries (seeded), null = all
    k: [5, 10, 20]                 # retrieval cutoffs measured
    pipeline: {chunk_size: 200}    # options every variant starts from
    variants:
      - name: hybrid
        mode: hybrid
      - name: hybrid-no-dense
        mode: hybrid
        disable: [dense]
      - name: hybrid-weighted
        weights: {bm25: 0.3, dense: 0.7}
        rrf_k: 20

A variant may set ``mode`` (fulltext | semantic | hybrid), ``disable`` (bm25, dense, reranking,
generation, chunking), ``embedding`` (a sentence-transformers model), ``weights``, ``rrf_k``, ``depth``,
``reranker`` and any other pipeline option under ``options``. A plain BM25 baseline runs first (unless
``baseline: false``); every variant is stored as a run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalDataset, EvalRunResult

if TYPE_CHECKING:
    from ragmeter.experiments.significance import Comparison

DEFAULT_COLUMNS = ("recall@5", "recall@10", "recall@20", "mrr", "map", "ndcg@10")
JUDGE_COLUMNS = ("avg_llm_grade", "avg_total_score", "pass_rate_8", "pass_rate_7", "pass_rate_6_5")
# Names the issue and users say, mapped onto the pipeline's component names.
_COMPONENT_ALIASES = {
    "reranking": "rerank",
    "rerank": "rerank",
    "generation": "generation",
    "dense": "dense",
    "bm25": "bm25",
    "chunking": "chunking",
}
BASELINE_NAME = "bm25"


class Variant(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    mode: str | None = None
    disable: list[str] = Field(default_factory=list)
    embedding: str | None = None
    weights: dict[str, float] | None = None
    rrf_k: int | None = None
    depth: int | None = None
    reranker: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("disable")
    @classmethod
    def _known_components(cls, value: list[str]) -> list[str]:
        out = []
        for item in value:
            if item == "expansion":
                raise ValueError("the built-in pipeline has no query-expansion component to disable")
            if item not in _COMPONENT_ALIASES:
                raise ValueError(
                    f"unknown component {item!r}; use one of {', '.join(sorted(_COMPONENT_ALIASES))}"
                )
            out.append(_COMPONENT_ALIASES[item])
        return out


class ExperimentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "experiment"
    dataset: str
    seed: int = 42
    limit: int | None = None
    k: list[int] = Field(default_factory=lambda: [5, 10, 20])
    columns: list[str] = Field(default_factory=lambda: list(DEFAULT_COLUMNS))
    judge: str | None = Field(default=None, description="judge model spec; turns the judge metrics on")
    generator: str | None = Field(default=None, description="generator model spec for generation metrics")
    concurrency: int = 8
    baseline: bool = True
    pipeline: dict[str, Any] = Field(default_factory=dict)
    variants: list[Variant] = Field(default_factory=list)

    @field_validator("variants")
    @classmethod
    def _unique_names(cls, value: list[Variant]) -> list[Variant]:
        names = [v.name for v in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate variant name(s): {', '.join(dupes)}")
        return value

    def all_variants(self) -> list[Variant]:
        """The variants in run order: the BM25 baseline first."""
        variants = list(self.variants)
        if self.baseline:
            found = [v for v in variants if v.name == BASELINE_NAME]
            base = found[0] if found else Variant(name=BASELINE_NAME, mode="fulltext")
            variants = [base] + [v for v in variants if v is not base]
        if not variants:
            raise InputError("the experiment has no variants", source="variants")
        return variants


def load_experiment(path: str | Path) -> ExperimentSpec:
    """Read and validate an experiment file; errors name the file and the field."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(source)) from None
    from ragmeter.yamlfile import parse_yaml

    data = parse_yaml(text, source=str(source), what="reading an experiment file")
    if not isinstance(data, dict):
        raise InputError(
            "an experiment file must be a mapping (name, dataset, variants, ...)", source=str(source)
        )
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise InputError(f"field '{loc}': {err['msg']}", source=str(source)) from None


def variant_system_options(spec: ExperimentSpec, variant: Variant) -> tuple[str, dict[str, Any]]:
    """(mode, build_system options) of a variant: the experiment's pipeline defaults, then the variant's."""
    options = dict(spec.pipeline)
    mode = str(options.pop("mode", "hybrid"))
    if variant.mode is not None:
        mode = variant.mode
    disable = set(options.pop("disable", [])) | set(variant.disable)
    if spec.generator is None:
        disable.add("generation")
    options["disable"] = sorted(disable)
    for key in ("weights", "rrf_k", "depth", "reranker"):
        value = getattr(variant, key)
        if value is not None:
            options[key] = value
    if variant.embedding is not None:
        options["model"] = variant.embedding
    options.update(variant.options)
    return mode, options


class VariantResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variant: Variant
    run: EvalRunResult


class ExperimentResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec: ExperimentSpec
    results: list[VariantResult]

    def columns(self) -> list[str]:
        cols = list(self.spec.columns)
        if self.spec.judge:
            present = {m for r in self.results for m in r.run.aggregate}
            cols += [c for c in JUDGE_COLUMNS if c in present and c not in cols]
        return cols


RunFn = Callable[..., EvalRunResult]


def run_experiment(
    spec: ExperimentSpec,
    *,
    store: Any = None,
    dataset: EvalDataset | None = None,
    progress: bool = False,
    runner: RunFn | None = None,
    on_variant: Callable[[Variant, EvalRunResult], None] | None = None,
) -> ExperimentResult:
    """Run every variant (baseline first) through the runner; each is stored as a run when a store is used.

    ``store``: a Store, a URL, None (the default store) or False (nothing stored), as `run_evaluation`.
    """
    if runner is None:
        from ragmeter.runner import run_evaluation

        runner = run_evaluation
    if dataset is None:
        from ragmeter.runner import resolve_dataset

        dataset = resolve_dataset(spec.dataset, seed=spec.seed)
    variants = spec.all_variants()
    results = []
    for variant in variants:
        mode, options = variant_system_options(spec, variant)
        config = EvalConfig(
            dataset=spec.dataset,
            retrieval_top_k=sorted(set(spec.k)),
            evaluate_generation=spec.generator is not None,
            generator_model=spec.generator,
            use_llm_judge=spec.judge is not None,
            judge_model=spec.judge,
            seed=spec.seed,
            system="builtin",
            mode=mode,
            concurrency=spec.concurrency,
            limit=spec.limit,
            extra={"experiment": spec.name, "variant": variant.name, "system_options": options},
        )
        run = runner(
            dataset,
            "builtin",
            config,
            store=store,
            progress=progress,
            name=f"{spec.name}/{variant.name}",
            system_options={**options, "disable": set(options["disable"])},
        )
        results.append(VariantResult(variant=variant, run=run))
        if on_variant is not None:
            on_variant(variant, run)
    return ExperimentResult(spec=spec, results=results)


def _mean(run: EvalRunResult, metric: str) -> float | None:
    s = run.aggregate.get(metric)
    return s.mean if s is not None else None


def experiment_table(
    result: ExperimentResult, *, significance: bool = True, n_resamples: int = 10_000
) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows): one row per variant with each column's mean, the best per column flagged, and
    (against the first row, the baseline) the Holm-corrected permutation p-value per column."""
    columns = result.columns()
    rows: list[dict[str, Any]] = []
    comparisons: dict[str, Comparison] = {}
    if significance and len(result.results) > 1:
        from ragmeter.experiments.significance import compare_runs, per_query_values

        base = per_query_values(result.results[0].run)
        for r in result.results[1:]:
            comparisons[r.variant.name] = compare_runs(
                base, per_query_values(r.run), metrics=columns, seed=result.spec.seed, n_resamples=n_resamples
            )
    for r in result.results:
        cmp = comparisons.get(r.variant.name)
        rows.append(
            {
                "variant": r.variant.name,
                "run_id": r.run.run_id,
                "n_queries": r.run.n_queries,
                "values": {c: _mean(r.run, c) for c in columns},
                "p_holm": {c: cmp.get(c).p_holm for c in columns} if cmp is not None else {},
                "best": {},
            }
        )
    from ragmeter.report.export import LOWER_IS_BETTER

    for c in columns:
        present = [row["values"][c] for row in rows if row["values"][c] is not None]
        pick = min if c in LOWER_IS_BETTER else max
        top = pick(present) if present else None
        for row in rows:
            value = row["values"][c]
            row["best"][c] = top is not None and value is not None and abs(value - top) <= 1e-12
    return columns, rows


def format_markdown(columns: Sequence[str], rows: Sequence[dict[str, Any]], *, alpha: float = 0.05) -> str:
    """A Markdown table: best per column in bold; † where p(Holm) < alpha against the baseline row."""
    header = "| variant | " + " | ".join(columns) + " |"
    lines = [header, "|---|" + "---:|" * len(columns)]
    for row in rows:
        cells = []
        for c in columns:
            v = row["values"][c]
            text = "–" if v is None else f"{v:.4f}"
            p = row["p_holm"].get(c)
            if p is not None and p < alpha:
                text += "†"
            if row["best"][c]:
                text = f"**{text}**"
            cells.append(text)
        lines.append(f"| {row['variant']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
