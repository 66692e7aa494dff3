"""An alert webhook on 127.0.0.1 for the tests: each POST's JSON body is read and handed, with
the request, to the test's own answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WebhookServer:
    """Answers every POST as ``respond(handler, body)`` does, on threads of its own; ``url``
    is where to post (``path`` on ``port``, 0: any free one). ``keep_alive``: HTTP/1.1, one
    connection for several requests, as an API client keeps it. A client that stops waiting
    (its timeout) before the answer is written is no error of the server's. Closed by
    ``close`` or on leaving a ``with`` block."""

    def __init__(self, respond: Callable[[BaseHTTPRequestHandler, dict], None], *,
                 port: int = 0, path: str = "/hook", keep_alive: bool = False):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                try:
                    respond(self, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped waiting: nothing was answered

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
