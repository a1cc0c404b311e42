"""Forward-pass speed of the model on this machine: vision encoding, prefill and per-token decode.

    .venv/bin/python benchmarks/forward.py                      # tiny (fp32) and the full preset (bf16)
    .venv/bin/python benchmarks/forward.py --presets tiny --repeats 5

The full preset is built directly in bf16 on the meta device and materialised with random weights (about
6.7 GB), used, and freed; its run is kept short (one global view, a few decode steps). Decoding uses the
engine's KV cache, batch 1, greedy. Each number is the median over --repeats runs.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import torch

from jocr.config import OCRConfig
from jocr.engine.cache import KVCache
from jocr.model import OCRModel
from jocr.types import PageViews


def build(preset: str, dtype: torch.dtype) -> OCRModel:
    config = OCRConfig.preset(preset)
    with torch.device("meta"):
        model = OCRModel(config)
    model = model.to(dtype).to_empty(device="cpu")  # allocate once, directly in the target dtype
    return model.init_weights(seed=0).eval()


def timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def bench(preset: str, dtype: torch.dtype, repeats: int, decode_tokens: int, grid: tuple[int, int]) -> dict:
    model = build(preset, dtype)
    config = model.config
    v = config.vision
    tiled = grid != (1, 1)
    g = torch.Generator().manual_seed(0)
    tiles = torch.randn(grid[0] * grid[1], 3, v.tile_size, v.tile_size, generator=g) if tiled else None
    pv = PageViews(torch.randn(3, v.base_size, v.base_size, generator=g), tiles, grid)
    n_image = config.image_token_count(grid, tiled)
    text = torch.randint(10, min(config.decoder.vocab_size, 250), (12,), generator=g)
    image = torch.full((n_image,), config.image_token_id)
    ids = torch.cat([torch.tensor([config.bos_token_id]), image, text])[None]  # (1, T)
    t = ids.shape[1]
    max_len = t + decode_tokens + 1
    positions = torch.arange(t)[None]

    with torch.inference_mode():
        vision_s, embeds = timed(lambda: model.encode_images([pv]), repeats)
        inputs = model.embed(ids, [embeds])

        def prefill():
            cache = KVCache(1, max_len, dtype=dtype)
            out = model.decode(inputs, positions, cache.view(0, 1), num_logits_to_keep=1)
            return cache, out

        prefill_s, (cache, out) = timed(prefill, repeats)
        token = out.logits[:, -1].argmax(-1, keepdim=True)  # (1, 1)
        step_times = []
        for i in range(decode_tokens):
            pos = torch.tensor([[t + i]])
            start = time.perf_counter()
            out = model(token, positions=pos, cache=cache.view(0, 1))
            step_times.append(time.perf_counter() - start)
            token = out.logits[:, -1].argmax(-1, keepdim=True)
    params = sum(p.numel() for p in model.parameters())
    decode_s = statistics.median(step_times)
    return {
        "preset": preset,
        "dtype": str(dtype).replace("torch.", ""),
        "params": params,
        "image_tokens": n_image,
        "prefill_tokens": t,
        "vision_s": vision_s,
        "prefill_s": prefill_s,
        "prefill_tok_s": t / prefill_s,
        "decode_ms": decode_s * 1e3,
        "decode_tok_s": 1.0 / decode_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="tiny,deepseek-ocr")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decode-tokens", type=int, default=16)
    parser.add_argument("--full-decode-tokens", type=int, default=6, help="decode steps for deepseek-ocr")
    parser.add_argument("--tiled", action="store_true", help="add a 2x2 tile grid to the page")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    rows = []
    for preset in args.presets.split(","):
        full = preset == "deepseek-ocr"
        dtype = torch.bfloat16 if full else torch.float32
        rows.append(
            bench(
                preset,
                dtype,
                repeats=1 if full else args.repeats,
                decode_tokens=args.full_decode_tokens if full else args.decode_tokens,
                grid=(2, 2) if args.tiled else (1, 1),
            )
        )
        gc.collect()  # the full model (about 6.7 GB in bf16) is freed before the next preset
    header = (
        f"{'preset':<14}{'dtype':<10}{'params':>14}{'img tok':>9}{'prefill T':>11}{'vision s':>10}"
        f"{'prefill s':>11}{'prefill tok/s':>15}{'decode ms/tok':>15}{'decode tok/s':>14}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['preset']:<14}{r['dtype']:<10}{r['params']:>14,}{r['image_tokens']:>9}{r['prefill_tokens']:>11}"
            f"{r['vision_s']:>10.3f}{r['prefill_s']:>11.3f}{r['prefill_tok_s']:>15.1f}{r['decode_ms']:>15.2f}"
            f"{r['decode_tok_s']:>14.1f}"
        )


if __name__ == "__main__":
    main()
