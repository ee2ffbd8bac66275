"""ragmeter: measure retrieval and RAG systems.

The public API is re-exported here lazily, so that `import ragmeter` stays fast (numpy, pydantic and
the native kernel load on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import by_module, lazy_getattr
from ragmeter._version import __version__

_EXPORTS = by_module(
    {
        "ragmeter.ir.evaluate": ("evaluate", "IREvaluation"),
        "ragmeter.ir.data": ("Qrels", "Run"),
        "ragmeter.models": (
            "EvalQuery",
            "EvalDataset",
            "MetricResult",
            "QueryEvalResult",
            "EvalRunResult",
            "EvalConfig",
            "Document",
        ),
        "ragmeter.datasets": ("load_dataset",),
        "ragmeter.run.api": ("run_evaluation", "arun_evaluation"),
    }
)

__all__ = [
    "Document",
    "EvalConfig",
    "EvalDataset",
    "EvalQuery",
    "EvalRunResult",
    "IREvaluation",
    "MetricResult",
    "Qrels",
    "QueryEvalResult",
    "Run",
    "__version__",
    "arun_evaluation",
    "evaluate",
    "load_dataset",
    "run_evaluation",
]

if TYPE_CHECKING:
    from ragmeter.ir.data import Qrels, Run
    from ragmeter.ir.evaluate import IREvaluation, evaluate
    from ragmeter.models import (
        Document,
        EvalConfig,
        EvalDataset,
        EvalQuery,
        EvalRunResult,
        MetricResult,
        QueryEvalResult,
    )


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
