"""`ragmeter nuggets create|show|validate|import|export`: nugget sets, the qrels of answers (docs/nuggets.md)."""

from __future__ import annotations

import click

from ragmeter.cli.options import db_option, echo_json

FORMAT = click.Choice(["ragmeter", "nuggetizer", "trec"])


@click.group("nuggets")
def nuggets() -> None:
    """Nugget sets: per query, the facts a good answer contains (vital or okay)."""


def _read(path: str, fmt: str | None) -> object:
    from ragmeter.nuggets import read_nuggets

    return read_nuggets(path, fmt)  # type: ignore[arg-type]


@nuggets.command("validate")
@click.argument("path", metavar="FILE")
@click.option("--format", "fmt", type=FORMAT, help="The file's layout (default: from its first line).")
def validate_command(path: str, fmt: str | None) -> None:
    """Check a nugget file; print its counts and hash (its version)."""
    from ragmeter.nuggets import NuggetSet

    got = _read(path, fmt)
    assert isinstance(got, NuggetSet)
    c = got.counts()
    click.echo(
        f"{path}: valid, {c['queries']} queries, {c['nuggets']} nuggets ({c['vital']} vital, {c['okay']} okay), "
        f"hash {got.hash}"
    )


@nuggets.command("show")
@click.argument("path", metavar="FILE")
@click.option("--query", "query_id", help="Only this query.")
@click.option("--format", "fmt", type=FORMAT, help="The file's layout (default: from its first line).")
@click.option("--json", "as_json", is_flag=True, help="JSON lines instead of the table.")
def show_command(path: str, query_id: str | None, fmt: str | None, as_json: bool) -> None:
    """Print a nugget set, query by query."""
    from ragmeter.errors import InputError
    from ragmeter.nuggets import NuggetSet

    got = _read(path, fmt)
    assert isinstance(got, NuggetSet)
    chosen = [q for q in got if query_id is None or q.query_id == query_id]
    if query_id is not None and not chosen:
        raise InputError(f"no query {query_id!r} in the set", source="--query")
    for q in chosen:
        if as_json:
            echo_json(q.model_dump(mode="json", exclude_none=True))
            continue
        click.echo(f"{q.query_id}  {q.query or ''}".rstrip())
        for n in q.nuggets:
            click.echo(f"  {n.id:>4}  {n.importance:<5}  {n.text}")
    click.echo(f"hash {got.hash}", err=True)


def _convert(path: str, src: str | None, output: str, dst: str) -> None:
    from ragmeter.nuggets import NuggetSet, write_nuggets
    from ragmeter.safety import check_output_path

    check_output_path(output, source="--output")
    got = _read(path, src)
    assert isinstance(got, NuggetSet)
    write_nuggets(got, output, dst)  # type: ignore[arg-type]
    click.echo(f"wrote {len(got)} queries ({dst}) to {output}, hash {got.hash}")


@nuggets.command("import")
@click.argument("path", metavar="FILE")
@click.option("--from", "src", type=FORMAT, help="The file's layout (default: from its first line).")
@click.option("--output", "-o", required=True, metavar="FILE", help="Where the set goes (ragmeter JSONL).")
def import_command(path: str, src: str | None, output: str) -> None:
    """Read a nuggetizer JSONL or tab-separated (trec) nugget file into ragmeter's JSONL."""
    _convert(path, src, output, "ragmeter")


@nuggets.command("export")
@click.argument("path", metavar="FILE")
@click.option("--to", "dst", type=FORMAT, default="ragmeter", show_default=True, help="The layout to write.")
@click.option("--output", "-o", required=True, metavar="FILE", help="Where the set goes.")
@click.option(
    "--version",
    "version",
    type=click.IntRange(min=1),
    help="A version people saved in `ragmeter view --annotate` of the set FILE (read from the store).",
)
@click.option("--history", is_flag=True, help="With --version: print the set's versions and changes (JSON).")
@db_option
def export_command(
    path: str, dst: str, output: str, version: int | None, history: bool, db: str | None
) -> None:
    """Write a nugget set in ragmeter's or nuggetizer's JSONL or the tab-separated (trec) layout; with
    --version, the version V of FILE's set as people edited it (version 1 is the file as first edited)."""
    if version is None:
        _convert(path, None, output, dst)
        return
    from ragmeter.cli.options import open_db
    from ragmeter.nuggets import write_nuggets
    from ragmeter.safety import check_output_path
    from ragmeter.validity.nugget_versions import history as set_history
    from ragmeter.validity.nugget_versions import set_name, version_of

    check_output_path(output, source="--output")
    name = set_name(path)
    with open_db(db) as store:
        got = version_of(store, name, version)
        log = set_history(store, name) if history else None
    write_nuggets(got, output, dst)  # type: ignore[arg-type]
    click.echo(f"wrote version {version} of {name}: {len(got)} queries ({dst}) to {output}, hash {got.hash}")
    if log is not None:
        echo_json(log)


@nuggets.command("create")
@click.option("--dataset", "-d", required=True, help="A named dataset or a dataset file.")
@click.option(
    "--runs",
    "run_ids",
    multiple=True,
    metavar="RUN",
    help="Stored runs whose pooled top-K are used without qrels.",
)
@click.option("--depth", type=int, default=20, show_default=True, help="Pool depth K of --runs.")
@click.option("--model", required=True, metavar="SPEC", help="The LLM that writes and labels the nuggets.")
@click.option(
    "--prompt", "style", type=click.Choice(["nuggetizer", "ours"]), default="nuggetizer", show_default=True
)
@click.option(
    "--max-nuggets",
    "keep",
    type=int,
    default=20,
    show_default=True,
    help="Keep N, vital first (TREC 2024: 20; nuggetizer 0.0.5: 30).",
)
@click.option("--limit", type=int, help="Only the first N queries.")
@click.option("--output", "-o", required=True, metavar="FILE", help="Where the set goes (ragmeter JSONL).")
@db_option
def create_command(
    dataset: str,
    run_ids: tuple[str, ...],
    depth: int,
    model: str,
    style: str,
    keep: int,
    limit: int | None,
    output: str,
    db: str | None,
) -> None:
    """Make a nugget set with an LLM as the AutoNuggetizer does (windows of 10 passages, at most 30 nuggets,
    importance in batches of 10, keep N vital first), from each query's relevant documents or the runs' pool."""
    import asyncio

    from ragmeter.datasets.resolve import resolve_dataset
    from ragmeter.errors import InputError
    from ragmeter.judges.nugget_create import create_set
    from ragmeter.llm import from_spec
    from ragmeter.nuggets import NuggetSet, write_nuggets
    from ragmeter.run.rebuild import check_llm_spec
    from ragmeter.safety import check_output_path

    if keep < 1 or depth < 1:
        raise InputError("must be at least 1", source="--max-nuggets" if keep < 1 else "--depth")
    check_output_path(output, source="--output")
    check_llm_spec(model, source="--model")
    runs = []
    if run_ids:
        from ragmeter.cli.options import open_db

        with open_db(db) as store:
            runs = [store.get_run(r) for r in run_ids]
    data = resolve_dataset(dataset, seed=42, store=None)
    if limit is not None:
        data = data.model_copy(update={"queries": data.queries[:limit]})

    async def go() -> tuple[list, int, list[str]]:  # type: ignore[type-arg]
        llm = from_spec(model)
        try:
            return await create_set(llm, data, runs=runs, depth=depth, style=style, keep=keep, model=model)
        finally:
            await llm.aclose()

    made, calls, flags = asyncio.run(go())
    if not made:
        raise InputError(
            "no query has relevant documents or pooled passages to make nuggets from", source="--dataset"
        )
    got = NuggetSet({q.query_id: q for q in made})
    write_nuggets(got, output)
    for flag in flags:
        click.echo(f"note: {flag}", err=True)
    click.echo(f"wrote nuggets of {len(got)} queries to {output} ({calls} LLM calls), hash {got.hash}")
