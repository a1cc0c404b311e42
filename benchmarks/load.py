"""Load test of `jocr serve` on loopback: one-at-a-time requests against many concurrent ones.

Starts `jocr serve` as a subprocess on an ephemeral loopback port (the bundled models/ when present, else a
tiny random model saved to a temporary directory), then:

  1. sequential: N_seq chat requests one at a time (the baseline: no batching);
  2. concurrent: N requests at concurrency C (default 200 at 32) sharing the engine's continuous batching.
     With a bounded queue (max_batch + max_queue < C) the server refuses the excess with 429 + Retry-After;
     the client honours Retry-After up to --retries times.

  3. with --hostile: the hostile mix, the same good requests interleaved with as many hostile ones
     (`hostile_cases`: bodies that once froze, crashed or bloated the server, SSRF forms, bad headers, DNS
     rebinding, and web pages served by a loopback site the server may fetch from: a script spinning
     forever read by a client that gives up, canvases printing to a PDF over the limit, typed arrays over
     the renderer's memory limit, `window.print()`, poster pages through /v1/pages and screenshots) at the
     same concurrency. Every good request must succeed (200, 429 retried) and every hostile one must get
     one of its expected statuses; prints the server's peak RSS (VmHWM) before and after the mix, the
     browser processes' peak RSS (sampled), /health latency during the mix, and the renderer processes
     left after it: beyond the idle count before the mix, or burning CPU when idle, they are leaked (must
     be 0).

Every response must be 200 or 429: any 5xx, other status or transport error fails the run (exit 1). Prints
a table with pages/s, latency percentiles and the batching gain (concurrent pages/s / sequential pages/s).

    .venv/bin/python benchmarks/load.py                       # defaults: 200 requests at concurrency 32
    .venv/bin/python benchmarks/load.py --requests 50 --concurrency 8 --max-tokens 32
    .venv/bin/python benchmarks/load.py --hostile --requests 64 --sequential 4
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parents[1]


def page_png(i: int) -> bytes:
    """A small synthetic text page, different per i."""
    image = Image.new("RGB", (480 + 16 * (i % 5), 360), "white")
    draw = ImageDraw.Draw(image)
    for line in range(8):
        draw.text((24, 20 + line * 40), f"Page {i} line {line}: total {i * 37 + line} units", fill="black")
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _png(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("L", size, 255).save(buf, format="PNG")
    return buf.getvalue()


def _poster_pdf(pages: int) -> bytes:
    """Pages of 14,400 x 14,400 pt (a 200 px image at 1 dpi): each renders at the server's pixel cap."""
    buf = io.BytesIO()
    frames = [Image.new("L", (200, 200), 255) for _ in range(pages)]
    frames[0].save(buf, format="PDF", save_all=True, append_images=frames[1:], resolution=1.0)
    return buf.getvalue()


# Web pages the hostile mix asks the server to read, served from loopback (the server is started with
# --allow-fetch-host for that port only).
HOSTILE_PAGES = {
    "/plain.html": b"<title>Plain</title><h1>A plain page</h1><p>Read before the mix.</p>",
    "/spin.html": b"<title>Spin</title><p>x</p><script>while (true) {}</script>",
    # Random canvases print to a PDF of ~4 MB a page (20 pages: ~86 MB, over the 64 MiB limit).
    "/canvas.html": b"""<style>canvas{display:block;width:100%;page-break-after:always}</style><script>
for (let k = 0; k < 20; k++) { const c = document.createElement("canvas"); c.width = c.height = 1200;
const g = c.getContext("2d"), im = g.createImageData(1200, 1200), d = new Uint32Array(im.data.buffer);
for (let i = 0; i < d.length; i++) d[i] = (Math.random() * 4294967296) | 0xff000000;
g.putImageData(im, 0, 0); document.documentElement.appendChild(c); }</script>""",
    "/arrays.html": b"""<title>Arrays</title><script>let kept = [], mb = 0;
try { for (let i = 0; i < 128; i++) { kept.push(new Uint8Array(16 << 20).fill(1)); mb += 16; } }
catch (e) {} document.title = "allocated " + mb;</script>""",
    "/print.html": b"<title>Print</title><h1>Printed anyway</h1><script>window.print()</script>",
}


def start_site() -> tuple[object, int]:
    """A loopback HTTP server of HOSTILE_PAGES (text/html); (server, port)."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 (http.server's naming)
            body = HOSTILE_PAGES.get(self.path.split("?", 1)[0])
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, httpd.server_address[1]


# A hostile case: (name, method, path, body, headers, expected statuses, client timeout or None). A client
# timeout makes the client give up at that time (the status is then "gone", which must be expected).
GONE = 0


def hostile_cases(site_port: int) -> list[tuple]:
    """The hostile inputs of docs/serving.md; `site_port`: the loopback site of HOSTILE_PAGES."""
    import json

    def chat(url: str, **extra) -> dict:
        parts = [{"type": "image_url", "image_url": {"url": url}}]
        return {"messages": [{"role": "user", "content": parts}], **extra}

    def data_url(data: bytes) -> str:
        return "data:image/png;base64," + base64.b64encode(data).decode()

    small = data_url(page_png(0))
    big = data_url(_png((6000, 6000)))  # 36 Mpx, a few kB
    pdf = base64.b64encode(_poster_pdf(20)).decode()
    page_pdf = base64.b64encode(_poster_pdf(1)).decode()
    j = lambda obj: json.dumps(obj).encode()  # noqa: E731
    metadata = (
        b'{"messages": [], "metadata": {' + b",".join(b'"k%d": "v"' % i for i in range(3_300_000)) + b"}}"
    )
    eight = {
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": big}}] * 8}]
    }
    chat_path = "/v1/chat/completions"
    cases = [
        ("JSON nested 100,000 deep", "POST", chat_path, b"[" * 100_000, {}, 400),
        ("3.3 million metadata keys", "POST", chat_path, metadata, {}, 400),
        (
            "10 MB prompt",
            "POST",
            chat_path,
            j({"messages": [{"role": "user", "content": "x" * 10_000_000}]}),
            {},
            400,
        ),
        ("temperature 1e-40", "POST", chat_path, j(chat(small, temperature=1e-40)), {}, 400),
        ("seed 2**63", "POST", chat_path, j(chat(small, seed=2**63, temperature=0.5)), {}, 400),
        ("8 PNGs of 36 Mpx", "POST", chat_path, j(eight), {}, 413),
        ("Reader: 20 pages of 14,400 pt", "POST", "/", j({"pdf": pdf}), {}, 413),
        ("Reader: X-Page superscript", "POST", "/", j({"pdf": page_pdf}), {"X-Page": "\u00b2".encode()}, 400),
        ("Reader: X-Page 5,000 digits", "POST", "/", j({"pdf": page_pdf}), {"X-Page": "9" * 5000}, 400),
        ("Reader: filename not a string", "POST", "/", j({"pdf": page_pdf, "filename": 5}), {}, 400),
        ("Reader: /robots.txt", "GET", "/robots.txt", b"", {}, 404),
        (
            "SSRF ::ffff:0:169.254.169.254",
            "POST",
            chat_path,
            j(chat("http://[::ffff:0:169.254.169.254]/")),
            {},
            400,
        ),
        ("SSRF 64:ff9b:1::a9fe:a9fe", "POST", chat_path, j(chat("http://[64:ff9b:1::a9fe:a9fe]/")), {}, 400),
        ("cross-site POST", "POST", chat_path, j(chat(small)), {"Origin": "https://evil.example"}, 403),
    ]
    site = f"http://127.0.0.1:{site_port}"
    poster = {"pdf": page_pdf}  # one 200 x 200 inch page: renders at the 40 Mpx cap
    nat64 = f"http://[64:ff9b::7f00:1]:{site_port}/"
    shot = {"X-Respond-With": "screenshot"}
    new = [
        ("DNS rebinding GET", "GET", "/v1/models", b"", {"Host": "evil.example"}, 403),
        ("cross-site GET", "GET", "/v1/models", b"", {"Sec-Fetch-Site": "cross-site"}, 403),
        ("UTF-16 JSON", "POST", chat_path, json.dumps(chat(small)).encode("utf-16"), {}, 400),
        ('max_tokens "5"', "POST", chat_path, j(chat(small, max_tokens="5")), {}, 400),
        ("SSRF NAT64 form of the allowed site", "POST", chat_path, j(chat(nat64)), {}, 400),
        ("/v1/pages: 200 x 200 inch page", "POST", "/v1/pages", j(poster), {}, (200, 429)),
        ("Reader screenshot: 200 x 200 inch page", "POST", "/", j(poster), shot, (200, 429)),
        (
            "web: spinning script, client gone at 4.6 s",
            "GET", f"/{site}/spin.html", b"", {"X-Timeout": "5"}, (GONE, 504, 429), 4.6,
        ),
        (
            "web: canvases printing over the PDF limit",
            "POST", "/v1/pages", j({"url": f"{site}/canvas.html"}), {}, (413, 504, 429),
        ),
        (
            "web: typed arrays over the memory limit",
            "GET", f"/{site}/arrays.html", b"", shot, (200, 502, 429),
        ),
        ("web: window.print()", "POST", "/v1/pages", j({"url": f"{site}/print.html"}), {}, (200, 429)),
    ]  # fmt: skip
    return [
        (*case[:5], case[5] if isinstance(case[5], tuple) else (case[5],), case[6] if len(case) > 6 else None)
        for case in cases + new
    ]


def peak_rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident set size of a process in MiB, from /proc (Linux)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def browser_rss_mb(server_pid: int) -> tuple[float, float, dict[int, str]]:
    """(sum of RSS, largest single VmHWM) in MiB of the Chromium processes below the server, and their
    pid -> type."""
    from jocr.documents.browser import chromium_processes

    processes = chromium_processes(server_pid)
    total = peak = 0.0
    for pid in processes:
        try:
            rss, hwm = peak_rss_mb(pid)
        except (OSError, KeyError, ValueError):  # gone meanwhile
            continue
        total += rss
        peak = max(peak, hwm)
    return total, peak, processes


def renderer_cpu_s(processes: dict[int, str]) -> float:
    """CPU seconds (user + system) the renderer processes among `processes` have used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid, kind in processes.items():
        if kind != "renderer":
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


class Sampler:
    """Samples the browser's RSS and /health latency every `interval` s in a thread until `stop()`."""

    def __init__(self, url: str, server_pid: int, interval: float = 0.25):
        self.url, self.server_pid, self.interval = url, server_pid, interval
        self.browser_total = self.browser_single = 0.0
        self.health: list[float] = []
        self.health_errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.wait(self.interval):
                total, single, _ = browser_rss_mb(self.server_pid)
                self.browser_total = max(self.browser_total, total)
                self.browser_single = max(self.browser_single, single)
                start = time.perf_counter()
                try:
                    ok = client.get(self.url + "/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    self.health.append(time.perf_counter() - start)
                else:
                    self.health_errors += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def prepare_model(model: str | None, workdir: Path) -> tuple[Path, str]:
    if model:
        return Path(model), "given"
    bundled = ROOT / "models"
    if (bundled / "config.json").is_file():
        return bundled, "bundled"
    import torch

    from jocr.config import OCRConfig
    from jocr.model import OCRModel
    from jocr.tokenizer import Tokenizer

    torch.manual_seed(0)
    out = workdir / "tiny-random"
    OCRModel(OCRConfig.preset("tiny")).init_weights(seed=0).save_pretrained(out)
    Tokenizer.byte_level().save(out / "tokenizer.json")
    return out, "tiny random (no bundled model)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model_dir: Path, port: int, args, log_path: Path, site_port: int) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "jocr", "serve", "--model", str(model_dir), "--port", str(port),
        "--max-batch", str(args.max_batch), "--max-queue", str(args.max_queue), "--log-level", "warning",
        "--allow-fetch-host", f"127.0.0.1:{site_port}",
    ]  # fmt: skip
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "JOCR_API_KEY": ""})
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.terminate()
            raise SystemExit("server did not start within 120 s")
        time.sleep(0.2)


class Phase:
    def __init__(self, name: str):
        self.name = name
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.first_try_429 = 0
        self.errors: list[str] = []
        self.tokens = 0
        self.elapsed = 0.0

    def row(self, baseline: float | None) -> list[str]:
        done = self.statuses.get(200, 0)
        pps = done / self.elapsed if self.elapsed else 0.0
        lat = sorted(self.latencies) or [0.0]

        def pct(q: float) -> float:
            return lat[min(len(lat) - 1, int(q * len(lat)))]

        other = sum(n for s, n in self.statuses.items() if s not in (200, 429))
        gain = f"{pps / baseline:.2f}x" if baseline else "1.00x"
        return [
            self.name, str(sum(self.statuses.values())), str(done), str(self.first_try_429),
            str(self.statuses.get(429, 0)), str(other + len(self.errors)), f"{self.elapsed:.1f}",
            f"{pps:.2f}", f"{self.tokens / self.elapsed if self.elapsed else 0:.0f}",
            f"{pct(0.5):.2f}", f"{pct(0.95):.2f}", gain,
        ]  # fmt: skip


async def run_phase(
    url: str, name: str, n: int, concurrency: int, args, images: list[str], hostile: list | None = None
) -> Phase:
    """n good requests at `concurrency`; with `hostile`, n hostile ones interleaved (request 2i+1 is
    hostile case i mod len(hostile)), each of which must get its expected status (else an error)."""
    phase = Phase(name)
    phase.hostile = {}  # case name -> statuses seen
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def one(i: int, client: httpx.AsyncClient) -> None:
        body = {
            "model": args.model_id,
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": images[i]}}]}
            ],
            "max_tokens": args.max_tokens,
        }
        async with sem:
            for attempt in range(args.retries + 1):
                start = time.perf_counter()
                try:
                    response = await client.post(url + "/v1/chat/completions", json=body)
                except httpx.HTTPError as exc:
                    phase.errors.append(f"{type(exc).__name__}: {exc}")
                    return
                if response.status_code == 429:
                    if attempt == 0:
                        phase.first_try_429 += 1
                    if attempt < args.retries:
                        await asyncio.sleep(float(response.headers.get("retry-after", "1")))
                        continue
                phase.statuses[response.status_code] = phase.statuses.get(response.status_code, 0) + 1
                if response.status_code == 200:
                    phase.latencies.append(time.perf_counter() - start)
                    phase.tokens += response.json()["usage"]["completion_tokens"]
                elif response.status_code != 429:
                    phase.errors.append(f"HTTP {response.status_code}: {response.text[:200]}")
                return

    async def bad(i: int, client: httpx.AsyncClient) -> None:
        name, method, path, body, headers, want, give_up_s = hostile[i % len(hostile)]
        text = ""
        async with sem:
            try:
                response = await client.request(
                    method,
                    url + path,
                    content=body or None,
                    headers=headers,
                    timeout=give_up_s or args.request_timeout,
                )
                status, text = response.status_code, response.text[:200]
            except httpx.TimeoutException as exc:
                if give_up_s is None:
                    phase.errors.append(f"{name}: {type(exc).__name__}: {exc}")
                    return
                status = GONE  # the client gave up, as the case asks
            except httpx.HTTPError as exc:
                phase.errors.append(f"{name}: {type(exc).__name__}: {exc}")
                return
        phase.hostile.setdefault(name, []).append(status)
        if status not in want:
            phase.errors.append(f"{name}: HTTP {status} (expected one of {want}): {text}")

    start = time.perf_counter()
    async with httpx.AsyncClient(timeout=args.request_timeout, limits=limits) as client:
        tasks = []
        for i in range(n):
            tasks.append(asyncio.create_task(one(i, client)))
            if hostile:
                tasks.append(asyncio.create_task(bad(i, client)))
        _done, pending = await asyncio.wait(tasks, timeout=args.phase_timeout)
        for task in pending:
            task.cancel()
        if pending:
            phase.errors.append(
                f"{len(pending)} requests unfinished after the {args.phase_timeout:g} s phase limit"
            )
            await asyncio.gather(*pending, return_exceptions=True)
    phase.elapsed = time.perf_counter() - start
    return phase


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", help="model directory (default: bundled models/, else tiny random)")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sequential", type=int, default=16, help="one-at-a-time requests for the baseline")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--max-queue", type=int, default=24)
    parser.add_argument("--retries", type=int, default=3, help="retries of a 429, after its Retry-After")
    parser.add_argument("--threads", type=int, default=0, help="server torch threads (0: torch's default)")
    parser.add_argument("--request-timeout", type=float, default=120.0)
    parser.add_argument("--phase-timeout", type=float, default=600.0)
    parser.add_argument("--hostile", action="store_true", help="add the hostile mix phase (see above)")
    args = parser.parse_args()

    site, site_port = start_site()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir, origin = prepare_model(args.model, Path(tmp))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server(model_dir, port, args, Path(tmp) / "server.log", site_port)
        try:
            args.model_id = httpx.get(url + "/v1/models").json()["data"][0]["id"]
            images = [
                "data:image/png;base64," + base64.b64encode(page_png(i)).decode()
                for i in range(max(args.requests, args.sequential))
            ]
            # Warm-up: first-call costs (allocator, kernels) stay out of both phases.
            asyncio.run(run_phase(url, "warm-up", 2, 1, args, images))
            seq = asyncio.run(run_phase(url, "sequential", args.sequential, 1, args, images))
            name = f"concurrency {args.concurrency}"
            conc = asyncio.run(run_phase(url, name, args.requests, args.concurrency, args, images))
            rss_before = peak_rss_mb(proc.pid)
            mixed = None
            if args.hostile:
                # A plain web page first: Chromium started, its idle renderers counted.
                warm = httpx.post(
                    url + "/v1/pages", json={"url": f"http://127.0.0.1:{site_port}/plain.html"}, timeout=120
                )
                if warm.status_code != 200:
                    raise SystemExit(f"web warm-up failed: HTTP {warm.status_code}: {warm.text[:300]}")
                time.sleep(2)
                idle_before = sum(1 for k in browser_rss_mb(proc.pid)[2].values() if k == "renderer")
                name = f"hostile mix, concurrency {args.concurrency}"
                cases = hostile_cases(site_port)
                sampler = Sampler(url, proc.pid)
                try:
                    mixed = asyncio.run(
                        run_phase(url, name, args.requests, args.concurrency, args, images, cases)
                    )
                finally:
                    sampler.stop()
                rss_after = peak_rss_mb(proc.pid)
                # Every context is closed within the close timeout (10 s); then renderers must be idle.
                time.sleep(15)
                processes = browser_rss_mb(proc.pid)[2]
                idle_after = sum(1 for k in processes.values() if k == "renderer")
                cpu_start = renderer_cpu_s(processes)
                time.sleep(5)
                busy_cpu = renderer_cpu_s(browser_rss_mb(proc.pid)[2]) - cpu_start
                # A spinning renderer burns about 1 CPU second a second.
                leaked = max(0, idle_after - idle_before) + (1 if busy_cpu > 1.0 else 0)
            health = httpx.get(url + "/health").json()
        finally:
            proc.terminate()
            proc.wait(30)
            site.shutdown()

    threads = args.threads or "default"
    print(f"model: {model_dir} ({origin}); max_tokens {args.max_tokens}; server threads {threads}, "
          f"max_batch {args.max_batch}, "
          f"max_queue {args.max_queue} (capacity {args.max_batch + args.max_queue}); "
          f"client retries a 429 up to {args.retries} times")  # fmt: skip
    header = ["phase", "requests", "200", "429 first try", "429 final", "errors", "wall s", "pages/s",
              "tokens/s", "p50 s", "p95 s", "gain"]  # fmt: skip
    seq_pps = seq.statuses.get(200, 0) / seq.elapsed if seq.elapsed else None
    rows = [header, seq.row(None), conc.row(seq_pps)] + ([mixed.row(seq_pps)] if mixed else [])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for k, r in enumerate(rows):
        print(" | ".join(c.rjust(w) for c, w in zip(r, widths)))
        if k == 0:
            print("-+-".join("-" * w for w in widths))
    print(f"health after the run: {health}")
    print(f"server RSS after the normal phases: {rss_before[0]:.0f} MiB (peak {rss_before[1]:.0f} MiB)")
    if mixed:
        for case, statuses in mixed.hostile.items():
            print(f"  hostile: {case}: {sorted(set(statuses))} x{len(statuses)}")
        print(f"server RSS after the hostile mix: {rss_after[0]:.0f} MiB (peak {rss_after[1]:.0f} MiB)")
        print(
            f"browser RSS during the mix (sampled every 0.25 s): all processes up to "
            f"{sampler.browser_total:.0f} MiB; largest single process peak {sampler.browser_single:.0f} MiB"
        )
        lat = sorted(sampler.health) or [0.0]
        print(
            f"/health during the mix: {len(sampler.health)} answered, {sampler.health_errors} failed; "
            f"p50 {lat[len(lat) // 2] * 1000:.0f} ms, p95 {lat[int(0.95 * (len(lat) - 1))] * 1000:.0f} ms, "
            f"max {lat[-1] * 1000:.0f} ms"
        )
        print(
            f"renderers: {idle_before} idle before the mix, {idle_after} after it; renderer CPU over 5 s "
            f"idle: {busy_cpu:.2f} s; leaked renderers: {leaked}"
        )
    failures = seq.errors + conc.errors + (mixed.errors if mixed else [])
    if mixed and leaked:
        failures.append(f"{leaked} leaked renderer(s)")
    for e in failures[:10]:
        print("error:", e)
    unanswered = args.requests - sum(conc.statuses.values())
    if mixed:
        unanswered += args.requests - sum(mixed.statuses.values())
    ok = not failures and unanswered == 0 and health.get("status") == "ok" and health.get("in_flight") == 0
    print("result:", "PASS (every request answered 200 or refused 429; no 5xx)" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
