"""Entry point: `python -m atomstudio_worker` speaks the JSON-lines protocol on stdin/stdout."""

import sys


def main() -> int:
    from .server import serve

    return serve()


if __name__ == "__main__":
    sys.exit(main())
