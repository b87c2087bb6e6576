"""What the tests of both pointer components share."""

from __future__ import annotations

import httpx

from tests.unit_tests.fakes import StatusError

MODEL_FAILURES: list[tuple[Exception, str]] = [
    (ConnectionRefusedError("refused"), "fallback_unreachable"),
    (httpx.ConnectError("refused"), "fallback_unreachable"),
    (StatusError(503), "fallback_unreachable"),
    (StatusError(429), "fallback_unreachable"),
    (TimeoutError("slow"), "fallback_timeout"),
    (httpx.ReadTimeout("slow"), "fallback_timeout"),
    (StatusError(401), "fallback_error"),
    (ValueError("client bug"), "fallback_error"),
    (RuntimeError("anything"), "fallback_error"),
]
"""Errors a model call may raise, each with the fallback tag a component must report."""
