"""`hetero_intermat`: the intermat/JARVIS-Tools interface pipeline. The library is optional and not
part of the worker's extras; without it the method answers ANALYSIS_UNAVAILABLE (503) with the
install command, never a 500."""

from __future__ import annotations

from typing import Any

from ...errors import WorkerError

METHOD = "hetero_intermat"


def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    try:
        import intermat.generate  # noqa: F401
    except ImportError:
        raise WorkerError("ANALYSIS_UNAVAILABLE",
                          "intermat (JARVIS-Tools interfaces) is not installed in the analysis worker's Python; "
                          "install it with: .venv/bin/pip install intermat", {"package": "intermat"}) from None
    raise WorkerError("ANALYSIS_UNAVAILABLE", "the intermat pipeline is not wired in this release; use "
                      "/api/heterostructure/search and /build (pymatgen)", {"package": "intermat"})
