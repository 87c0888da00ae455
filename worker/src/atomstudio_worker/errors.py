"""Errors that travel over the protocol: a stable UPPER_SNAKE_CASE code plus a message."""

from __future__ import annotations

from typing import Any


class WorkerError(Exception):
    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out


class Cancelled(Exception):
    """Raised between optimizer steps when the request was cancelled."""
