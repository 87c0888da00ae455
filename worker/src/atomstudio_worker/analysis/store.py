"""Files by sha256 and parsed objects cached by them.

The service sends each file as `{sha256, filename?, data?}`. `data` (base64 of the bytes as the
user gave them) may be left out when this worker already holds the file: then a file the worker
does not hold is answered with `NEED_FILES` and the service sends it again with its data. Files
are decompressed (gzip, bzip2: by magic bytes, never by name) into a private temporary folder,
with a cap on the decompressed size so a small bomb cannot fill the disk or memory.
"""

from __future__ import annotations

import base64
import bz2
import hashlib
import os
import shutil
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
    """Write the decompressed bytes of `raw` to `out`; return the size. Caps the output."""
    if raw[:2] == GZIP_MAGIC:
        d = zlib.decompressobj(wbits=47)  # gzip header, several members allowed below
        kind = "gzip"
    elif raw[:3] == BZIP2_MAGIC:
        d = bz2.BZ2Decompressor()
        kind = "bzip2"
    else:
        if len(raw) > max_bytes:
            raise WorkerError("FILE_TOO_LARGE", f"{name} is larger than {max_bytes} bytes", {"file": name})
        out.write(raw)
        return len(raw)
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


class FileStore:
    """Decompressed files on disk, by the sha256 of the bytes as sent; the oldest leave first."""

    def __init__(self, keep: int = 16):
        self.root = tempfile.mkdtemp(prefix="atomstudio-analysis-")
        os.chmod(self.root, 0o700)
        self.keep = keep
        self.files: OrderedDict[str, str] = OrderedDict()

    def path(self, sha: str) -> str | None:
        p = self.files.get(sha)
        if p is not None:
            self.files.move_to_end(sha)
        return p

    def add(self, name: str, spec: dict[str, Any], max_bytes: int) -> str:
        try:
            raw = base64.b64decode(spec["data"], validate=True)
        except (ValueError, TypeError):
            raise WorkerError("INVALID_FILE", f"{name} is not valid base64", {"file": name}) from None
        sha = spec["sha256"]
        if hashlib.sha256(raw).hexdigest() != sha:
            raise WorkerError("MALFORMED_REQUEST", f"{name}: sha256 does not match the data", {"file": name})
        if not raw:
            raise WorkerError("INVALID_FILE", f"{name} is empty (0 bytes)", {"file": name})
        path = os.path.join(self.root, sha)
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
        shutil.rmtree(self.root, ignore_errors=True)


class Context:
    """What a method gets besides its params: the file store and the parsed-object cache."""

    def __init__(self, max_parsed: int = 6):
        self.store = FileStore()
        self.parsed: OrderedDict[tuple, Any] = OrderedDict()
        self.max_parsed = max_parsed
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def files(self, params: dict[str, Any], names: tuple[str, ...]) -> dict[str, tuple[str, str]]:
        """The named files of a request as `{name: (sha256, path)}`; unknown ones: NEED_FILES."""
        specs = params.get("files") or {}
        max_bytes = int(params.get("max_file_bytes") or DEFAULT_MAX_BYTES)
        out: dict[str, tuple[str, str]] = {}
        missing: list[str] = []
        for name in names:
            spec = specs.get(name)
            if spec is None:
                continue
            if not isinstance(spec, dict) or not isinstance(spec.get("sha256"), str):
                raise WorkerError("MALFORMED_REQUEST", f"files.{name} needs a sha256", {"fields": [f"files.{name}"]})
            path = self.store.path(spec["sha256"])
            if path is None and spec.get("data") is not None:
                path = self.store.add(name, spec, max_bytes)
            if path is None:
                missing.append(name)
            else:
                out[name] = (spec["sha256"], path)
        if missing:
            raise WorkerError("NEED_FILES", "the worker does not hold these files; send them with data",
                              {"files": missing})
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
