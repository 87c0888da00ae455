"""`atomstudio-worker --queue`: take calculator jobs from the shared Redis (BullMQ, the official
`bullmq` package), on this machine or any other (README "Workflows", worker/README.md).

The worker finds which calculators it can run (the same listing as the `calculators` method),
advertises them in Redis (`atomstudio:worker:<id>`, refreshed while it runs), and takes jobs
only from the queues of those calculators (`calc-<calculator>`): a job waits until a worker that
can run it is there. One calculation runs at a time per process (models load once); start more
processes for more parallel work.

A job's data is what the service's orchestrator enqueues: `{run_id, node_id, item, operation,
input, timeout_ms?}` with `operation` one of `optimize_structure`, `energy`, and `input` already
checked and normalized by the service. A failure is reported as `CODE: message`; conditions of
the input (4xx codes) are not retried. A worker killed mid-job leaves the job's lock to expire:
BullMQ's stalled-job check then gives it to another worker, and the service records its result
once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from typing import Any

log = logging.getLogger("atomstudio_worker.queue")

PREFIX = "atomstudio"
CANCEL_CHANNEL = "atomstudio:jobs:cancel"
METHODS = {"optimize_structure": "optimize", "structure_optimize": "optimize", "energy": "energy"}
#: codes that describe the input: retrying cannot help
_PERMANENT = {
    "MALFORMED_REQUEST", "INVALID_STRUCTURE", "UNKNOWN_CALCULATOR", "CALCULATOR_UNAVAILABLE", "UNSUPPORTED_ELEMENTS",
    "UNKNOWN_OPTIMIZER", "OPTIMIZER_UNAVAILABLE", "INVALID_INDEX", "INVALID_FMAX", "INVALID_MAX_STEPS",
    "INVALID_OPTIMIZER_PARAMS", "MODEL_PATH_NOT_ALLOWED", "UNKNOWN_MODEL", "PERIODIC_NOT_SUPPORTED",
}
PROGRESS_S = 0.5
HEARTBEAT_S = 10


def available_calculators() -> list[str]:
    from .server import calculators_result

    return [c["id"] for c in calculators_result()["calculators"] if c["available"] and c.get("runs_in") != "browser"]


# Details of a failure follow this mark in the failed reason (packages/server/src/workflow/engine.ts).
FAILURE_DETAILS_MARK = "\n@error "

class QueueWorker:
    def __init__(self, url: str, calculators: list[str], lock_ms: int):
        self.url = url
        self.calculators = calculators
        self.lock_ms = lock_ms
        self.id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.one_at_a_time = asyncio.Lock()
        self.cancels: dict[str, threading.Event] = {}
        self.workers: list[Any] = []

    async def process(self, job, token):
        from bullmq import UnrecoverableError

        from . import runner
        from .errors import WorkerError

        data = job.data or {}
        method = METHODS.get(data.get("operation"))
        if method is None:
            raise UnrecoverableError(f"MALFORMED_REQUEST: not a calculator operation: {data.get('operation')!r}")
        params = data.get("input") or {}
        timeout_ms = data.get("timeout_ms")
        async with self.one_at_a_time:
            loop = asyncio.get_running_loop()
            cancel = threading.Event()
            self.cancels[job.id] = cancel
            last = [0.0]
            # a caller relaying every step (the service's optimization WebSocket) asks for each one,
            # with its structure, in order and all before the result
            every_step = bool(data.get("progress_steps"))
            reported: list[Any] = [None]

            async def report_after(prev: Any, progress: dict[str, Any]) -> None:
                if prev is not None:
                    try:
                        await prev
                    except Exception:
                        pass
                await job.updateProgress(progress)

            def report(progress: dict[str, Any]) -> None:
                reported[0] = asyncio.ensure_future(report_after(reported[0], progress))

            async def flush() -> None:
                if reported[0] is not None:
                    try:
                        await reported[0]
                    except Exception:
                        pass

            def emit(step: dict[str, Any]) -> None:
                if every_step:
                    loop.call_soon_threadsafe(report, {"event": "step", "data": step})
                    return
                now = time.monotonic()
                if now - last[0] < PROGRESS_S:
                    return
                last[0] = now
                progress = {k: step.get(k) for k in ("step", "energy", "fmax")}
                loop.call_soon_threadsafe(report, progress)

            def work() -> dict[str, Any]:
                if method == "energy":
                    return runner.energy(params, cancel)
                return runner.optimize(params, emit, cancel)

            log.info("job %s: %s", job.id, data.get("operation"))
            future = loop.run_in_executor(None, work)
            expired = False
            try:
                if timeout_ms:
                    done, _ = await asyncio.wait({future}, timeout=timeout_ms / 1000)
                    if not done:
                        expired = True
                        cancel.set()
                return await future
            except WorkerError as exc:
                if expired:
                    raise UnrecoverableError(
                        f"DEADLINE_EXCEEDED: The node did not finish within its deadline of {timeout_ms / 1000} s")
                message = f"{exc.code}: {exc.message}"
                if exc.details is not None:
                    # the service hands these back to an HTTP caller waiting for the job
                    message += FAILURE_DETAILS_MARK + json.dumps({"details": exc.details})
                raise (UnrecoverableError(message) if exc.code in _PERMANENT else Exception(message)) from None
            except Exception as exc:
                if type(exc).__name__ == "Cancelled" or expired:
                    code = "DEADLINE_EXCEEDED" if expired else "CANCELLED"
                    raise UnrecoverableError(f"{code}: stopped") from None
                raise Exception(f"INTERNAL_ERROR: {type(exc).__name__}: {exc}") from None
            finally:
                await flush()
                self.cancels.pop(job.id, None)

    async def advertise(self) -> None:
        from redis import asyncio as aioredis

        client = aioredis.from_url(self.url)
        key = f"{PREFIX}:worker:{self.id}"
        info = json.dumps({"id": self.id, "host": socket.gethostname(), "pid": os.getpid(),
                           "calculators": self.calculators, "started_at": time.time()})
        try:
            while True:
                await client.set(key, info, ex=HEARTBEAT_S * 3)
                await asyncio.sleep(HEARTBEAT_S)
        finally:
            await client.delete(key)
            await client.aclose()

    async def listen_for_cancels(self) -> None:
        from redis import asyncio as aioredis

        client = aioredis.from_url(self.url)
        pubsub = client.pubsub()
        await pubsub.subscribe(CANCEL_CHANNEL)
        try:
            async for message in pubsub.listen():
                if message.get("type") != "message":
                    continue
                try:
                    for job_id in json.loads(message["data"]):
                        event = self.cancels.get(job_id)
                        if event:
                            event.set()
                except (ValueError, TypeError):
                    continue
        finally:
            await client.aclose()

    async def run(self, stop: asyncio.Event) -> None:
        from bullmq import Worker

        for calc in self.calculators:
            self.workers.append(Worker(f"calc-{calc}", self.process, {
                "connection": self.url, "prefix": PREFIX, "concurrency": 1,
                "lockDuration": self.lock_ms, "stalledInterval": self.lock_ms, "maxStalledCount": 3,
            }))
        tasks = [asyncio.ensure_future(self.advertise()), asyncio.ensure_future(self.listen_for_cancels())]
        # the line tests and operators wait for
        print(f"atomstudio-worker {self.id} taking jobs for {', '.join(self.calculators)}", file=sys.stderr, flush=True)
        await stop.wait()
        for w in self.workers:
            await w.close()
        for t in tasks:
            t.cancel()


def queue_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="atomstudio-worker --queue", description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", action="store_true", help="take calculator jobs from Redis")
    parser.add_argument("--redis-url", default=os.environ.get("ATOMSTUDIO_REDIS_URL"),
                        help="the Redis the services use (default: ATOMSTUDIO_REDIS_URL)")
    parser.add_argument("--calculators", default=None,
                        help="comma-separated calculators to take jobs for (default: every available one)")
    parser.add_argument("--lock-s", type=float, default=float(os.environ.get("ATOMSTUDIO_QUEUE_LOCK_S", "30")),
                        help="job lock; a worker silent this long counts as dead (default 30, ATOMSTUDIO_QUEUE_LOCK_S)")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("ATOMSTUDIO_WORKER_LOG_LEVEL", "INFO").upper(),
                        format=f"[atomstudio-worker {os.getpid()}] %(levelname)s %(message)s")
    if not args.redis_url:
        print("atomstudio-worker --queue: set ATOMSTUDIO_REDIS_URL or pass --redis-url", file=sys.stderr)
        return 2
    have = available_calculators()
    wanted = [c.strip() for c in args.calculators.split(",")] if args.calculators else have
    missing = [c for c in wanted if c not in have]
    if missing:
        print(f"atomstudio-worker --queue: not available here: {', '.join(missing)}", file=sys.stderr)
        return 2
    if not wanted:
        print("atomstudio-worker --queue: no calculator is available here", file=sys.stderr)
        return 2

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await QueueWorker(args.redis_url, wanted, int(args.lock_s * 1000)).run(stop)

    asyncio.run(main())
    return 0
