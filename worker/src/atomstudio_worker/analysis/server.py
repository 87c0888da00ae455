"""The calculator worker's server with the analysis methods in place of energy/optimize."""

from __future__ import annotations

import logging
from typing import Any

from ..server import Server
from .methods import METHODS
from .store import Context

log = logging.getLogger("atomstudio_worker")


class AnalysisServer(Server):
    queued_methods = tuple(sorted(METHODS))

    def __init__(self, out_fd: int, in_stream=None):
        super().__init__(out_fd, in_stream)
        self.context = Context()

    def main_loop(self) -> int:
        # Import the heavy libraries once, before the first request, so no request pays for them
        # (hello/cancel are answered meanwhile by the reader thread).
        try:
            import pymatgen.electronic_structure.cohp  # noqa: F401
            import pymatgen.io.lobster  # noqa: F401
            import pymatgen.io.vasp  # noqa: F401

            # heterostructures: ZSL, CoherentInterfaceBuilder (slabs) and spglib (grid-scan symmetry)
            import pymatgen.analysis.interfaces.coherent_interfaces  # noqa: F401
            import pymatgen.symmetry.analyzer  # noqa: F401
        except ImportError as exc:  # reported per request as ANALYSIS_UNAVAILABLE
            log.warning("pymatgen is not importable: %s", exc)
        return super().main_loop()

    def execute(self, job, emit) -> dict[str, Any]:
        return METHODS[job.method](job.params, self.context, job.cancel)
