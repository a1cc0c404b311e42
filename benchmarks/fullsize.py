"""The published-size model on this CPU: vision, prefill, decode, FastMTP cost, a whole page, and vLLM.

    .venv/bin/python benchmarks/fullsize.py                       # everything, the full preset
    .venv/bin/python benchmarks/fullsize.py --vllm /path/to/vllm-venv/bin/python
    .venv/bin/python benchmarks/fullsize.py --preset tiny --page-tokens 40   # a quick dry run

The checkpoint is random (seed 0) in the published layout: the `deepseek-ocr` preset (3.4B parameters, 570M
active, FastMTP head on) saved once as bf16 shards of at most 2 GB with `model.safetensors.index.json`, in
--cache (default ~/.cache/jocr/fullsize-<preset>). Every figure is the median of --repeats runs (the whole
page: one run each). Measured in order:

1. the machine: read bandwidth (a 1 GB fp32 sum) and matmul peaks (fp32 and bf16 2048^3 products);
2. the model loaded with --dtype (default auto: fp32 compute over the stored bf16 decoder bytes,
   jocr.model.formats); the fast paths' greedy tokens against the reference path (fp32 products on weights
   upcast per call, no kernel) for --check-tokens tokens: plain decoding and FastMTP k=3 at batch 1;
3. vision s for a 1024 global view and for a 2x3 tiled page (a 1200x1800 image), with their FLOPs (counted by
   torch's FlopCounterMode on the meta device) and the fraction of the fp32 matmul peak;
4. prefill tokens/s (the tiled page's prompt);
5. decode tokens/s at batch 1 and 8 (the engine, speculation off), against the bandwidth bound
   bandwidth / (active parameters x 2 bytes);
6. c(k) = time of a speculative step / time of a plain step (engine steps at fixed k, batch 1), and the
   speedup the published acceptance tau = 2.73 at k = 3 would give (tau / c(3)); the parts of a step
   timed alone, the distinct experts a 4-position verifier pass reads, and c(k)'s floor if every pass
   cost exactly its weight bytes (docs/model.md "Why c(3) <= 1.3 is out of reach at full size");
7. the tiled page end to end with --page-tokens output tokens (EOS and the repetition guard off, so the count
   is exact), speculation off and FastMTP k=3;
8. with --int8: the same decode with int8 weights, and the logits' error against fp32;
9. with --vllm PYTHON: benchmarks/fullsize_vllm.py in that interpreter (vLLM's CPU backend) on the same
   checkpoint, image and prompt ids, then the ratios.
Peak resident memory is printed last; the last line is one JSON object with the headline figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from PIL import Image

from forward import timed  # benchmarks/forward.py: median wall time of repeats
from jocr.config import OCRConfig, tokenizer_image_id
from jocr.documents.preprocess import preprocess_image
from jocr.engine import Engine, EngineConfig, GenerationRequest, GuardConfig
from jocr.model import OCRModel
from jocr.model.formats import PackedLinear, load_formatted
from jocr.model.params import count_parameters

TAU = 2.73  # published FastMTP acceptance length at k = 3 (docs/vllm.md, jina-ocr-v1)
NO_GUARD = GuardConfig(ngram_size=0, loop_detection=False, diversity_window=0)
PAGE_SIZE = (1200, 1800)  # width x height: a 2x3 tile grid under the published preprocessing


def machine(repeats: int) -> dict:
    a = torch.ones(256 * 1024 * 1024)  # 1 GiB fp32
    a.sum()
    read_s, _ = timed(lambda: a.sum(), repeats + 2)
    a = None  # free the buffer
    out = {"bandwidth_gb_s": 1024**3 / read_s / 1e9}
    n = 2048
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        x, w = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        torch.nn.functional.linear(x, w)
        s, _ = timed(lambda x=x, w=w: torch.nn.functional.linear(x, w), repeats)
        out[f"matmul_{name}_gflop_s"] = 2 * n**3 / s / 1e9
    return out


def write_tokenizer(path: Path, config: OCRConfig) -> None:
    """vLLM loads a tokenizer from the checkpoint and checks prompt ids against its size: jocr's byte-level
    tokenizer (special tokens, bytes) padded with filler tokens up to the model's vocabulary. Prompts are
    given as ids and outputs are not detokenized, so the fillers are never read.

    The special tokens the config names (BOS, EOS, pad, `<image>`) sit at the config's ids, the others at the
    lowest free ids. vLLM finds the `<image>` placeholders it expands by the config's image_token_id, and it
    profiles the model at start-up with a prompt made by tokenizing the text "<image>" with this tokenizer
    (vllm/multimodal/processing/processor.py, get_dummy_inputs): with `<image>` anywhere else (the published
    preset's is 128815, not 3) nothing matches and vLLM stops on an assertion."""
    from tokenizers import AddedToken, decoders, models, pre_tokenizers
    from tokenizers import Tokenizer as HFTokenizer

    from jocr.tokenizer import BOS_TOKEN, EOS_TOKEN, IMAGE_TOKEN, PAD_TOKEN, SPECIAL_TOKENS

    vocab_size = config.decoder.vocab_size
    vocab = {
        BOS_TOKEN: config.bos_token_id,
        EOS_TOKEN: config.eos_token_id,
        PAD_TOKEN: config.pad_token_id,
        IMAGE_TOKEN: config.image_token_id,
    }
    if len(set(vocab.values())) != len(vocab) or not all(0 <= i < vocab_size for i in vocab.values()):
        raise ValueError(f"special token ids {vocab} must be distinct, below vocab_size {vocab_size}")
    taken = set(vocab.values())
    free = [i for i in range(vocab_size) if i not in taken]
    rest = [t for t in SPECIAL_TOKENS if t not in vocab] + sorted(pre_tokenizers.ByteLevel.alphabet())
    if len(rest) > len(free):
        raise ValueError(f"a vocabulary of {vocab_size} is too small for {len(vocab) + len(rest)} tokens")
    vocab.update(zip(rest, free))
    vocab.update({f"<filler_{i}>": i for i in free[len(rest) :]})
    hf = HFTokenizer(models.BPE(vocab=vocab, merges=[]))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    hf.save(str(path))


def ensure_checkpoint(preset: str, cache: Path) -> Path:
    """The random checkpoint (and a tokenizer of its vocabulary size), built once. A tokenizer whose `<image>`
    is not the config's image_token_id (written before write_tokenizer placed it) is written again."""
    if not (
        (cache / "config.json").is_file()
        and ((cache / "model.safetensors.index.json").is_file() or (cache / "model.safetensors").is_file())
    ):
        print(f"building the random {preset} checkpoint in {cache} (once) ...", flush=True)
        with torch.device("meta"):
            model = OCRModel(OCRConfig.preset(preset))
        model = model.to(torch.bfloat16).to_empty(device="cpu").init_weights(seed=0)  # no fp32 copy
        model.save_pretrained(cache, dtype="bfloat16", max_shard_size="2GB")
        del model
        gc.collect()
    config = OCRConfig.load(cache)
    if not (cache / "tokenizer.json").is_file() or tokenizer_image_id(cache) != config.image_token_id:
        write_tokenizer(cache / "tokenizer.json", config)
    return cache


def page_image(seed: int = 0) -> Image.Image:
    g = torch.Generator().manual_seed(seed)
    pixels = torch.randint(0, 256, (PAGE_SIZE[1] // 8, PAGE_SIZE[0] // 8, 3), generator=g, dtype=torch.uint8)
    return Image.fromarray(pixels.numpy()).resize(PAGE_SIZE, Image.NEAREST)


def text_ids(config: OCRConfig, n: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    vocab = min(config.decoder.vocab_size, 100_000)
    ids = torch.randint(10, vocab, (n,), generator=g).tolist()
    return [i for i in ids if i != config.image_token_id]


def page_prompt(config: OCRConfig, views) -> list[int]:
    count = config.image_token_count(views.grid, views.num_tiles > 0)
    return [config.bos_token_id] + [config.image_token_id] * count + text_ids(config, 8, 99)


def vision_flops(config: OCRConfig, views) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = OCRModel(config)
    meta = type(views)(
        views.global_view.to("meta"), None if views.tiles is None else views.tiles.to("meta"), views.grid
    )
    counter = FlopCounterMode(display=False)
    with counter, torch.inference_mode():
        model.encode_images([meta])
    return counter.get_total_flops()


def engine(model, k: int, batch: int = 1) -> Engine:
    drafter = "mtp" if k else "none"
    return Engine(
        model, EngineConfig(drafter=drafter, num_draft_tokens=k, max_batch_size=batch, guard=NO_GUARD)
    )


def request(prompt: list[int], tokens: int, views=None) -> GenerationRequest:
    return GenerationRequest(
        prompt_ids=prompt, max_tokens=tokens, images=[views] if views is not None else None, stop_token_ids=[]
    )


def step_time(model, k: int, prompt: list[int], steps: int, repeats: int) -> float:
    """Median over repeats of the engine's mean decode-step time (batch 1, fixed k, prefill excluded)."""
    times = []
    for _ in range(repeats):
        eng = engine(model, k)
        eng.generate([request(prompt, steps)])
        times.append(eng.stats.decode_s / max(eng.stats.steps, 1))
    return statistics.median(times)


def decode_rate(model, batch: int, config: OCRConfig, steps: int, repeats: int) -> float:
    rates = []
    for r in range(repeats):
        eng = engine(model, 0, batch)
        reqs = [request(text_ids(config, 32, 1000 * r + i), steps) for i in range(batch)]
        results = eng.generate(reqs)
        rates.append(sum(len(x.token_ids) - 1 for x in results) / eng.stats.decode_s)  # first token: prefill
    return statistics.median(rates)


def expert_union(model, ids: torch.Tensor, positions: torch.Tensor, cache) -> float:
    """Mean number of distinct routed experts per MoE layer that one forward pass over `ids` reads."""
    from jocr.model.decoder import MoE

    seen: list[int] = []
    hooks = [
        m.gate.register_forward_hook(lambda _m, _i, out: seen.append(len(set(out[1].flatten().tolist()))))
        for m in model.modules()
        if isinstance(m, MoE)
    ]
    try:
        model(ids, positions=positions, cache=cache)
    finally:
        for h in hooks:
            h.remove()
    return statistics.mean(seen) if seen else 0.0


def bandwidth_floor(config: OCRConfig, union: dict[int, float]) -> dict:
    """c(k) if every pass cost exactly its weight bytes: (verifier over k + 1 positions, reading the union of
    their experts, + k draft steps, each reading the head's block and the full lm_head) / one plain step."""
    counts = count_parameters(config)
    d, mtp = config.decoder, config.mtp
    step = counts["active_params"]
    routed = counts["routed_expert_active_params"]
    draft = counts["mtp_active_params"] + (counts["lm_head_params"] if mtp.share_lm_head else 0)
    out = {"draft_step_bytes_vs_step": draft / step}
    for k in (1, 2, 3):
        n = k + 1
        # independent uniform routing: an expert escapes one token's top-k with probability 1 - top_k / E
        random_union = d.n_routed_experts * (1 - (1 - d.num_experts_per_tok / d.n_routed_experts) ** n)
        for tag, u in (
            ("measured", union.get(n)),
            ("random", random_union),
            ("shared", d.num_experts_per_tok),
        ):
            if u is not None:
                verify = step - routed + routed * u / d.num_experts_per_tok
                out[f"c_k{k}_floor_{tag}"] = (verify + k * draft) / step
    return out


def breakdown(model, prompt: list[int], repeats: int) -> dict:
    """A speculative step's parts in units of a plain step (batch 1): the verifier over 2 and 4 positions
    and one FastMTP draft step, each timed alone on a cache holding the prompt; the distinct experts a
    verifier pass reads; and c(k)'s floor from weight bytes alone (bandwidth_floor)."""
    from jocr.engine.cache import KVCache

    t = len(prompt)
    cache = KVCache(1, t + 8, dtype=next(model.parameters()).dtype)
    view = cache.view(0, 1)
    out = model(torch.tensor([prompt]), positions=torch.arange(t)[None], cache=view, num_logits_to_keep=1)
    state = model.mtp_feedback(out)[:, -1:]  # (1, 1, D)
    ids = torch.tensor([prompt[-4:]])  # (1, 4): the tokens are irrelevant to the cost

    def verify(n: int):
        return lambda: model(ids[:, :n], positions=torch.arange(t, t + n)[None], cache=cache.view(0, 1))

    times = {n: timed(verify(n), repeats + 2)[0] for n in (1, 2, 4)}
    draft, _ = timed(
        lambda: model.mtp_step(state, ids[:, :1], torch.tensor([[t]]), cache.view(0, 1)), repeats + 2
    )
    union = {
        n: expert_union(model, ids[:, :n], torch.arange(t, t + n)[None], cache.view(0, 1)) for n in (2, 3, 4)
    }
    return {
        "verify2_vs_step": times[2] / times[1],
        "verify4_vs_step": times[4] / times[1],
        "draft_step_vs_step": draft / times[1],
        "expert_union_v4": union[4],
        **bandwidth_floor(model.config, union),
    }


def check_tokens(model, prompt: list[int], views, tokens: int) -> dict:
    """Greedy tokens of the fast paths (AR, FastMTP k=3) against the reference path (kernel off)."""
    packed = [m for m in model.modules() if isinstance(m, PackedLinear)]
    fast = [m.fast for m in packed]
    out = {}
    for m in packed:
        m.fast = False
    out["reference"] = engine(model, 0).generate([request(prompt, tokens, views)])[0].token_ids
    for m, f in zip(packed, fast):
        m.fast = f
    out["ar"] = engine(model, 0).generate([request(prompt, tokens, views)])[0].token_ids
    out["spec_k3"] = engine(model, 3).generate([request(prompt, tokens, views)])[0].token_ids
    return {"same_tokens": out["ar"] == out["reference"] == out["spec_k3"], "tokens": len(out["reference"])}


def page(model, prompt, views, tokens: int, k: int) -> dict:
    eng = engine(model, k)
    start = time.perf_counter()
    res = eng.generate([request(prompt, tokens, views)])[0]
    total = time.perf_counter() - start
    return {"page_s": total, "prefill_s": res.stats.prefill_s, "tokens": len(res.token_ids)}


def int8_error(path: Path, prompt: list[int], steps: int) -> dict:
    """Decode rate with int8 weights and the logits' error against fp32 compute (auto) on a text prompt."""
    ids = torch.tensor([prompt])
    with torch.inference_mode():
        ref_model = load_formatted(path, "auto")
        ref = ref_model(ids).logits[0]
        del ref_model
        gc.collect()
        model = load_formatted(path, "auto", "int8")
        got = model(ids).logits[0]
    err = (got - ref).abs()
    rate = 1.0 / step_time(model, 0, prompt, steps, 1)
    return {
        "int8_decode_tok_s": rate,
        "int8_logit_max_abs_err": float(err.max()),
        "int8_logit_rel_err": float(err.mean() / ref.abs().mean()),
        "int8_top1_agree": float((got.argmax(-1) == ref.argmax(-1)).float().mean()),
    }


def baseline(path: Path, prompt: list[int], steps: int, repeats: int) -> dict:
    """The plain torch path (--dtype bfloat16: bf16 weights and products) for comparison: decode batch 1 and
    the cost of a FastMTP k=3 step."""
    model = load_formatted(path, "bfloat16")
    with torch.inference_mode():
        plain = step_time(model, 0, prompt, steps, repeats)
        spec = step_time(model, 3, prompt, steps, repeats)
    return {"bf16_decode_tok_s_b1": 1.0 / plain, "bf16_c_k3": spec / plain}


def run_vllm(python: str, path: Path, payload: dict, timeout: int) -> dict:
    script = Path(__file__).with_name("fullsize_vllm.py")
    payload_path = path / "vllm_payload.json"
    payload_path.write_text(json.dumps(payload))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1] / "src"))
    cmd = [python, str(script), str(path), str(payload_path)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        lines = [x for x in out.splitlines() if x.startswith("{")]
        if not lines:
            raise RuntimeError(f"vLLM run failed: no result within {timeout} s") from None
        print(f"vLLM: time limit of {timeout} s reached; figures measured before it are kept", flush=True)
        return json.loads(lines[-1])
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError("vLLM run failed: " + " | ".join(tail))
    return json.loads(lines[-1])


def measure(args, cache: Path) -> dict:
    """Every jocr figure (steps 1-8 of the module docstring)."""
    res: dict = {}
    res.update(machine(args.repeats))
    print(
        f"machine: read {res['bandwidth_gb_s']:.1f} GB/s; matmul fp32 {res['matmul_fp32_gflop_s']:.1f}, "
        f"bf16 {res['matmul_bf16_gflop_s']:.1f} GFLOP/s",
        flush=True,
    )
    path = ensure_checkpoint(args.preset, cache)
    config = OCRConfig.load(path)
    counts = count_parameters(config)
    active = counts["active_params"]
    start = time.perf_counter()
    model = load_formatted(path, args.dtype)
    print(f"loaded {path} as {args.dtype} in {time.perf_counter() - start:.1f} s", flush=True)
    image = page_image()
    tiled = preprocess_image(image, config.vision)
    g = torch.Generator().manual_seed(1)
    single = type(tiled)(
        torch.randn(3, config.vision.base_size, config.vision.base_size, generator=g), None, (1, 1)
    )
    prompt = page_prompt(config, tiled)

    with torch.inference_mode():
        # Text only: the vision encoder is the same code on both paths; the check is about decoding.
        res.update(check_tokens(model, text_ids(config, 64, 5), None, args.check_tokens))
        print(
            f"fast paths vs reference ({res['tokens']} tokens): same tokens {res['same_tokens']}", flush=True
        )
        for name, views in (("vision_global", single), ("vision_tiled", tiled)):
            reps = args.repeats if name == "vision_global" else max(1, args.repeats // 2)
            s, embeds = timed(lambda v=views: model.encode_images([v]), reps)
            flops = vision_flops(config, views)
            res[f"{name}_s"], res[f"{name}_tflop"] = s, flops / 1e12
            res[f"{name}_vs_peak"] = flops / s / 1e9 / res["matmul_fp32_gflop_s"]
            print(
                f"{name}: {s:.2f} s, {flops / 1e12:.2f} TFLOP, {res[f'{name}_vs_peak']:.0%} of fp32 peak",
                flush=True,
            )
        ids = torch.tensor([prompt])
        inputs = model.embed(ids, embeds)  # the tiled page's embeddings (the last one timed)

        def prefill():
            from jocr.engine.cache import KVCache

            kv = KVCache(1, len(prompt) + 8, dtype=next(model.parameters()).dtype)
            return model.decode(inputs, torch.arange(len(prompt))[None], kv.view(0, 1), num_logits_to_keep=1)

        s, _ = timed(prefill, max(1, args.repeats // 2))
        res["prefill_tok_s"] = len(prompt) / s
        print(f"prefill: {len(prompt)} tokens in {s:.2f} s = {res['prefill_tok_s']:.0f} tok/s", flush=True)
        res["bandwidth_bound_tok_s"] = res["bandwidth_gb_s"] * 1e9 / (active * 2)
        for b in (1, 8):
            res[f"decode_tok_s_b{b}"] = decode_rate(model, b, config, args.steps, args.repeats)
            print(f"decode batch {b}: {res[f'decode_tok_s_b{b}']:.2f} tok/s", flush=True)
        res["decode_vs_bound"] = res["decode_tok_s_b1"] / res["bandwidth_bound_tok_s"]
        text = text_ids(config, 64, 7)
        plain = step_time(model, 0, text, args.steps, args.repeats)
        for k in (1, 2, 3):
            res[f"c_k{k}"] = step_time(model, k, text, args.steps, args.repeats) / plain
            print(f"c(k={k}) = {res[f'c_k{k}']:.2f}", flush=True)
        res["projected_speedup_tau"] = TAU / res["c_k3"]
        res.update(breakdown(model, text, args.repeats))
        print(
            f"parts: verify over 2 / 4 positions {res['verify2_vs_step']:.2f} / "
            f"{res['verify4_vs_step']:.2f}, "
            f"one draft step {res['draft_step_vs_step']:.2f} plain steps; "
            f"experts read by a 4-position pass: {res['expert_union_v4']:.1f} per MoE layer",
            flush=True,
        )
        print(
            "c(k) floor from weight bytes (k=1, 2, 3): measured routing "
            + ", ".join(f"{res[f'c_k{k}_floor_measured']:.2f}" for k in (1, 2, 3))
            + "; random routing "
            + ", ".join(f"{res[f'c_k{k}_floor_random']:.2f}" for k in (1, 2, 3))
            + "; all positions sharing their experts "
            + ", ".join(f"{res[f'c_k{k}_floor_shared']:.2f}" for k in (1, 2, 3)),
            flush=True,
        )
        if not args.skip_page:
            for k, key in ((0, "page_s"), (3, "page_s_spec")):
                run = page(model, prompt, tiled, args.page_tokens, k)
                res[key] = run["page_s"]
                res[f"{key}_prefill_s"] = run["prefill_s"]
                print(f"page k={k}: {run['page_s']:.1f} s ({run['tokens']} tokens)", flush=True)
    model = embeds = inputs = None  # free the model before the int8 and vLLM runs
    gc.collect()
    res["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
    if args.int8:
        res.update(int8_error(path, text_ids(config, 64, 7), args.steps))
        print(
            f"int8: decode {res['int8_decode_tok_s']:.2f} tok/s, "
            f"logits max err {res['int8_logit_max_abs_err']:.3g}, "
            f"top-1 agreement {res['int8_top1_agree']:.1%}",
            flush=True,
        )
        res["peak_rss_gb_int8_phase"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
    if args.baseline:
        res.update(baseline(path, text_ids(config, 64, 7), args.steps, 1))  # one run: a reference point
        print(
            f"bf16 torch path: decode {res['bf16_decode_tok_s_b1']:.2f} tok/s, c(3) {res['bf16_c_k3']:.2f}",
            flush=True,
        )
    return res


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="deepseek-ocr")
    parser.add_argument(
        "--cache", type=Path, help="checkpoint directory (default ~/.cache/jocr/fullsize-PRESET)"
    )
    parser.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16"))
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=24, help="decode steps per decode/c measurement")
    parser.add_argument("--page-tokens", type=int, default=1000)
    parser.add_argument("--check-tokens", type=int, default=24)
    parser.add_argument(
        "--int8", action="store_true", help="also measure int8 weights (decode, logits error)"
    )
    parser.add_argument(
        "--baseline", action="store_true", help="also measure the plain bf16 torch path (decode, c(3))"
    )
    parser.add_argument("--vllm", metavar="PYTHON", help="interpreter of a vLLM CPU environment")
    parser.add_argument("--skip-page", action="store_true", help="no end-to-end page runs")
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--reuse", type=Path, help="take the jocr figures from --save's file (vLLM only)")
    parser.add_argument("--vllm-timeout", type=int, default=1200, help="seconds for the vLLM run")
    parser.add_argument(
        "--vllm-dtype",
        default="bfloat16",
        choices=("bfloat16", "float32"),
        help="vLLM's compute dtype (bfloat16: the checkpoint's; float32: upcast, as jocr computes vision)",
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cache = args.cache or Path.home() / ".cache" / "jocr" / f"fullsize-{args.preset}"
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    if args.reuse:
        res = json.loads(args.reuse.read_text())
    else:
        res = measure(args, cache)
        if args.save:
            args.save.write_text(json.dumps(res, indent=1) + "\n")
    path = ensure_checkpoint(args.preset, cache)
    config = OCRConfig.load(path)
    image = page_image()
    prompt = page_prompt(config, preprocess_image(image, config.vision))
    if args.vllm:
        image_path = cache / "page.png"
        image.save(image_path)
        try:
            payload = {
                "image": str(image_path),
                "page": prompt[:1] + [config.image_token_id] + prompt[-8:],  # vLLM expands the one <image>
                "text": [text_ids(config, 32, 1000 + i) for i in range(8)],
                "page_tokens": args.page_tokens,
                "repeats": args.repeats,
                "dtype": args.vllm_dtype,
            }
            v = run_vllm(args.vllm, path, payload, args.vllm_timeout)
            res.update({f"vllm_{k}": x for k, x in v.items()}, vllm_dtype=args.vllm_dtype)
        except RuntimeError as exc:
            print(str(exc)[:2000], flush=True)
    if args.save and args.vllm:
        args.save.write_text(json.dumps(res, indent=1) + "\n")
    report(res, args)
    return 0


HEADLINE = (
    "decode_tok_s_b1",
    "decode_tok_s_b8",
    "bandwidth_bound_tok_s",
    "decode_vs_bound",
    "vision_s",
    "vision_vs_peak",
    "prefill_tok_s",
    "c_k1",
    "c_k2",
    "c_k3",
    "c_k3_floor_measured",
    "expert_union_v4",
    "page_s",
    "page_s_spec",
    "peak_rss_gb",
)


def report(res: dict, args) -> None:
    res["vision_s"] = res.get("vision_global_s")
    res["vision_vs_peak"] = res.get("vision_global_vs_peak")
    rows = [
        ("decode tok/s, batch 1", "decode_tok_s_b1", "vllm_tok_s_b1"),
        ("decode tok/s, batch 8", "decode_tok_s_b8", "vllm_tok_s_b8"),
        ("bandwidth bound tok/s (bf16)", "bandwidth_bound_tok_s", None),
        ("decode / bound", "decode_vs_bound", None),
        ("vision s, 1024 global view", "vision_global_s", None),
        ("vision s, 2x3 tiled page", "vision_tiled_s", None),
        ("vision / fp32 matmul peak", "vision_vs_peak", None),
        ("prefill tok/s", "prefill_tok_s", None),
        ("c(k=1), c(k=2), c(k=3)", ("c_k1", "c_k2", "c_k3"), None),
        ("c(k=3) floor from weight bytes", "c_k3_floor_measured", None),
        (f"speedup at tau {TAU}, k=3", "projected_speedup_tau", None),
        (f"page s, {args.page_tokens} tokens, no speculation", "page_s", "vllm_page_s"),
        (f"page s, {args.page_tokens} tokens, FastMTP k=3", "page_s_spec", None),
        ("peak RSS GB", "peak_rss_gb", None),
    ]

    def fmt(key):
        if isinstance(key, tuple):
            return ", ".join(fmt(k) for k in key)
        value = res.get(key)
        return "-" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)

    print(f"\n{'':<40}{'jocr':>20}{'vLLM CPU ' + res.get('vllm_dtype', ''):>20}")
    for label, key, vkey in rows:
        print(f"{label:<40}{fmt(key):>20}{fmt(vkey) if vkey else '':>20}")
    for name in ("tok_s_b1", "tok_s_b8", "page_s"):
        if f"vllm_{name}" in res:
            ours = res["decode_" + name] if name.startswith("tok") else res.get("page_s")
            if ours:
                ratio = ours / res[f"vllm_{name}"] if name.startswith("tok") else res[f"vllm_{name}"] / ours
                print(f"jocr vs vLLM, {name}: {ratio:.2f}x")
    keys = list(HEADLINE) + [k for k in ("vllm_tok_s_b1", "vllm_tok_s_b8", "vllm_page_s") if k in res]
    print(json.dumps({k: (round(res[k], 4) if isinstance(res.get(k), float) else res.get(k)) for k in keys}))


if __name__ == "__main__":
    sys.exit(main())
