"""Prediction-powered inference for the mean of a judged metric: the estimator lives in
`ragmeter.score.ppi_mean` (scoring uses it for a run's PPI estimates, and scoring sits below experiments);
its names are re-exported here for experiment code and existing imports."""

from __future__ import annotations

from ragmeter.score.ppi_mean import PPIResult, ppi_mean, t_quantile

__all__ = ["PPIResult", "ppi_mean", "t_quantile"]
