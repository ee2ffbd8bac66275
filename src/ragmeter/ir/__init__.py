"""The IR engine: trec_eval-exact retrieval measures over columnar qrels and runs."""

from ragmeter.ir._bytes import read_bytes
from ragmeter.ir.data import Qrels, Run
from ragmeter.ir.evaluate import IREvaluation, evaluate
from ragmeter.ir.measures import Measure, default_measures, parse_measure, parse_measures

__all__ = [
    "IREvaluation",
    "Measure",
    "Qrels",
    "Run",
    "default_measures",
    "evaluate",
    "parse_measure",
    "parse_measures",
    "read_bytes",
]
