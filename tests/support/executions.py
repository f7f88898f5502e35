"""Waiting for an execution request to end, through its status URL."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit


def wait_execution(get: Callable, status_url: str, headers, timeout: float = 60.0) -> dict:
    """Poll ``get(path, headers=...)`` at the status URL's path until the execution ends.

    The path alone, so a test client or a server other than the advertised site URL answers."""
    path = urlsplit(status_url).path
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = get(path, headers=headers).json()
        if body["status"] in ("finished", "failed"):
            return body
        time.sleep(0.1)
    raise AssertionError(f"execution still {body['status']} after {timeout}s")
