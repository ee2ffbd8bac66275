"""Experiments over runs: paired significance tests, ablation grids."""
