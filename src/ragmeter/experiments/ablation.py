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

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from ragmeter import metrics
from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalDataset, EvalRunResult

if TYPE_CHECKING:
    from ragmeter.experiments.render import ExperimentTable
    from ragmeter.experiments.significance import Comparison
    from ragmeter.score.plan import MetricPlan

# Without `columns`, an experiment shows recall at each of its cut-offs, then these (see default_columns).
DEFAULT_RANK_COLUMNS = ("mrr", "map")
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
    columns: list[str] = Field(default_factory=list, description="default: default_columns(k)")
    judge: str | None = Field(default=None, description="judge model spec; turns the judge metrics on")
    generator: str | None = Field(default=None, description="generator model spec for generation metrics")
    concurrency: int = 8
    baseline: bool = True
    pipeline: dict[str, Any] = Field(default_factory=dict)
    variants: list[Variant] = Field(default_factory=list)
    # where the spec came from (the file), named in errors
    _source: str = PrivateAttr(default="experiment")

    @property
    def source(self) -> str:
        return self._source

    @source.setter
    def source(self, value: str) -> None:
        self._source = value

    @field_validator("k")
    @classmethod
    def _cutoffs(cls, value: list[int]) -> list[int]:
        bad = [k for k in value if k < 1]
        if bad or not value:
            raise ValueError(f"cut-offs must be integers >= 1, got {bad[0] if bad else 'none'}")
        return value

    @model_validator(mode="after")
    def _columns_follow_cutoffs(self) -> ExperimentSpec:
        if not self.columns:
            self.columns = default_columns(self.k)
        return self

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


def default_columns(k: Sequence[int]) -> list[str]:
    """The columns of a file without `columns`: recall at each cut-off, MRR, MAP and nDCG@10 (nDCG at the
    largest cut-off when 10 is not one), so every default is a metric the runs compute."""
    cutoffs = sorted(set(k))
    ndcg_at = 10 if 10 in cutoffs else cutoffs[-1]
    return [*(f"recall@{c}" for c in cutoffs), *DEFAULT_RANK_COLUMNS, f"ndcg@{ndcg_at}"]


def load_experiment(path: str | Path) -> ExperimentSpec:
    """Read and validate an experiment file; errors name the file and the field."""
    source = Path(path)
    from ragmeter.yamlfile import parse_yaml, read_text

    text = read_text(source)  # unreadable, binary or non-UTF-8: an InputError naming file and line

    data = parse_yaml(text, source=str(source), what="reading an experiment file")
    if not isinstance(data, dict):
        raise InputError(
            "an experiment file must be a mapping (name, dataset, variants, ...)", source=str(source)
        )
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise InputError(f"field '{loc}': {err['msg']}", source=str(source)) from None
    spec.source = str(source)
    validate_experiment(spec)
    return spec


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


def validate_experiment(spec: ExperimentSpec, dataset: EvalDataset | None = None) -> None:
    """Check the whole experiment before its first variant runs: every column is a metric the runs
    compute, the judge and generator specs are valid and (given the dataset) every variant's system can be
    built. The first problem is an InputError naming the file and the field."""
    source = spec.source
    _check_columns(spec, source)
    from ragmeter.run.rebuild import check_llm_spec

    for field in ("judge", "generator"):
        value = getattr(spec, field)
        if value is not None:
            try:
                check_llm_spec(value, source=source)
            except InputError as exc:
                raise InputError(f"field '{field}': {exc.reason}", source=source) from None
    if dataset is not None:
        for variant in spec.all_variants():
            _check_variant(spec, variant, dataset)


def planned_names(plan: MetricPlan, *, evaluate_generation: bool) -> set[str]:
    """The metric names a run with this plan produces (lexical ones only when it generates answers)."""
    names = {*plan.retrieval, *plan.judges, *plan.custom}
    if plan.total_score:  # and the grade summary derived from it (pass rates, averages: the registry's)
        names.add("total_score")
        names |= {s.name for s in metrics.specs() if s.stage == "summary" and s.family == "judge"}
    if plan.semantic:
        names.add("sbert_similarity")
    if evaluate_generation:
        names |= set(plan.lexical or [s.name for s in metrics.specs() if s.family == "lexical"])
    return names


def _computed_metrics(spec: ExperimentSpec) -> set[str]:
    """The metrics each variant's run computes (no `metrics` list: the defaults at the file's cut-offs)."""
    from ragmeter.score.plan import plan_metrics

    generation = spec.generator is not None
    plan = plan_metrics(None, spec.k, evaluate_generation=generation, judged=spec.judge is not None)
    return planned_names(plan, evaluate_generation=generation)


def _check_columns(spec: ExperimentSpec, source: str) -> None:
    computed = _computed_metrics(spec)
    for i, column in enumerate(spec.columns):
        where = f"field 'columns.{i}'"
        found = metrics.lookup(column)
        if found is None or found.parameters:
            raise InputError(
                f"{where}: unknown metric {column!r}; see `ragmeter metrics list`", source=source
            )
        if found.name in computed:
            continue
        if found.family == "judge" and spec.judge is None:
            why = "a judge metric needs `judge: MODEL`"
        elif found.family in ("lexical", "semantic") and spec.generator is None:
            why = "an answer metric needs `generator: MODEL`"
        elif found.family == "retrieval":
            why = f"the runs compute {', '.join(sorted(n for n in computed if metrics.family_of(n) == 'retrieval'))} (k: {spec.k})"
        else:
            why = f"the runs do not compute it ({found.family})"
        raise InputError(f"{where}: {column!r} is not computed by this experiment: {why}", source=source)


def _check_variant(spec: ExperimentSpec, variant: Variant, dataset: EvalDataset) -> None:
    from ragmeter.records import reference_ref
    from ragmeter.run.rebuild import check_system

    where = f"variants.{spec.variants.index(variant)}" if variant in spec.variants else "baseline"
    mode, options = variant_system_options(spec, variant)
    try:
        check_system(reference_ref("builtin", mode=mode, namespace=None, options=options), dataset)
    except InputError as exc:
        raise InputError(f"field '{where}' ({variant.name}): {exc.reason}", source=spec.source) from None


class VariantResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variant: Variant
    run: EvalRunResult


class ExperimentResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec: ExperimentSpec
    results: list[VariantResult]

    def columns(self) -> list[str]:
        """The file's columns, then (with a judge) every judge metric of the registry the runs hold."""
        cols = list(self.spec.columns)
        if self.spec.judge:
            present = {m for r in self.results for m in r.run.aggregate}
            judged = [m for m in present if metrics.family_of(m) == "judge" and m not in cols]
            cols += sorted(judged, key=metrics.sort_key)
        return cols

    def table(
        self, *, significance: bool = True, n_resamples: int = 10_000, allow_version_mismatch: bool = False
    ) -> ExperimentTable:
        """The result table, which renders itself: `.to_table()`, `.to_markdown()`, `.to_json()`."""
        from ragmeter.experiments.render import ExperimentTable

        columns, rows = experiment_table(
            self,
            significance=significance,
            n_resamples=n_resamples,
            allow_version_mismatch=allow_version_mismatch,
        )
        title = f"{self.spec.name} on {self.spec.dataset} (seed {self.spec.seed})"
        return ExperimentTable(title, columns, rows)

    def to_table(self, **options: Any) -> Any:
        return self.table(**options).to_table()

    def to_markdown(self, **options: Any) -> str:
        return self.table(**options).to_markdown()

    def to_json(self, **options: Any) -> str:
        return self.table(**options).to_json(experiment=self.spec.name)


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
        from ragmeter.run import run_evaluation

        runner = run_evaluation
    if dataset is None:
        from ragmeter.run import resolve_dataset

        dataset = resolve_dataset(spec.dataset, seed=spec.seed)
    validate_experiment(spec, dataset)
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
    result: ExperimentResult,
    *,
    significance: bool = True,
    n_resamples: int = 10_000,
    allow_version_mismatch: bool = False,
) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows): one row per variant with each column's mean, the best per column flagged, and
    (against the first row, the baseline) the permutation p-value per column, Holm-corrected over every
    metric x variant of the grid."""
    columns = result.columns()
    rows: list[dict[str, Any]] = []
    comparisons: dict[str, Comparison] = {}
    if significance and len(result.results) > 1:
        from ragmeter.experiments.significance import compare_runs, per_query_values
        from ragmeter.experiments.version_guard import check_comparable

        check_comparable(
            [r.run for r in result.results],
            allow=allow_version_mismatch,
            metrics=columns,
            source="experiment",
        )

        base = per_query_values(result.results[0].run)
        for r in result.results[1:]:
            comparisons[r.variant.name] = compare_runs(
                base, per_query_values(r.run), metrics=columns, seed=result.spec.seed, n_resamples=n_resamples
            )
        _holm_over_grid(list(comparisons.values()))
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
    for c in columns:
        present = [row["values"][c] for row in rows if row["values"][c] is not None]
        pick = max if metrics.higher_is_better(c) else min
        top = pick(present) if present else None
        for row in rows:
            value = row["values"][c]
            row["best"][c] = top is not None and value is not None and abs(value - top) <= 1e-12
    return columns, rows


def _holm_over_grid(comparisons: Sequence[Comparison]) -> None:
    """Holm over metrics x variants: a grid of V variants and M metrics tests V x M hypotheses at once."""
    from ragmeter.experiments.significance import holm

    cells = [m for c in comparisons for m in c.metrics]
    for cell, p in zip(cells, holm([m.p_perm for m in cells]), strict=True):
        cell.p_holm = p
    for cell, p in zip(cells, holm([m.p_t for m in cells]), strict=True):
        cell.p_t_holm = p


def format_markdown(columns: Sequence[str], rows: Sequence[dict[str, Any]], *, alpha: float = 0.05) -> str:
    """A Markdown table: best per column in bold; † where p(Holm) < alpha against the baseline row
    (`ExperimentResult.table(...).to_markdown()` renders the same)."""
    from ragmeter.experiments.render import ExperimentTable

    return ExperimentTable("", list(columns), list(rows), alpha=alpha).to_markdown()
