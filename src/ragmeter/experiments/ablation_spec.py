"""Experiment (ablation grid) files: the spec models, loading and validating them before any variant runs.

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

from collections.abc import Sequence
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
from ragmeter.score.plan import planned_names as planned_names  # the plan owns it; name kept

if TYPE_CHECKING:
    from ragmeter.models import EvalDataset

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


def _computed_metrics(spec: ExperimentSpec) -> set[str]:
    """The metrics each variant's run computes (no `metrics` list: the defaults at the file's cut-offs)."""
    from ragmeter.models import EvalConfig
    from ragmeter.score.plan import plan_for

    generation = spec.generator is not None
    variant = EvalConfig(
        retrieval_top_k=spec.k, evaluate_generation=generation, use_llm_judge=spec.judge is not None
    )
    plan = plan_for(variant)
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
