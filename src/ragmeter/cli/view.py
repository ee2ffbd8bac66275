"""`ragmeter view`: browse the store in a local web app, or write chosen runs as static pages."""

from __future__ import annotations

import re
import secrets
from urllib.parse import urlencode

import click

from ragmeter.cli.options import db_option
from ragmeter.errors import InputError, MissingExtraError


def _bind(host: str, port: int) -> object:
    """A listening socket, so that a port in use is one line (before uvicorn starts)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", source="--port") from None
    sock.listen(128)
    return sock


TOKEN_RE = re.compile(r"[A-Za-z0-9._~-]{8,512}")


def _check_host_name(name: str) -> None:
    from ragmeter.view.guard import allowed_name

    if allowed_name(name) is None:
        raise InputError(f"not a host name: {name[:60]!r}", source="--allow-host")


def _url(host: str, port: int, token: str | None) -> str:
    """The address to open: a wildcard bind is opened as 127.0.0.1 here; the token URL sets the cookie."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + ("" if token is None else "?" + urlencode({"token": token}))


@click.command("view")
@db_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (this machine only by default).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port (0: any free one)."
)
@click.option(
    "--bundle",
    "bundle",
    metavar="DIR",
    default=None,
    help="Write the --run runs as static pages into DIR instead of serving.",
)
@click.option("--run", "run_ids", multiple=True, metavar="ID", help="A run for --bundle (repeat for more).")
@click.option(
    "--annotate", is_flag=True, help="Label answers and documents (this mode may migrate the store)."
)
@click.option("--annotator", metavar="NAME", default=None, help="Who labels (required with --annotate).")
@click.option(
    "--grades", metavar="LO-HI", default=None, help="Relevance grades (default: the dataset's qrels)."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the labelling queue's order.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests for this Host name, e.g. behind a proxy (repeatable).",
)
@click.option(
    "--token",
    envvar="RAGMETER_VIEW_TOKEN",
    default=None,
    metavar="TOKEN",
    help="Access token asked on every request (default beyond loopback: a new one, printed once; "
    "env RAGMETER_VIEW_TOKEN).",
)
def view_command(
    db: str | None,
    host: str,
    port: int,
    bundle: str | None,
    run_ids: tuple[str, ...],
    annotate: bool,
    annotator: str | None,
    grades: str | None,
    seed: int,
    allow_hosts: tuple[str, ...],
    token: str | None,
) -> None:
    """Browse runs, queries, judges and comparisons in a local web app (read-only unless --annotate)."""
    try:
        import uvicorn

        from ragmeter.view.app import Viewer, create_app
    except ImportError as exc:
        raise MissingExtraError("view", "ragmeter view") from exc
    from ragmeter.store.pages import open_store_readonly

    if bundle is None and run_ids:
        raise InputError("--run goes with --bundle DIR", source="--run")
    if annotate and not (annotator or "").strip():
        raise InputError("name who labels: --annotate --annotator NAME", source="--annotator")
    if annotate and bundle is not None:
        raise InputError("--annotate serves pages; it does not go with --bundle", source="--annotate")
    if annotate:
        from ragmeter.cli.options import open_db
        from ragmeter.validity.human_labels import parse_grades

        scale = parse_grades(grades)
        store = open_db(db)  # labelling writes: the store is created or migrated as any writer does
    else:
        store = open_store_readonly(db)
    if bundle is not None:
        if not run_ids:
            raise InputError("name the runs to bundle with --run ID (repeatable)", source="--bundle")
        from ragmeter.safety import check_output_path
        from ragmeter.view.bundle import write_bundle

        check_output_path(bundle + "/index.html", source="--bundle")  # the folder is made once runs resolve
        with store:
            ids = [store.resolve_run_id(r) for r in run_ids]
            pages = write_bundle(store, ids, bundle)
        click.echo(f"wrote {len(pages)} pages; open {pages[0].resolve().as_uri()}")
        return
    from ragmeter.view.guard import Guard, is_loopback

    for name in allow_hosts:
        _check_host_name(name)
    if token is not None and not TOKEN_RE.fullmatch(token):
        raise InputError("--token: 8 or more of A-Z a-z 0-9 . _ ~ -", source="--token")
    if not is_loopback(host):
        token = token or secrets.token_urlsafe(24)
        who = "read the store" + (f" and write labels as {annotator}" if annotate else "")
        click.echo(
            f"ragmeter: warning: listening on {host}: anyone who can reach this address and has the token can "
            f"{who}; the token travels unencrypted (plain HTTP) unless a TLS proxy is in front",
            err=True,
        )
    guard = Guard.for_bind(host, allow=allow_hosts, token=token)
    sock = _bind(host, port)
    if annotate:
        from ragmeter.view.annotate import AnnotatingViewer, annotate_routes

        labeller = AnnotatingViewer(store, annotator=(annotator or "").strip(), grades=scale, seed=seed)
        app = create_app(labeller, extra_routes=annotate_routes(labeller), guard=guard)
    else:
        app = create_app(Viewer(store), guard=guard)
    bound = sock.getsockname()[1]  # type: ignore[attr-defined]
    click.echo(f"ragmeter view: {_url(host, bound, token)}  (store {store.url}; Ctrl-C stops)")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])  # type: ignore[list-item]
    finally:
        store.close()
