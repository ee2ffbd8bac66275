"""Deprecated location: per-query LLM usage metering moved to `ragmeter.llm.meter` (a system's generator and
the judges use it too, and they sit below the run loop). Import `MeteredLLM` and `query_usage` from there."""

from __future__ import annotations

from ragmeter.llm.meter import MeteredLLM, query_usage

__all__ = ["MeteredLLM", "query_usage"]
