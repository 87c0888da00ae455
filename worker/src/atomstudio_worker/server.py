"""JSON-lines server on stdin/stdout (see PROTOCOL.md).

Threads: a reader thread parses stdin and answers the cheap methods (hello, calculators, cancel,
shutdown) at once, so cancel and health checks work while a calculation runs; the main thread runs
energy/optimize requests one at a time, in arrival order. Every protocol line is written whole,
under a lock, to a private copy of the original stdout: file descriptor 1 itself is pointed at
stderr so that prints from libraries (CHGNet, Fortran code, progress bars) can never corrupt the
protocol stream.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import queue
import sys
import threading
import traceback
from typing import Any

from . import PROTOCOL_VERSION, __version__
from .errors import WorkerError

log = logging.getLogger("atomstudio_worker")

try:  # faster serialization of big structures when available; json is the fallback
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


def _sanitize(obj: Any) -> Any:
    # JSON has no NaN/Infinity; a diverged calculation must still give a parseable line
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: _sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_sanitize(v) for v in obj]
    return obj


def dumps(obj: Any) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(obj, option=_orjson.OPT_SERIALIZE_NUMPY)  # NaN -> null
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:
        return json.dumps(_sanitize(obj), separators=(",", ":"), allow_nan=False).encode()


class _Job:
    __slots__ = ("id", "method", "params", "cancel")

    def __init__(self, rid, method, params):
        self.id = rid
        self.method = method
        self.params = params
        self.cancel = threading.Event()


_SHUTDOWN = object()
QUEUED_METHODS = ("energy", "optimize")


class Server:
    # Methods run one at a time on the main thread; a subclass (the analysis worker) names its own.
    queued_methods: tuple[str, ...] = QUEUED_METHODS

    def __init__(self, out_fd: int, in_stream=None):
        self.out_fd = out_fd
        self.in_stream = in_stream if in_stream is not None else sys.stdin.buffer
        self.write_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.queue: queue.Queue = queue.Queue()
        self.jobs: dict[Any, _Job] = {}  # queued or running, by id
        self.current: _Job | None = None
        self.stopping = False

    # -- output ---------------------------------------------------------------------------
    def send(self, obj: dict[str, Any]) -> None:
        data = dumps(obj) + b"\n"
        with self.write_lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self.out_fd, view)
                except BrokenPipeError:  # the service went away; nothing left to tell it
                    os._exit(0)
                view = view[n:]

    def reply(self, rid, result: dict[str, Any]) -> None:
        self.send({"id": rid, "ok": True, "result": result})

    def error(self, rid, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        err: dict[str, Any] = {"code": code, "message": message}
        if details:
            err["details"] = details
        self.send({"id": rid, "ok": False, "error": err})

    # -- input ----------------------------------------------------------------------------
    def read_loop(self) -> None:
        try:
            for raw in self.in_stream:
                line = raw.strip()
                if line:
                    self.handle_line(line)
        except Exception:  # pragma: no cover - stdin broken
            log.exception("stdin reader failed")
        # End of input: finish what was asked, then exit. (If the service died, the first write
        # to its closed pipe ends the worker at once; `shutdown` is the way to cancel and stop.)
        log.info("stdin closed; exiting after queued work")
        self.begin_shutdown(None, cancel_work=False)

    def handle_line(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            self.error(None, "MALFORMED_REQUEST", f"request line is not JSON: {exc}")
            return
        if not isinstance(msg, dict):
            self.error(None, "MALFORMED_REQUEST", "request must be a JSON object {id, method, params}")
            return
        rid = msg.get("id")
        if isinstance(rid, bool) or not isinstance(rid, (str, int)):
            self.error(None, "MALFORMED_REQUEST", "request id must be a string or an integer",
                       {"fields": ["id"]})
            return
        method = msg.get("method")
        params = msg.get("params", {})
        if params is None:
            params = {}
        if not isinstance(method, str):
            self.error(rid, "MALFORMED_REQUEST", "method must be a string", {"fields": ["method"]})
            return
        if not isinstance(params, dict):
            self.error(rid, "MALFORMED_REQUEST", "params must be an object", {"fields": ["params"]})
            return
        try:
            if method == "hello":
                self.reply(rid, self.hello())
            elif method == "calculators":
                self.reply(rid, calculators_result())
            elif method == "cancel":
                self.reply(rid, self.cancel(params.get("id")))
            elif method == "shutdown":
                self.begin_shutdown(rid)
            elif method in self.queued_methods:
                self.enqueue(rid, method, params)
            else:
                self.error(rid, "UNKNOWN_METHOD", f"unknown method {method!r}; methods: hello, calculators, "
                           f"{', '.join(self.queued_methods)}, cancel, shutdown")
        except Exception as exc:  # a bug in a cheap method must not kill the reader
            log.exception("handling %s failed", method)
            self.error(rid, "INTERNAL_ERROR", f"{type(exc).__name__}: {exc}")

    def enqueue(self, rid, method, params) -> None:
        with self.state_lock:
            if self.stopping:
                self.error(rid, "SHUTTING_DOWN", "the worker is shutting down")
                return
            if rid in self.jobs:
                self.error(rid, "MALFORMED_REQUEST", f"request id {rid!r} is already in use", {"fields": ["id"]})
                return
            job = _Job(rid, method, params)
            self.jobs[rid] = job
        self.queue.put(job)

    def cancel(self, target) -> dict[str, Any]:
        with self.state_lock:
            job = self.jobs.get(target)
            if job is None:
                return {"cancelled": False, "id": target, "reason": "no queued or running request has this id"}
            job.cancel.set()
            return {"cancelled": True, "id": target, "running": job is self.current}

    def begin_shutdown(self, rid, cancel_work: bool = True) -> None:
        with self.state_lock:
            if self.stopping:
                if rid is not None:
                    self.reply(rid, {"shutting_down": True})
                return
            self.stopping = True
            if cancel_work:
                for job in self.jobs.values():
                    job.cancel.set()
        self.queue.put((_SHUTDOWN, rid))

    def hello(self) -> dict[str, Any]:
        # versions from package metadata: hello answers before ASE/numpy are imported
        from importlib.metadata import version

        cur = self.current
        return {
            "protocol": PROTOCOL_VERSION,
            "worker": "atomstudio-worker",
            "version": __version__,
            "pid": os.getpid(),
            "python": platform.python_version(),
            "ase": version("ase"),
            "numpy": version("numpy"),
            "busy": cur.id if cur is not None else None,
            "packages": _package_versions(),
        }

    # -- work -----------------------------------------------------------------------------
    def execute(self, job: _Job, emit) -> dict[str, Any]:
        from . import runner

        if job.method == "energy":
            return runner.energy(job.params, job.cancel)
        return runner.optimize(job.params, emit, job.cancel)

    def run_job(self, job: _Job) -> None:
        if job.cancel.is_set():
            self.error(job.id, "CANCELLED", "cancelled before it started")
            return
        log.info("request %r: %s", job.id, job.method)

        def emit(data):
            self.send({"id": job.id, "event": "step", "data": data})

        try:
            result = self.execute(job, emit)
        except WorkerError as exc:
            self.send({"id": job.id, "ok": False, "error": exc.to_json()})
            return
        except Exception as exc:
            log.error("request %r failed:\n%s", job.id, traceback.format_exc())
            self.error(job.id, "INTERNAL_ERROR", f"{type(exc).__name__}: {exc}")
            return
        self.reply(job.id, result)

    def main_loop(self) -> int:
        while True:
            item = self.queue.get()
            if isinstance(item, tuple) and item and item[0] is _SHUTDOWN:
                if item[1] is not None:
                    self.reply(item[1], {"shutting_down": True})
                return 0
            job: _Job = item
            with self.state_lock:
                self.current = job
            try:
                self.run_job(job)
            finally:
                with self.state_lock:
                    self.current = None
                    self.jobs.pop(job.id, None)


_OPTIONAL_PACKAGES = ("torch", "sella", "tblite", "gfnff", "chgnet", "mace-torch", "matgl")


def _package_versions() -> dict[str, str | None]:
    # from installed metadata: no import, so hello stays fast on a cold worker
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in _OPTIONAL_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def calculators_result() -> dict[str, Any]:
    from . import calculators as C

    return {
        "calculators": [C.describe_calculator(cid) for cid in C.SPECS],
        "optimizers": [C.describe_optimizer(oid) for oid in C.OPTIMIZERS],
    }


def _claim_stdout() -> int:
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out_fd


class _ImportBlocker:
    """Makes `import NAME` fail for the modules named in ATOMSTUDIO_WORKER_HIDE_MODULES, so a
    missing optional library (Sella, tblite, ...) can be simulated without uninstalling it."""

    def __init__(self, names: set[str]):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (hidden by ATOMSTUDIO_WORKER_HIDE_MODULES)",
                                      name=fullname)
        return None


def serve(server_class: type[Server] = Server) -> int:
    from .calculators import _hidden_modules

    hidden = _hidden_modules()
    if hidden:
        sys.meta_path.insert(0, _ImportBlocker(hidden))
    out_fd = _claim_stdout()
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("ATOMSTUDIO_WORKER_LOG_LEVEL", "INFO").upper(),
        format=f"[atomstudio-worker {os.getpid()}] %(levelname)s %(message)s",
    )
    server = server_class(out_fd)
    reader = threading.Thread(target=server.read_loop, name="stdin-reader", daemon=True)
    reader.start()
    code = server.main_loop()
    sys.stderr.flush()
    # the reader may be blocked in read(); leave without joining it (and without slow
    # interpreter teardown of torch and friends)
    os._exit(code)
