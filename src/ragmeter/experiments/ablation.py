"""Ablation grids: run variants of the built-in pipeline on one dataset with one seed, tabulate them.

The experiment file format, its models and its validation live in ``ragmeter.experiments.ablation_spec``
(re-exported here); this module runs the variants, builds the table and its significance marks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ragmeter import metrics
from ragmeter.experiments.ablation_spec import (
    BASELINE_NAME as BASELINE_NAME,
)
from ragmeter.experiments.ablation_spec import (
    DEFAULT_RANK_COLUMNS as DEFAULT_RANK_COLUMNS,
)
from ragmeter.experiments.ablation_spec import (
    ExperimentSpec as ExperimentSpec,
)
from ragmeter.experiments.ablation_spec import (
    Variant as Variant,
)
from ragmeter.experiments.ablation_spec import (
    default_columns as default_columns,
)
from ragmeter.experiments.ablation_spec import (
    load_experiment as load_experiment,
)
from ragmeter.experiments.ablation_spec import (
    planned_names as planned_names,
)
from ragmeter.experiments.ablation_spec import (
    validate_experiment as validate_experiment,
)
from ragmeter.experiments.ablation_spec import (
    variant_system_options as variant_system_options,
)
from ragmeter.models import EvalConfig, EvalDataset, EvalRunResult

if TYPE_CHECKING:
    from ragmeter.experiments.render import ExperimentTable
    from ragmeter.experiments.significance import Comparison


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
        from ragmeter.datasets.resolve import resolve_dataset

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
