"""`ragmeter view` server time: a stored 10,000-query run against a 10-query run.

    PYTHONPATH=src:tests/view:tests/report python benchmarks/view.py [--big 10000] [--repeat 25]

Both runs are written through the store API (`Store.add_query_result`, one transaction per query, as a
run writes them) into one SQLite file. Each page is requested `--repeat` times in process through
Starlette's test client (the ASGI app with its routing, SQL, templates, middleware; no sockets), and the
p50 / p95 of the wall time per request is printed for both runs side by side with their ratio. Targets
(the viewer's): queries page p50 at most 2x the small run's and under 300 ms; one query page under 100 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "view"), str(ROOT / "tests" / "report")]


def build(path: Path, big: int) -> dict[str, str]:
    from view_store import add_run

    from ragmeter.store import open_store

    with open_store(str(path)) as store:
        t0 = time.perf_counter()
        ids = {"small": add_run(store, "small", 10, seed=1), "big": add_run(store, "big", big, seed=2)}
        print(f"stored {big + 10} queries in {time.perf_counter() - t0:.1f} s")
    return ids


def timed(client: object, url: str, repeat: int) -> tuple[float, float]:
    get = client.get  # type: ignore[attr-defined]
    assert get(url).status_code == 200, url  # warm (template compile, dataset lookups)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = get(url)
        times.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=25)
    ap.add_argument("--db", default=None, help="reuse this store file (built when missing)")
    args = ap.parse_args()
    from starlette.testclient import TestClient

    from ragmeter.store.pages import open_store_readonly
    from ragmeter.view.app import Viewer, create_app

    path = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "view-bench.db"
    if path.exists():
        store = open_store_readonly(str(path))
        runs = {r.name: r.run_id or "" for r in store.list_runs()}
        ids = {"small": runs["small"], "big": runs["big"]}
    else:
        ids = build(path, args.big)
        store = open_store_readonly(str(path))
    client = TestClient(create_app(Viewer(store)))
    rng = random.Random(0)
    # Ten rows a page for both runs (the small run's whole page), so that the ratio measures the run's size.
    pages = {
        "queries page (first page)": "/runs/{id}/queries?per=10",
        "queries page (sorted by mrr, desc)": "/runs/{id}/queries?sort=mrr&desc=1&per=10",
        "queries page (sorted by factuality, asc)": "/runs/{id}/queries?sort=factuality&per=10",
        "queries page (0.2<=ndcg@10<=0.5, page 3)": "/runs/{id}/queries?metric=ndcg%4010&lo=0.2&hi=0.5&page=3&per=1",
        "queries page (judge nulls)": "/runs/{id}/queries?metric=factuality&null=1&per=10",
        "queries page, last page (sorted by factuality)": "/runs/{id}/queries?sort=factuality&per=10&page=LAST",
    }
    print(f"{'page':52s} {'10-query p50':>13s} {'big p50':>10s} {'big p95':>10s} {'ratio':>6s}")
    worst_ratio, worst_big = 0.0, 0.0
    opened = (
        "queries page (first page)",
        "queries page (sorted by mrr, desc)",
        "queries page (sorted by factuality, asc)",
    )
    for label, pattern in pages.items():
        small, _ = timed(client, pattern.format(id=ids["small"]).replace("LAST", "1"), args.repeat)
        big, big95 = timed(
            client, pattern.format(id=ids["big"]).replace("LAST", str(args.big // 10)), args.repeat
        )
        if label in opened:  # the page as a person opens it or re-sorts it: the target
            worst_ratio = max(worst_ratio, big / small)
        worst_big = max(worst_big, big)
        print(f"{label:52s} {small:10.1f} ms {big:7.1f} ms {big95:7.1f} ms {big / small:6.2f}")
    small50, _ = timed(client, f"/runs/{ids['small']}/queries", args.repeat)
    big50, big50_95 = timed(client, f"/runs/{ids['big']}/queries", args.repeat)
    print(
        f"{'default page: 50 rows (big) vs all 10 (small)':52s} {small50:10.1f} ms {big50:7.1f} ms {big50_95:7.1f} ms"
    )
    worst_big = max(worst_big, big50)
    qid = f"q{rng.randrange(args.big):05d}"
    small_q, _ = timed(client, f"/runs/{ids['small']}/query?id=q00005", args.repeat)
    big_q, big_q95 = timed(client, f"/runs/{ids['big']}/query?id={qid}", args.repeat)
    print(
        f"{'one query page':52s} {small_q:10.1f} ms {big_q:7.1f} ms {big_q95:7.1f} ms {big_q / small_q:6.2f}"
    )
    ok = worst_ratio <= 2.0 and worst_big < 300 and big_q < 100
    print(
        f"targets: queries page as opened or re-sorted, ratio <= 2 (worst {worst_ratio:.2f}); every queries page "
        f"< 300 ms (worst {worst_big:.1f}); "
        f"one query page < 100 ms ({big_q:.1f}): {'met' if ok else 'NOT met'}"
    )
    store.close()


if __name__ == "__main__":
    main()
