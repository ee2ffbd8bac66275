"""`ragmeter view`: a local web app over the store (read-only unless a person is labelling), and static
bundles of chosen runs. Needs the `view` extra (starlette, uvicorn)."""

from __future__ import annotations

__all__: list[str] = []
