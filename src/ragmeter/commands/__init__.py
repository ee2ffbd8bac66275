"""CLI commands of the runner and the store: run, runs, ingest, testcases, demo (imported lazily)."""
