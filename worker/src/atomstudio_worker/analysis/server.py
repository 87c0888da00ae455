"""The calculator worker's server with the analysis methods in place of energy/optimize."""

from __future__ import annotations

import gc
import logging
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

from ..server import Server
from .methods import METHODS
from .store import Context

log = logging.getLogger("atomstudio_worker")


class AnalysisServer(Server):
    queued_methods = tuple(sorted(METHODS))

    def __init__(self, out_fd: int, in_stream=None):
        super().__init__(out_fd, in_stream)
        self.context = Context()
        _widen_pipe(out_fd)

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
        # The ~150k objects of those imports live as long as the process: out of the collector's
        # sight, a full collection no longer walks them. Without this, one request in a few (as the
        # heap grew by a quarter with parsed objects) paid a full collection: 66 ms on a Si band
        # request whose parse takes 80 ms, the one slow round in every benchmark run.
        gc.collect()
        gc.freeze()
        return super().main_loop()

    def execute(self, job, emit) -> dict[str, Any]:
        return METHODS[job.method](job.params, self.context, job.cancel)


# An answer (bands of a large file: megabytes) goes into the pipe in one write when the pipe can
# hold it, instead of 64 KiB at a time with the service reading in between (each turn a wait for
# a core on a loaded machine). 1 MiB is Linux's default cap for an unprivileged process.
PIPE_BYTES = 1 << 20


def _widen_pipe(fd: int) -> None:
    if fcntl is None or not hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux only (Python 3.10+)
        return
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:  # not a pipe (a test's file), another platform, or a lower cap: keep the default
        pass
