"""A chat model server on 127.0.0.1 that answers slowly or with an error, for the settings' models.

It speaks enough of the OpenAI chat completions API (``/v1/chat/completions``) and of
Ollama's (``/api/chat``) for ``ChatOpenAI`` and ``ChatOllama``, and records every
request body it receives.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ModelServer:
    """Replies ``reply`` after ``delay`` seconds with HTTP ``status``.

    With ``drip`` it sends the headers at once and then one byte every ``drip`` seconds
    for ``delay`` seconds, so a client's read timeout never fires. With
    ``refuse_json_schema`` a request whose ``response_format`` is a JSON schema is
    answered HTTP 500, as llama-cpp-python's server does.
    """

    def __init__(
        self,
        *,
        reply: str = '{"items": []}',
        delay: float = 0.0,
        status: int = 200,
        drip: float | None = None,
        refuse_json_schema: bool = False,
    ):
        self.reply = reply
        self.delay = delay
        self.status = status
        self.drip = drip
        self.refuse_json_schema = refuse_json_schema
        self.error_body = '{"error": {"message": "internal error"}}'
        self.received: list[dict[str, Any]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        """Base URL, without the ``/v1`` of the OpenAI API."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def body(self, path: str) -> bytes:
        """The reply to a request for ``path``."""
        if self.status != 200:
            return self.error_body.encode()
        if path.startswith("/api/"):
            message = {"role": "assistant", "content": self.reply}
            done = {"model": "m", "created_at": "2025-01-01T00:00:00Z", "done": True}
            return json.dumps({**done, "message": message, "done_reason": "stop"}).encode()
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": self.reply},
            "finish_reason": "stop",
        }
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        completion = {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
        return json.dumps({**completion, "choices": [choice], "usage": usage}).encode()


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            server.received.append(request)
            if server.drip is not None:
                self._drip(server.drip)
                return
            time.sleep(server.delay)
            status = server.status
            if server.refuse_json_schema and _asks_json_schema(request):
                status = 500
            body = server.body(self.path) if status == 200 else server.error_body.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client stopped waiting

        def _drip(self, every: float) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            until = time.monotonic() + server.delay
            try:
                while time.monotonic() < until:
                    self.wfile.write(b"1\r\n \r\n")
                    self.wfile.flush()
                    time.sleep(every)
            except OSError:
                pass  # the client stopped waiting
            self.close_connection = True

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def _asks_json_schema(request: dict[str, Any]) -> bool:
    response_format = request.get("response_format")
    return isinstance(response_format, dict) and response_format.get("type") == "json_schema"


@contextmanager
def model_server(**fields: Any) -> Iterator[ModelServer]:
    """Run a :class:`ModelServer` in a daemon thread for the ``with`` block."""
    server = ModelServer(**fields)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
