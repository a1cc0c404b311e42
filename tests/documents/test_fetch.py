"""The safe URL fetcher: refused schemes and addresses (also behind redirects), limits, and connecting to the
address that was checked. A loopback HTTP server stands in for the web; only its exact endpoint is allowed."""

from __future__ import annotations

import gzip
import http.server
import ipaddress
import socket
import threading
import time

import pytest

from jocr.documents import fetch as fetch_mod
from jocr.documents.fetch import (
    FetchError,
    FetchLimits,
    address_refusal,
    decode_base64,
    decode_data_url,
    fetch_url,
)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen_hosts: list[str] = []

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, code: int, body: bytes, ctype: str = "text/plain", extra: dict | None = None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server's naming)
        _Handler.seen_hosts.append(self.headers.get("Host", ""))
        path = self.path
        if path == "/doc.png":
            self._send(200, b"\x89PNG fake", "image/png; charset=binary")
        elif path.startswith("/redirect?to="):
            self._send(302, b"", extra={"Location": path.split("=", 1)[1]})
        elif path.startswith("/hops/"):
            n = int(path.rsplit("/", 1)[1])
            self._send(302, b"", extra={"Location": f"/hops/{n - 1}" if n > 0 else "/doc.png"})
        elif path == "/big-declared":
            self.send_response(200)
            self.send_header("Content-Length", str(10_000_000))
            self.end_headers()
            self.wfile.write(b"x" * 1000)
        elif path == "/big-chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"y" * 4096
            try:
                for _ in range(100):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
        elif path == "/bomb":
            body = gzip.compress(b"\0" * 5_000_000)
            self._send(200, body, "application/octet-stream", {"Content-Encoding": "gzip"})
        elif path == "/slow":
            time.sleep(3)
            self._send(200, b"late")
        elif path == "/missing":
            self._send(404, b"no")
        else:
            self._send(200, b"hello")


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # the fetcher hangs up on capped bodies by design
        pass


@pytest.fixture(scope="module")
def server():
    httpd = _QuietServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def _limits(port: int, **kw) -> FetchLimits:
    return FetchLimits(allowed_endpoints=frozenset({("127.0.0.1", port)}), **kw)


@pytest.mark.parametrize(
    "url, message",
    [
        ("file:///etc/passwd", "scheme 'file'"),
        ("ftp://example.com/x.pdf", "scheme 'ftp'"),
        ("gopher://127.0.0.1:70/", "scheme 'gopher'"),
        ("data:text/plain,hi", "scheme 'data'"),
        ("example.com/x.pdf", "scheme"),
        ("http://127.0.0.1/", "loopback"),
        ("http://127.1.2.3:8080/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fd00:ec2::254]/", "metadata"),
        ("http://100.100.100.200/", "metadata"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
        ("http://10.0.0.1/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://169.254.1.1/", "link-local"),
        ("http://localhost/", "loopback"),
        ("http:///nohost", "host"),
    ],
)
def test_refused_before_connecting(url, message):
    start = time.monotonic()
    with pytest.raises(FetchError) as info:
        fetch_url(url, FetchLimits(timeout_s=5))
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.status == 400
    assert time.monotonic() - start < 2


def test_metadata_refused_even_when_private_allowed():
    with pytest.raises(FetchError, match="metadata"):
        fetch_url("http://169.254.169.254/", FetchLimits(allow_private=True, timeout_s=2))


def test_fetch_from_allowed_endpoint(server):
    got = fetch_url(f"http://127.0.0.1:{server}/doc.png", _limits(server))
    assert got.data == b"\x89PNG fake"
    assert got.content_type == "image/png"
    assert got.final_url == f"http://127.0.0.1:{server}/doc.png"


def test_allowed_host_every_port(server):
    """Port 0 allows every port of one address (`jocr serve --allow-fetch-host 127.0.0.1`); other loopback
    addresses and the metadata endpoints stay refused."""
    limits = FetchLimits(allowed_endpoints=frozenset({("127.0.0.1", 0)}), timeout_s=5)
    assert fetch_url(f"http://127.0.0.1:{server}/doc.png", limits).data == b"\x89PNG fake"
    assert address_refusal(ipaddress.ip_address("127.0.0.1"), 1, limits) is None
    assert "loopback" in address_refusal(ipaddress.ip_address("127.0.0.2"), server, limits)
    metadata = FetchLimits(allowed_endpoints=frozenset({("169.254.169.254", 0)}))
    assert "metadata" in address_refusal(ipaddress.ip_address("169.254.169.254"), 80, metadata)


def test_loopback_refused_without_allowance(server):
    with pytest.raises(FetchError, match="loopback"):
        fetch_url(f"http://127.0.0.1:{server}/doc.png")


def test_allow_private_lets_loopback_through(server):
    got = fetch_url(f"http://127.0.0.1:{server}/doc.png", FetchLimits(allow_private=True))
    assert got.data.startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "target, message",
    [
        ("http://127.0.0.1:1/", "loopback"),  # same host, another port: not the allowed endpoint
        ("http://[::1]/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://10.0.0.1/", "private"),
        ("file:///etc/passwd", "scheme 'file'"),
    ],
)
def test_redirect_to_refused_target(server, target, message):
    with pytest.raises(FetchError, match=message):
        fetch_url(f"http://127.0.0.1:{server}/redirect?to={target}", _limits(server, timeout_s=5))


def test_redirect_chain_and_cap(server):
    got = fetch_url(f"http://127.0.0.1:{server}/hops/3", _limits(server))
    assert got.data.startswith(b"\x89PNG")
    assert got.final_url.endswith("/doc.png")
    with pytest.raises(FetchError, match="too many redirects"):
        fetch_url(f"http://127.0.0.1:{server}/hops/3", _limits(server, max_redirects=2))


@pytest.mark.parametrize("path", ["/big-declared", "/big-chunked", "/bomb"])
def test_byte_cap(server, path):
    with pytest.raises(FetchError, match="too large") as info:
        fetch_url(f"http://127.0.0.1:{server}{path}", _limits(server, max_bytes=100_000))
    assert info.value.status == 413


def test_timeout(server):
    start = time.monotonic()
    with pytest.raises(FetchError, match="timed out") as info:
        fetch_url(f"http://127.0.0.1:{server}/slow", _limits(server, timeout_s=0.5))
    assert info.value.status == 504
    assert time.monotonic() - start < 2.5


def test_upstream_error_status(server):
    with pytest.raises(FetchError, match="HTTP 404"):
        fetch_url(f"http://127.0.0.1:{server}/missing", _limits(server))


def test_connects_to_checked_address_with_original_host(server, monkeypatch):
    """The name is resolved once per hop by the fetcher; the connection goes to that address (no second
    lookup that a rebinding DNS server could answer differently) and the name stays in the Host header."""
    calls = []
    real_getaddrinfo = socket.getaddrinfo

    def fake_getaddrinfo(host, port, *args, **kwargs):
        calls.append(host)
        if host == "docs.example.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(fetch_mod.socket, "getaddrinfo", fake_getaddrinfo)
    _Handler.seen_hosts.clear()
    got = fetch_url(f"http://docs.example.test:{server}/doc.png", _limits(server))
    assert got.data.startswith(b"\x89PNG")
    # One lookup of the name; the socket layer only ever sees the numeric address it was handed.
    assert calls.count("docs.example.test") == 1
    assert set(calls) <= {"docs.example.test", "127.0.0.1"}
    assert _Handler.seen_hosts == [f"docs.example.test:{server}"]


def test_any_private_record_refuses(monkeypatch):
    def fake_getaddrinfo(host, port, *args, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", port)),
        ]

    monkeypatch.setattr(fetch_mod.socket, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(FetchError, match="10.1.2.3 is private"):
        fetch_url("http://mixed.example.test/x.pdf")


def test_unresolvable_host(monkeypatch):
    def fake_getaddrinfo(host, port, *args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(fetch_mod.socket, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(FetchError, match="cannot resolve") as info:
        fetch_url("http://nonexistent.example.test/")
    assert info.value.status == 502


def test_data_url_and_base64():
    assert decode_data_url("data:image/png;base64,aGVsbG8=").data == b"hello"
    assert decode_data_url("data:image/png;base64,aGVsbG8=").content_type == "image/png"
    assert decode_data_url("data:,a%20b").data == b"a b"
    assert decode_base64("aGVs\nbG8") == b"hello"  # whitespace and missing padding tolerated
    assert decode_base64("-_8") == b"\xfb\xff"  # URL-safe alphabet
    with pytest.raises(FetchError, match="invalid base64"):
        decode_base64("not base64 at all!!")
    with pytest.raises(FetchError, match="no comma"):
        decode_data_url("data:image/png;base64")
    with pytest.raises(FetchError, match="too large"):
        decode_data_url("data:image/png;base64," + "A" * 4000, max_bytes=1000)
