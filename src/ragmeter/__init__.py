"""ragmeter: measure retrieval and RAG systems.

The public API is re-exported here lazily, so that `import ragmeter` stays fast (numpy, pydantic and
the native kernel load on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_getattr
from ragmeter._version import __version__

_EXPORTS: dict[str, str] = {
    "evaluate": "ragmeter.ir.evaluate",
    "IREvaluation": "ragmeter.ir.evaluate",
    "Qrels": "ragmeter.ir.data",
    "Run": "ragmeter.ir.data",
    "EvalQuery": "ragmeter.models",
    "EvalDataset": "ragmeter.models",
    "MetricResult": "ragmeter.models",
    "QueryEvalResult": "ragmeter.models",
    "EvalRunResult": "ragmeter.models",
    "EvalConfig": "ragmeter.models",
    "Document": "ragmeter.models",
    "load_dataset": "ragmeter.datasets",
    "run_evaluation": "ragmeter.run.api",
    "arun_evaluation": "ragmeter.run.api",
}

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
