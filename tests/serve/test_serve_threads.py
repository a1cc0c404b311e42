"""Waiting costs no thread: streaming chat requests and Reader requests in flight together add no thread
each (the engine's callbacks reach the event loop through `call_soon_threadsafe`; the Reader's pipeline is
driven from the loop, its pages rendered on the shared worker pool)."""

from __future__ import annotations

import base64
import json
import socket
import threading

import httpx
from serve_helpers import LiveServer, gated_service, page_image, pdf_bytes, png_bytes, wait_for

from jocr.serve.app import create_app

CHATS, READERS, PAGES = 6, 3, 3


def _chat_body(stream: bool) -> dict:
    data = base64.b64encode(png_bytes(page_image(0))).decode()
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    return {"messages": [{"role": "user", "content": [part]}], "stream": stream}


def _send(port: int, path: str, body: dict) -> socket.socket:
    """A request on a raw socket: no client thread, so every new thread counted is the server's."""
    raw = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(raw)}\r\nConnection: close\r\n\r\n"
    ).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    sock.sendall(head + raw)
    return sock


def _response(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    sock.close()
    return b"".join(chunks)


def test_requests_in_flight_hold_no_thread_each(tiny_model, tokenizer):
    capacity = CHATS + READERS * PAGES
    service, gate = gated_service(tiny_model, tokenizer, max_batch=2, max_queue=capacity - 2)
    server = LiveServer(create_app(service.config, service))
    scheduler = service.generator.scheduler
    pdf = {"pdf": base64.b64encode(pdf_bytes([page_image(i) for i in range(PAGES)])).decode()}
    try:
        gate.set()
        with httpx.Client(base_url=server.url, timeout=60) as client:  # the pools' first threads start
            assert client.post("/v1/chat/completions", json=_chat_body(False)).status_code == 200
            assert client.post("/", json=pdf).status_code == 200
        gate.clear()
        before = threading.active_count()
        socks = [_send(server.port, "/v1/chat/completions", _chat_body(True)) for _ in range(CHATS)]
        socks += [_send(server.port, "/", pdf) for _ in range(READERS)]
        # Every page of every request is in the engine (the decode thread waits at the gate).
        wait_for(lambda: scheduler.queue_depth + scheduler.active == capacity, timeout=60)
        during = threading.active_count()
        gate.set()
        answers = [_response(s) for s in socks]
    finally:
        gate.set()
        server.stop()
        service.close()
    # The worker pool may still start its second thread; one waiter thread per request would add 9.
    assert during - before <= service.config.preprocess_workers, (before, during)
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers)
    assert all(b"data: [DONE]" in a for a in answers[:CHATS])
    assert all(b"X-Pages: 3" in a or b"x-pages: 3" in a for a in answers[CHATS:])
