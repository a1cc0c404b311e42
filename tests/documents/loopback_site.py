"""A loopback web site for the tests that fetch, render or serve pages: a threaded HTTP server on an
ephemeral 127.0.0.1 port with fixed routes, which records every path it is asked for (a canary site proves
a request was never made). Besides its routes it answers the hostile shapes a fetcher and a browser must
bound: `/loop` redirects to itself, `/redirect?to=URL` redirects there, `/huge.png` and `/endless.html`
never end (no Content-Length); anything else is a 404."""

from __future__ import annotations

import http.server
import threading
import time


class LoopbackSite:
    """`routes` maps a path to (body, content type); `.url`, `.port`, `.hits`; `close()` stops it."""

    def __init__(self, routes: dict[str, tuple[bytes, str]] | None = None):
        self.routes = dict(routes or {})
        self.hits: list[str] = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 (http.server's naming)
                site.hits.append(self.path)
                site.answer(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def answer(self, request: http.server.BaseHTTPRequestHandler) -> None:
        path = request.path
        if path == "/loop" or path.startswith("/redirect?to="):
            request.send_response(302)
            request.send_header("Location", "/loop" if path == "/loop" else path.split("=", 1)[1])
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        if path in ("/endless.html", "/huge.png"):
            html = path.endswith(".html")
            request.send_response(200)
            request.send_header("Content-Type", "text/html" if html else "image/png")
            request.end_headers()
            try:
                if html:
                    request.wfile.write(b"<title>Endless</title>")
                while True:
                    request.wfile.write(b"<p>more</p>" if html else b"\0" * 65536)
                    if html:
                        time.sleep(0.05)
            except OSError:  # the client gave up: the point of these routes
                return
        body, ctype = self.routes.get(path, (b"missing", "text/plain"))
        request.send_response(200 if path in self.routes else 404)
        request.send_header("Content-Type", ctype)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
