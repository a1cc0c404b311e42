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


def test_health_answers_while_worst_case_requests_are_held_in_the_workers(live, api, monkeypatch):
    """The costliest admissible bodies (a 4 MiB prompt, a 4 MiB object, a 36 Mpx image) are parsed and
    decoded in the worker pool, never on the event loop: each body's parse and the image's decode run on a
    pool thread, and every job the pool is given waits at a gate until /health has answered while they
    are held there (a loop frozen by such work would time out). The latency /health keeps under this load
    is measured by `benchmarks/load.py --hostile`, not here."""
    from jocr.serve import app as app_module
    from jocr.serve import service as service_module

    threads_of: dict[str, list[str]] = {}

    def recorded(module, name):
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            threads_of.setdefault(name, []).append(threading.current_thread().name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    recorded(app_module, "load_json_body")
    recorded(app_module, "parse_chat_request")
    recorded(service_module, "decode_data_url")
    service = live.server.config.app.state.service
    pool = service._workers
    gate = threading.Event()
    held = threading.Semaphore(0)
    real_submit = pool.submit

    def gated_submit(fn, *args, **kwargs):
        def job():
            held.release()
            assert gate.wait(60), "the gate was never opened"
            return fn(*args, **kwargs)

        return real_submit(job)

    bodies = _worst_bodies(4 * 1024 * 1024 - 200)
    statuses: list[int] = []

    def hostile(body: bytes) -> None:
        with httpx.Client(base_url=live.url, timeout=120) as client:
            statuses.append(client.post("/v1/chat/completions", content=body).status_code)

    pool.submit = gated_submit
    threads = [threading.Thread(target=hostile, args=(b,)) for b in bodies]
    try:
        for t in threads:
            t.start()
        assert held.acquire(timeout=60), "no request reached the worker pool"
        with httpx.Client(base_url=live.url, timeout=30) as client:
            health = client.get("/health")  # a frozen loop times out here
        assert health.status_code == 200
    finally:
        gate.set()
        pool.submit = real_submit
        for t in threads:
            t.join()
    assert all(s < 500 for s in statuses), statuses
    assert api.get("/health").json()["in_flight"] == 0
    assert sorted(threads_of) == ["decode_data_url", "load_json_body", "parse_chat_request"], threads_of
    on_loop = {name: t for name, names in threads_of.items() for t in names if not t.startswith("jocr-prep")}
    assert not on_loop, f"work on the event loop's thread: {on_loop}"


def test_client_disconnect_releases_the_slot_at_once(live, api, files, caplog):
    """A non-streaming request whose client goes away is cancelled and its slot freed without waiting for
    the generation (or the timeout), with one log line: the generation is cancelled before it is done."""
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
        while (not cancelled or api.get("/health").json()["in_flight"]) and time.monotonic() - closed < 30:
            time.sleep(0.01)
    finally:
        service.generator.cancel = real_cancel
    assert api.get("/health").json()["in_flight"] == 0
    assert cancelled == [False], "the generation was not cancelled before it finished"
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
