"""Entry point: `python -m atomstudio_worker` speaks the JSON-lines protocol on stdin/stdout;
`atomstudio-worker --queue` takes calculator jobs from a shared Redis instead (queue_worker.py)."""

import sys


def main() -> int:
    if "--queue" in sys.argv[1:]:
        from .queue_worker import queue_main

        return queue_main(sys.argv[1:])
    from .server import serve

    return serve()


if __name__ == "__main__":
    sys.exit(main())
