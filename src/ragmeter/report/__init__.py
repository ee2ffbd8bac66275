"""Reports of finished runs: long-format CSV, matplotlib plots, a self-contained HTML report.

Everything here takes `EvalRunResult` objects (from the store, a JSON export or built in code); matplotlib
and jinja2 are imported only when a plot or the HTML report is made.
"""
