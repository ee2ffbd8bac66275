"""Clusters of a comparison from the dataset (`runs compare --cluster-by FIELD`). The effect sizes and the
clustered statistics moved to `ragmeter.stats.effects` (power to `ragmeter.stats.power`); their old names
still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ragmeter._lazy import moved
from ragmeter.errors import InputError

if TYPE_CHECKING:
    from ragmeter.models import EvalQuery

_MOVED = {
    **dict.fromkeys(
        (
            "FloatArray",
            "IntArray",
            "cluster_codes",
            "resampled_moments",
            "cohens_dz",
            "bootstrap_summary",
            "clustered_se",
            "clustered_t_test",
            "sign_flip_test",
        ),
        "ragmeter.stats.effects",
    ),
    "percentile_interval": "ragmeter.stats.resample",
}


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)


def query_clusters(queries: Iterable[EvalQuery], field: str, needed: Iterable[str]) -> dict[str, Any]:
    """{query_id: its metadata[field]} for --cluster-by; InputError naming the first query without the
    field, or when fewer than two clusters remain (nothing to resample)."""
    by_id = {q.query_id: q for q in queries}
    out: dict[str, Any] = {}
    for qid in needed:
        q = by_id.get(qid)
        if q is None or field not in q.metadata:
            where = "is not in the dataset" if q is None else f"has no metadata field {field!r}"
            raise InputError(f"query {qid!r} {where}", source=f"--cluster-by {field}")
        value = q.metadata[field]
        out[qid] = value if isinstance(value, (str, int, float, bool)) else repr(value)
    if len({str(v) for v in out.values()}) < 2:
        raise InputError(
            f"the compared queries fall in {len(set(map(str, out.values())))} cluster(s); clustered "
            "intervals need at least 2",
            source=f"--cluster-by {field}",
        )
    return out
