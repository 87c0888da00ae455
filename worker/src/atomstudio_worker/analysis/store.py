"""Files by path and sha256, and parsed objects cached by sha256.

The service writes every file it is given to its private upload store (a 0700 folder, files 0600
under random names, moved under their sha256) and sends `{sha256, path, filename?}`; the folder is
named once, in this process's environment (`ATOMSTUDIO_ANALYSIS_FILES`). A path anywhere else, a
link, or anything but a regular file is refused, so a request can never make this worker read a
file the service did not write. Compressed files (gzip, bzip2: by magic bytes, never by name) are
decompressed into this worker's own folder inside that one, with a cap on the decompressed size so
a small bomb cannot fill the disk or memory; plain files are parsed where they are (no copy).
"""

from __future__ import annotations

import bz2
import os
import shutil
import stat
import tempfile
import threading
import zlib
from collections import OrderedDict
from typing import Any, Callable

from ..errors import WorkerError

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
DEFAULT_MAX_BYTES = 1 << 30
CHUNK = 1 << 20


def unavailable(package: str, exc: Exception) -> WorkerError:
    return WorkerError(
        "ANALYSIS_UNAVAILABLE",
        f"{package} is not installed in the analysis worker's Python ({type(exc).__name__}); "
        'install it with: .venv/bin/pip install -e "worker[analysis]" (or scripts/setup-python)',
        {"package": package},
    )


def _decompress(raw: bytes, out, max_bytes: int, name: str) -> int:
    """Write the decompressed bytes of gzip or bzip2 `raw` to `out`; return the size. Caps the output."""
    if raw[:2] == GZIP_MAGIC:
        d = zlib.decompressobj(wbits=47)  # gzip header, several members allowed below
        kind = "gzip"
    else:
        d = bz2.BZ2Decompressor()
        kind = "bzip2"
    total = 0
    data = raw
    try:
        while True:
            if kind == "gzip":
                chunk = d.decompress(data, CHUNK)
                data = d.unconsumed_tail
            else:
                chunk = d.decompress(data, CHUNK)
                data = b""
            total += len(chunk)
            if total > max_bytes:
                raise WorkerError("FILE_TOO_LARGE", f"{name} decompresses to more than {max_bytes} bytes",
                                  {"file": name})
            out.write(chunk)
            if kind == "gzip":
                if d.eof:
                    rest = d.unused_data
                    if rest[:2] == GZIP_MAGIC:  # concatenated members (gzip -c a b)
                        d = zlib.decompressobj(wbits=47)
                        data = rest
                        continue
                    break
                if not chunk and not data:
                    raise WorkerError("INVALID_FILE", f"{name} is a truncated gzip stream", {"file": name})
            else:
                if d.eof:
                    break
                if not chunk and d.needs_input:
                    raise WorkerError("INVALID_FILE", f"{name} is a truncated bzip2 stream", {"file": name})
    except (zlib.error, OSError, EOFError) as exc:
        raise WorkerError("INVALID_FILE", f"{name} is not a valid {kind} stream: {exc}", {"file": name}) from None
    return total


def _open_given(name: str, spec: dict[str, Any], root: str | None) -> int:
    """Open the file the service named, read-only, refusing anything outside its folder, links and
    non-regular files (checked on the opened descriptor, so a swap after the check changes nothing)."""
    path = spec.get("path")
    if not root or not isinstance(path, str) or not os.path.isabs(path):
        raise WorkerError("MALFORMED_REQUEST", f"files.{name}: no file of the service's store",
                          {"fields": [f"files.{name}"]})
    # directly in the folder (no `..`, no subfolder such as a worker's own), the last component not a link
    if os.path.dirname(os.path.normpath(path)) != os.path.normpath(root) or os.path.normpath(path) != path:
        raise WorkerError("MALFORMED_REQUEST", f"files.{name}: not a file of the service's store",
                          {"fields": [f"files.{name}"]})
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        raise WorkerError("MALFORMED_REQUEST", f"files.{name}: not a readable file of the service's store",
                          {"fields": [f"files.{name}"]}) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WorkerError("MALFORMED_REQUEST", f"files.{name}: not a regular file", {"fields": [f"files.{name}"]})
    return fd


def _remove_dead_workers_folders(root: str) -> None:
    """A worker killed at a deadline leaves its decompressed copies behind: its successor removes them."""
    for entry in os.listdir(root):
        parts = entry.split("-")
        if len(parts) < 3 or parts[0] != "worker" or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, entry), ignore_errors=True)
        except OSError:
            pass


class FileStore:
    """Decompressed copies of compressed files, by the sha256 of the bytes as sent; oldest leave first."""

    def __init__(self, root: str | None, keep: int = 16):
        self.root = root
        inside = root if root and os.path.isdir(root) else None
        if inside:
            _remove_dead_workers_folders(inside)
        self.own = tempfile.mkdtemp(prefix=f"worker-{os.getpid()}-", dir=inside)
        os.chmod(self.own, 0o700)
        self.keep = keep
        self.files: OrderedDict[str, str] = OrderedDict()

    def resolve(self, name: str, spec: dict[str, Any], max_bytes: int) -> str:
        """The path to parse for a file the service gave: its own path when plain, else a copy decompressed here."""
        sha = spec["sha256"]
        held = self.files.get(sha)
        if held is not None and os.path.exists(held):
            self.files.move_to_end(sha)
            return held
        fd = _open_given(name, spec, self.root)
        with os.fdopen(fd, "rb") as given:
            head = given.read(3)
            size = os.fstat(given.fileno()).st_size
            if size == 0:
                raise WorkerError("INVALID_FILE", f"{name} is empty (0 bytes)", {"file": name})
            if head[:2] != GZIP_MAGIC and head[:3] != BZIP2_MAGIC:
                if size > max_bytes:
                    raise WorkerError("FILE_TOO_LARGE", f"{name} is larger than {max_bytes} bytes", {"file": name})
                return spec["path"]
            given.seek(0)
            raw = given.read()
        path = os.path.join(self.own, sha)
        tmp = path + ".part"
        try:
            with open(tmp, "wb") as out:
                size = _decompress(raw, out, max_bytes, name)
            if size == 0:
                raise WorkerError("INVALID_FILE", f"{name} is empty once decompressed", {"file": name})
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        self.files[sha] = path
        while len(self.files) > self.keep:
            _, old = self.files.popitem(last=False)
            if os.path.exists(old):
                os.unlink(old)
        return path

    def close(self) -> None:
        shutil.rmtree(self.own, ignore_errors=True)


class Context:
    """What a method gets besides its params: the file store and the parsed-object cache."""

    def __init__(self, max_parsed: int = 6, files_root: str | None = None):
        self.store = FileStore(files_root or os.environ.get("ATOMSTUDIO_ANALYSIS_FILES"))
        self.parsed: OrderedDict[tuple, Any] = OrderedDict()
        self.max_parsed = max_parsed
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def files(self, params: dict[str, Any], names: tuple[str, ...]) -> dict[str, tuple[str, str]]:
        """The named files of a request as `{name: (sha256, path)}` (see the module's docstring)."""
        specs = params.get("files") or {}
        max_bytes = int(params.get("max_file_bytes") or DEFAULT_MAX_BYTES)
        out: dict[str, tuple[str, str]] = {}
        for name in names:
            spec = specs.get(name)
            if spec is None:
                continue
            if not isinstance(spec, dict) or not isinstance(spec.get("sha256"), str):
                raise WorkerError("MALFORMED_REQUEST", f"files.{name} needs a sha256", {"fields": [f"files.{name}"]})
            out[name] = (spec["sha256"], self.store.resolve(name, spec, max_bytes))
        return out

    def cached(self, key: tuple, make: Callable[[], Any]) -> Any:
        """The parsed object under `key`, made once (a failed parse is not cached)."""
        if key in self.parsed:
            self.parsed.move_to_end(key)
            self.hits += 1
            return self.parsed[key]
        self.misses += 1
        value = make()
        self.parsed[key] = value
        while len(self.parsed) > self.max_parsed:
            self.parsed.popitem(last=False)
        return value
