"""`python -m atomstudio_worker.analysis`: the analysis worker on stdin/stdout."""

import sys


def main() -> int:
    from ..server import serve
    from .server import AnalysisServer

    return serve(AnalysisServer)


if __name__ == "__main__":
    sys.exit(main())
