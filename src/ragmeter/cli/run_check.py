"""The one validation step of `ragmeter run`: raw options -> typed groups (cli/run_options.py) -> EvalConfig
-> `ragmeter.run.validate`, once, before anything is stored or called. The result, a `CheckedRun`, holds
the Prepared run that `ragmeter.run.run_prepared` runs without checking it again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.cli.options import open_db
from ragmeter.cli.run_cost import CostOptions
from ragmeter.cli.run_generate import GenerateOptions
from ragmeter.cli.run_options import (
    GateOptions,
    JudgingOptions,
    OutputOptions,
    Params,
    SystemOptions,
)
from ragmeter.cli.run_resume import ResumeOptions
from ragmeter.cli.settings import RunSettings, apply_settings, field_origins
from ragmeter.errors import InputError

if TYPE_CHECKING:
    from ragmeter.models import EvalConfig
    from ragmeter.run.prepare import Prepared


@dataclass(frozen=True)
class RunFlags:
    """Every flag of `ragmeter run`, in its group, each checked once."""

    system: SystemOptions
    judging: JudgingOptions
    settings: RunSettings  # --set and the built-in pipeline's flags (cli/settings.py)
    gates: GateOptions
    output: OutputOptions
    resume: ResumeOptions
    generate: GenerateOptions
    db: str | None = None
    cost: CostOptions = field(default_factory=CostOptions)  # spend caps and --estimate (cli/run_cost.py)

    @classmethod
    def from_params(cls, p: Params) -> RunFlags:
        from ragmeter.systems.external import import_system_module

        import_system_module(p["system"])  # its metrics are known before --metrics and --fail-under
        gates = GateOptions.from_params(p)
        system = SystemOptions.from_params(p)
        output = OutputOptions.from_params(p, gates)
        judging = JudgingOptions.from_params(p)
        settings = RunSettings.from_params(p, judge=judging.client)
        return cls(
            system=system,
            judging=judging,
            settings=settings,
            gates=gates,
            output=output,
            resume=ResumeOptions.from_params(p, system, settings),
            generate=GenerateOptions.from_params(p),
            db=p["db"],
            cost=CostOptions.from_params(p),
        )


@dataclass(frozen=True)
class CheckedRun:
    """A `ragmeter run` invocation, validated: its flags, the open store and the Prepared run."""

    flags: RunFlags
    store: Any
    prepared: Prepared

    def run_options(self) -> dict[str, Any]:
        """The `ragmeter.run.RunOptions` of this run (the CLI writes the outputs itself, cli/run_outputs.py)."""
        flags = self.flags
        executor = flags.system.executor if flags.resume.run_id else None  # else the config's (same flag)
        return {
            "store": self.store,
            "name": flags.output.name,
            "progress": flags.output.progress,
            "retry_failed": flags.resume.retry_failed,
            "executor": executor,
            "write_outputs": False,
            "gates": dict(flags.gates.thresholds),  # the pass line of a repeated judge's flip share
            "flaky_tolerance": flags.gates.flaky_tolerance,
            **flags.cost.run_options(),
        }


def check_run(params: Params) -> CheckedRun:
    """Every flag checked in its group, the config built, the whole invocation validated: one InputError
    naming the flag, file or field on the first problem, and nothing stored."""
    flags = RunFlags.from_params(params)
    store = open_db(flags.db)
    if flags.resume.run_id:
        prepared = check_invocation(
            None,
            None,
            None,
            store=store,
            resume=flags.resume.run_id,
            system_options={},
            gates=flags.gates,
        )
        return CheckedRun(flags, store, prepared)
    config, origins = build_config(flags)
    options = flags.settings.pipeline
    if (
        flags.generate.generate
    ):  # only after the config, flags and settings were checked: a refusal stores nothing
        from ragmeter.cli.run_generate import check_generated_run, generate_if_empty

        gen, system = flags.generate, flags.system
        check_generated_run(config, flags.gates, options)
        generate_if_empty(store, system.collection, system.dataset, gen.writer, system.seed, gen.sample_size)
    prepared = check_invocation(
        config.dataset,
        config.system,
        config,
        store=store,
        resume=None,
        system_options=options,
        gates=flags.gates,
        option_flags=flags.settings.flags,
        origins=origins,
    )
    return CheckedRun(flags, store, prepared)


def build_config(flags: RunFlags) -> tuple[EvalConfig, dict[str, str]]:
    """The run's EvalConfig (the config file, then --set, then the flags; the settings on top), and where
    each field was set, for error lines."""
    from ragmeter.run.config import load_config

    given = {**flags.system.config_fields(), "output": flags.output.output}
    given = {k: v for k, v in given.items() if v is not None}
    overrides = {**flags.settings.sets, **given, **flags.judging.config_fields()}
    config = apply_settings(load_config(flags.system.config_path, overrides), flags.settings)
    if flags.judging.nuggets:  # the set goes with the run (its hash is added when the run is prepared)
        config = config.model_copy(update={"nuggets": flags.judging.nuggets})
    if flags.judging.escalation:  # a cheap judge escalating to a strong one, with its calibration
        config = config.model_copy(update={"escalation": flags.judging.escalation})
    if flags.gates.sequential:  # the gates and alpha go with the run (a resume reads them from there)
        config = config.model_copy(update={"sequential": flags.gates.sequential_gates()})
    return config, field_origins(given, flags.settings.sets, flags.system.config_path)


def check_invocation(
    dataset: str | None,
    system: str | None,
    config: EvalConfig | None,
    *,
    store: Any,
    resume: str | None,
    system_options: dict[str, Any],
    gates: GateOptions,
    option_flags: dict[str, str] | None = None,
    origins: dict[str, str] | None = None,
) -> Prepared:
    """The whole invocation checked before anything is stored or called (`ragmeter.run.prepare_run`), and
    each --fail-under metric one that this run computes (`GateOptions.check_planned`). `origins` maps a
    config field to where it was set (`--mode`, `--set mode`, `run.yaml: field 'mode'`), for the error line."""
    from ragmeter.run.api import RunOptions, prepare_run

    opts = RunOptions(store=store, resume=resume, system_options=system_options)
    try:
        prepared = prepare_run(dataset, system, config, opts, store, fail_under=list(gates.thresholds))
    except InputError as exc:
        if config is not None and exc.source == config.system:  # the system reference itself
            where = f"{config.system}:{exc.line}" if exc.line is not None else config.system
            raise InputError(f"{where}: {exc.reason}", source="--system") from None
        for key, flag in (option_flags or {}).items():  # a pipeline option: name the flag that set it
            if exc.source == "--system" and key in exc.reason:
                raise InputError(exc.reason, source=flag) from None
        if exc.source in (origins or {}):  # a config field: the flag, --set or the file that set it
            raise InputError(exc.reason, source=(origins or {})[exc.source]) from None
        raise
    if system_options and prepared.record.system.kind != "builtin":
        flag = (option_flags or {}).get(next(iter(system_options)), "--set pipeline.*")
        raise InputError("sets an option of the built-in pipeline, but --system is not builtin", source=flag)
    gates.check_planned(prepared.plan, evaluate_generation=prepared.config.evaluate_generation)
    return prepared
