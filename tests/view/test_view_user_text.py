"""User text is never markup: run names that matplotlib would read as TeX (`$x^$`) and right-to-left overrides
render on every page (200) and plot as typed; numeric parameters are bounded; "agree with the judge" is
offered only where there is a judge value; bundles carry a CSP <meta> and no absolute path of this machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_view_cli import ragmeter
from view_store import add_run

from ragmeter.store import open_store
from ragmeter.store.pages import open_store_readonly
from ragmeter.view.annotate import AnnotatingViewer, annotate_routes
from ragmeter.view.app import Viewer, create_app

pytest.importorskip("starlette")
from starlette.testclient import TestClient

DOLLAR = "$x^$"
RTL = "\u202eevil name"  # RIGHT-TO-LEFT OVERRIDE, never closed
BASE = "http://127.0.0.1"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    path = str(tmp_path_factory.mktemp("usertext") / "store.db")
    with open_store(path) as store:
        ids = {
            "dollar": add_run(store, DOLLAR, 8, seed=1),
            "rtl": add_run(store, RTL, 8, seed=2, boost=0.2),
            "both": add_run(store, f"{DOLLAR} {RTL} $\\frac{{a}}$", 8, seed=3, boost=0.1),
        }
    return path, ids


def pages(ids: dict[str, str]) -> list[str]:
    out = ["/"]
    for rid in ids.values():
        out += [f"/runs/{rid}", f"/runs/{rid}/queries", f"/runs/{rid}/query?id=q00001"]
    a, b, c = ids.values()
    out += [f"/compare?run={a}&run={b}", f"/compare?run={b}&run={c}&run={a}", f"/compare?run={c}&run={a}"]
    return out


def test_every_page_answers_200_with_tex_and_rtl_names(stored: tuple[str, dict[str, str]]) -> None:
    url, ids = stored
    client = TestClient(create_app(Viewer(open_store_readonly(url))), base_url=BASE)
    for path in pages(ids):
        r = client.get(path)
        assert r.status_code == 200, (path, r.text[-500:])
    compare = client.get(f"/compare?run={ids['dollar']}&run={ids['rtl']}").text
    assert 'data-plot="forest"' in compare  # the plot that failed to draw is there
    run_page = client.get(f"/runs/{ids['rtl']}").text
    assert f"<bdi>{RTL}</bdi> · completed" in run_page


def test_plots_draw_names_as_typed(stored: tuple[str, dict[str, str]]) -> None:
    import io

    from matplotlib.text import Text

    from ragmeter.report.forest import compare_with_first
    from ragmeter.report.plots import report_figures

    url, ids = stored
    with open_store(url, sweep=False) as store:
        runs = [store.get_run(ids["dollar"]), store.get_run(ids["both"])]
    plots = report_figures(runs, compare_with_first(runs, n_resamples=200))
    assert plots[0].name == "forest"
    for plot in plots:
        plot.figure.savefig(io.BytesIO(), format="png")  # a mathtext parse error raised here before
        texts = [t for t in plot.figure.findobj(Text) if "$" in t.get_text()]
        assert all(not t.get_parse_math() for t in texts)
    forest = plots[0].figure
    assert any(DOLLAR in t.get_text() for t in forest.findobj(Text))


def test_agree_only_where_the_judge_has_a_value(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "a.db")) as store:
        run_id = add_run(store, "a", 5)
        viewer = AnnotatingViewer(store, annotator="ann")
        client = TestClient(create_app(viewer, extra_routes=annotate_routes(viewer)), base_url=BASE)
        null_page = client.get(f"/runs/{run_id}/query?id=q00003").text  # factuality is null (judge timed out)
        valued = client.get(f"/runs/{run_id}/query?id=q00002").text
    assert 'class="agree"' not in null_page and "no judge value to agree with" in null_page
    assert (
        'form method="post" action="/labels" class="label-form answer-label"' in null_page
    )  # still labelable
    m = re.search(r'name="value" value="([0-9.]+)" class="agree"', valued)
    assert m is not None and float(m.group(1)) >= 0


def test_bundle_has_a_csp_meta_and_no_absolute_path(tmp_path: Path) -> None:
    db = str(tmp_path / "b.db")
    secret_dir = "/home/alice/private-project"
    inside = Path.cwd() / "data" / "inside.jsonl"
    with open_store(db) as store:
        a = add_run(store, RTL, 4, dataset=f"{secret_dir}/data.jsonl", system=f"{secret_dir}/sys.py:answer")
        b = add_run(store, DOLLAR, 4, dataset=str(inside), system="http://127.0.0.1:9/v1")
    out = tmp_path / "bundle"
    proc = ragmeter("view", "--db", db, "--bundle", str(out), "--run", a, "--run", b)
    assert proc.returncode == 0, proc.stderr
    for name in ("index.html", "run-1.html", "run-2.html"):
        page = (out / name).read_text("utf-8")
        head = page.split("</head>", 1)[0]
        meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', head)
        assert meta is not None, name
        policy = meta.group(1).replace("&#39;", "'")
        assert (
            "default-src 'none'" in policy and "script-src 'self'" in policy and "style-src 'self'" in policy
        )
        assert head.index("Content-Security-Policy") < head.index("stylesheet")
        assert secret_dir not in page and "/home/" not in page and str(Path.cwd()) not in page
    index = (out / "index.html").read_text("utf-8")
    assert "data.jsonl" in index and "sys.py:answer" in index and "data/inside.jsonl" in index
    assert "http://127.0.0.1:9/v1" in index  # a URL is not a path of this machine
