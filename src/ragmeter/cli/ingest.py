"""`ragmeter ingest` and `ragmeter testcases`: a corpus into a store collection, and its test cases."""

from __future__ import annotations

import click

from ragmeter.cli.options import console, db_option, echo_json, format_option, open_db
from ragmeter.datasets.ingest import ingest_documents, read_documents
from ragmeter.errors import InputError
from ragmeter.safety import printable


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--collection", "-c", required=True, help="Collection to add the documents to (created if new)."
)
@click.option("--chunk-size", default=200, show_default=True, help="Words per chunk.")
@click.option("--chunk-overlap", default=40, show_default=True, help="Words shared by consecutive chunks.")
@click.option("--test-cases", "with_cases", is_flag=True, help="Also add a dataset's queries as test cases.")
@db_option
def ingest_command(
    paths: tuple[str, ...],
    collection: str,
    chunk_size: int,
    chunk_overlap: int,
    with_cases: bool,
    db: str | None,
) -> None:
    """Ingest documents into the store: text files, folders, JSONL corpora or a dataset's corpus.

    Documents are chunked as the built-in pipeline chunks them (ids DOC#N). A document id already in
    the collection is replaced. With --test-cases, a dataset's queries become test cases whose relevant
    chunks are the chunks of their relevant documents.
    """
    docs, dataset = read_documents(paths)
    with open_db(db) as store:
        n_docs, n_chunks = ingest_documents(
            store,
            collection,
            docs,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            source=", ".join(paths),
        )
        click.echo(
            f"ingested {n_docs} documents ({n_chunks} chunks) into collection {collection!r} of {store.url}"
        )
        if with_cases:
            if dataset is None:
                raise InputError(
                    "--test-cases needs a dataset (with queries), not bare documents", source=paths[0]
                )
            have = {c.query_id for c in store.test_cases(collection)}
            chunk_ids: dict[str, list[str]] = {}
            for c in store.chunks(collection):
                chunk_ids.setdefault(str(c.metadata.get("document")), []).append(c.doc_id)
            added = 0
            for q in dataset.queries:
                if q.query_id in have:
                    continue
                relevant = [cid for d in q.relevant_doc_ids for cid in chunk_ids.get(d, [])]
                store.add_test_case(
                    collection,
                    q.question,
                    case_id=q.query_id,
                    ground_truth_answer=q.ground_truth_answer,
                    relevant_chunks=relevant,
                    metadata={"dataset": dataset.name},
                )
                added += 1
            click.echo(f"added {added} test cases (skipped {len(dataset.queries) - added} already there)")


@click.group("testcases")
def testcases() -> None:
    """Manual test cases of a collection: questions, ground-truth answers and relevant chunks."""


@testcases.command("add")
@click.option("--collection", "-c", required=True)
@click.option("--question", "-q", required=True)
@click.option("--answer", "-a", help="Ground-truth answer.")
@click.option("--chunk", "chunks", multiple=True, metavar="CHUNK_ID", help="A relevant chunk (repeatable).")
@click.option("--id", "case_id", help="Test case id (default: generated).")
@click.option("--source", type=click.Choice(["manual", "synthetic"]), default="manual", show_default=True)
@db_option
def add_command(
    collection: str,
    question: str,
    answer: str | None,
    chunks: tuple[str, ...],
    case_id: str | None,
    source: str,
    db: str | None,
) -> None:
    """Add a test case to a collection."""
    with open_db(db) as store:
        cid = store.add_test_case(
            collection,
            question,
            case_id=case_id,
            ground_truth_answer=answer,
            relevant_chunks=chunks,
            source=source,
        )
    click.echo(printable(f"added test case {cid} to {collection!r}"))


@testcases.command("list")
@click.option("--collection", "-c", required=True)
@format_option("table", "json")
@db_option
def list_cases_command(collection: str, fmt: str, db: str | None) -> None:
    """The test cases of a collection."""
    with open_db(db) as store:
        cases = store.test_cases(collection)
    if fmt == "json":
        echo_json([c.model_dump(mode="json") for c in cases])
        return
    from rich.table import Table

    table = Table(title=f"test cases of {collection!r}", title_justify="left")
    for col in ("id", "source", "question", "ground truth", "relevant chunks"):
        table.add_column(col, overflow="fold")
    from ragmeter.safety import console_text as t  # data: secrets, control characters, markup escaped

    for c in cases:
        table.add_row(
            t(c.query_id),
            t(c.metadata.get("source", "")),
            t(c.question),
            t(c.ground_truth_answer or ""),
            t(" ".join(c.relevant_doc_ids)),
        )
    console().print(table)


@testcases.command("ground-truth")
@click.argument("case_id")
@click.option("--collection", "-c", required=True)
@click.option("--answer", "-a", help="Set the ground-truth answer.")
@click.option("--chunk", "chunks", multiple=True, metavar="CHUNK_ID", help="Replace the relevant chunks.")
@click.option("--add-chunk", "add_chunks", multiple=True, metavar="CHUNK_ID", help="Add a relevant chunk.")
@db_option
def ground_truth_command(
    case_id: str,
    collection: str,
    answer: str | None,
    chunks: tuple[str, ...],
    add_chunks: tuple[str, ...],
    db: str | None,
) -> None:
    """Set a test case's ground-truth answer and relevant chunks."""
    if answer is None and not chunks and not add_chunks:
        raise InputError("give --answer, --chunk or --add-chunk", source="testcases ground-truth")
    with open_db(db) as store:
        case = store.set_ground_truth(
            collection,
            case_id,
            answer=answer,
            relevant_chunks=list(chunks) if chunks else None,
            add_chunks=add_chunks,
        )
    click.echo(
        printable(
            f"{case.query_id}: answer={case.ground_truth_answer!r} "
            f"relevant chunks={' '.join(case.relevant_doc_ids) or '-'}"
        )
    )
