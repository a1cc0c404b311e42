"""Hostile requests do not hurt others: /health stays fast while the worst admissible requests are admitted,
a client that goes away frees its slot at once, and /v1/pages sits behind admission like every route."""

from __future__ import annotations

import base64
import io
import json
import logging
import socket
import threading
import time

import httpx
from PIL import Image


def _chat(url: str, **extra) -> dict:
    return {
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}],
        **extra,
    }


def _big_png(pixels: int) -> bytes:
    """A valid image of about `pixels` pixels that compresses to little (a small body, a large decode)."""
    side = int(pixels**0.5)
    buf = io.BytesIO()
    Image.new("L", (side, side), 255).save(buf, format="PNG")
    return buf.getvalue()


def _worst_bodies(limit: int) -> list[bytes]:
    """The costliest bodies the live server (4 MiB body limit, 40 Mpx images) admits or must parse."""
    prompt = {"messages": [{"role": "user", "content": "p" * (limit - 100)}]}
    values = b'{"metadata": {' + b'"k": 1,' * (limit // 8 - 4) + b'"k": 1}}'
    image = _chat("data:image/png;base64," + base64.b64encode(_big_png(36_000_000)).decode(), max_tokens=4)
    return [json.dumps(prompt).encode(), values, json.dumps(image).encode()] * 2


def _health_latency(api) -> float:
    start = time.perf_counter()
    assert api.get("/health").status_code == 200
    return time.perf_counter() - start


def test_health_answers_within_100_ms_while_worst_case_requests_are_admitted(live, api):
    """/health answers during the hostile requests (90th percentile) take under 100 ms more than the slowest
    answer of the idle server measured just before (on a quiet machine that is a few ms; the idle baseline
    keeps a shared, overloaded machine's scheduling noise out of the verdict), and none is frozen. A request
    parsed, tokenised or decoded on the event loop freezes it for seconds (8.8 s for a 10 MB prompt)."""
    idle = []
    for _ in range(20):
        idle.append(_health_latency(api))
        time.sleep(0.01)
    bodies = _worst_bodies(4 * 1024 * 1024 - 200)
    statuses: list[int] = []

    def hostile(body: bytes) -> None:
        with httpx.Client(base_url=live.url, timeout=120) as client:
            statuses.append(client.post("/v1/chat/completions", content=body).status_code)

    threads = [threading.Thread(target=hostile, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    latencies = []
    while any(t.is_alive() for t in threads):
        latencies.append(_health_latency(api))
        time.sleep(0.01)
    for t in threads:
        t.join()
    assert len(latencies) >= 5, "the hostile requests finished before /health was measured"
    latencies.sort()
    p90 = latencies[int(len(latencies) * 0.9)]
    assert p90 < 0.1 + max(idle), (latencies[-5:], max(idle))
    # No freeze at all: the event loop work per request is bounded (measured: ~0.3 s at worst with a
    # machine load of 18 on 2 cores, from GIL hand-offs between the server's threads and the test's own).
    assert latencies[-1] < 1.0, latencies[-5:]
    assert all(s < 500 for s in statuses), statuses
    assert api.get("/health").json()["in_flight"] == 0


def test_client_disconnect_releases_the_slot_at_once(live, api, files, caplog):
    """A non-streaming request whose client goes away is cancelled and its slot freed without waiting for
    the generation (or the timeout), with one log line."""
    caplog.set_level(logging.INFO, logger="jocr.serve")
    body = json.dumps(_chat(files["url"] + "/page.png", max_tokens=256, temperature=0.7, seed=1)).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    service = live.server.config.app.state.service
    cancelled = []
    real_cancel = service.generator.cancel

    def cancel(handle) -> None:
        cancelled.append(handle.done)
        real_cancel(handle)

    service.generator.cancel = cancel
    try:
        with socket.create_connection(("127.0.0.1", live.port)) as sock:
            sock.sendall(head + body)
            deadline = time.monotonic() + 30
            while service.generator.scheduler.active == 0 and time.monotonic() < deadline:
                time.sleep(0.005)  # until the generation is decoding
            assert api.get("/health").json()["in_flight"] == 1
        closed = time.monotonic()
        while api.get("/health").json()["in_flight"] and time.monotonic() - closed < 5:
            time.sleep(0.01)
        released_after = time.monotonic() - closed
        while not cancelled and time.monotonic() - closed < 5:
            time.sleep(0.01)
    finally:
        service.generator.cancel = real_cancel
    assert api.get("/health").json()["in_flight"] == 0
    assert released_after < 1.0, released_after
    assert cancelled, "the generation was not cancelled"
    assert 'status="499"' in api.get("/metrics").text
    gone = [r for r in caplog.records if "client disconnected" in r.getMessage()]
    assert len(gone) == 1 and "\n" not in gone[0].getMessage() and gone[0].exc_info is None


def test_pages_route_is_behind_admission(live, api, files):
    service = live.server.config.app.state.service
    capacity = service.admission.capacity
    service.admission.acquire(capacity)
    try:
        response = api.post("/v1/pages", json={"url": files["url"] + "/doc.pdf", "page": 2})
        assert response.status_code == 429, response.text
        assert "Retry-After" in response.headers
    finally:
        service.admission.release(capacity)
    response = api.post("/v1/pages", json={"url": files["url"] + "/doc.pdf", "page": 2})
    assert response.status_code == 200, response.text


def test_same_origin_post_is_accepted(live, api, files):
    """The demo page posts with its own Origin; only other sites are refused (test_serve_hostile.py)."""
    response = api.post("/v1/pages", json={"url": files["url"] + "/doc.pdf"}, headers={"Origin": live.url})
    assert response.status_code == 200, response.text


def _poster_pdf(pages: int) -> bytes:
    """`pages` pages of 14,400 x 14,400 pt (a 200 px image at 1 dpi): each renders at the pixel cap."""
    buf = io.BytesIO()
    frames = [Image.new("L", (200, 200), 255) for _ in range(pages)]
    frames[0].save(buf, format="PDF", save_all=True, append_images=frames[1:], resolution=1.0)
    return buf.getvalue()


def test_pixels_are_budgeted_per_request_before_decoding(live, api):
    """Eight 36-megapixel PNGs (a small body) are over the 80-megapixel request budget: 413, and nothing
    stays reserved. A 20-page poster PDF (3.9 kB-class body) likewise, before any page is rendered."""
    service = live.server.config.app.state.service
    url = "data:image/png;base64," + base64.b64encode(_big_png(36_000_000)).decode()
    body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}] * 8}]}
    response = api.post("/v1/chat/completions", json=body)
    assert response.status_code == 413, response.text
    assert "per-request limit" in response.json()["error"]["message"]
    # The other images' tasks were cancelled: they release what they reserved (polled, not slept for: on a
    # loaded machine a cancelled task may take longer than any fixed wait to run its cleanup).
    deadline = time.monotonic() + 30
    while service.admission.pixels and time.monotonic() < deadline:
        time.sleep(0.01)
    assert service.admission.pixels == 0
    pdf = base64.b64encode(_poster_pdf(20)).decode()
    response = api.post("/", json={"pdf": pdf})
    assert response.status_code == 413, response.text
    assert "X-Page" in response.json()["error"]["message"]
    assert service.admission.pixels == 0 and api.get("/health").json()["in_flight"] == 0


def test_server_pixel_budget_answers_429(live, api):
    service = live.server.config.app.state.service
    url = "data:image/png;base64," + base64.b64encode(_big_png(4_000_000)).decode()
    taken = service.admission.max_server_pixels - 1_000_000
    service.admission.reserve_pixels(taken)
    try:
        response = api.post("/v1/chat/completions", json=_chat(url, max_tokens=2))
        assert response.status_code == 429, response.text
        assert "decoded pixels in flight" in response.json()["error"]["message"]
    finally:
        service.admission.release_pixels(taken)
    assert api.post("/v1/chat/completions", json=_chat(url, max_tokens=2)).status_code == 200
    assert service.admission.pixels == 0


def test_every_route_that_renders_reserves_its_pixels(live, api):
    """/v1/pages and the Reader's page images (screenshot, pageshot) render through the same admission as
    chat and Reader pages: with the server's pixel budget nearly taken, a poster page is refused (429)."""
    service = live.server.config.app.state.service
    pdf = base64.b64encode(_poster_pdf(1)).decode()
    taken = service.admission.max_server_pixels - 1_000_000
    service.admission.reserve_pixels(taken)
    try:
        response = api.post("/v1/pages", json={"pdf": pdf})
        assert response.status_code == 429, response.text
        for shot in ("screenshot", "pageshot"):
            response = api.post("/", json={"pdf": pdf}, headers={"X-Respond-With": shot})
            assert response.status_code == 429, response.text
    finally:
        service.admission.release_pixels(taken)
    assert service.admission.pixels == 0 and api.get("/health").json()["in_flight"] == 0
    response = api.post("/v1/pages", json={"pdf": pdf})
    assert response.status_code == 200, response.text
    assert service.admission.pixels == 0
