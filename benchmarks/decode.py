"""Decode speed: plain (AR) vs FastMTP speculation with k = 1, 2, 3 and adaptive k, at batch 1 and 32.

    .venv/bin/python benchmarks/decode.py                      # builds, teaches and fits a small model first
    .venv/bin/python benchmarks/decode.py --model models/NAME  # a saved model (text-only prompts)
    .venv/bin/python benchmarks/decode.py --model models --pages cpu-small  # page images, as in parsing
    .venv/bin/python benchmarks/decode.py --model models --pages vector     # anchored PDF pages

Without --model it builds a small model (the `tiny` preset with a 12-layer decoder, like the published
one), teaches it a few paragraphs of text (memorised, so its greedy output is predictable like OCR
output is), and fits its FastMTP head with jocr.train.mtp (self-distillation); the result is kept in
--workdir so later runs skip that. Every mode runs on the same requests, interleaved repeat by repeat so
load drift on a shared machine hits all modes alike; the table shows medians. Per mode: tokens/s, tau
(tokens per speculative step, bonus included), per-position acceptance, c (speculative step time over
plain step time at the same batch) and two speedups over AR: `speedup` from tokens/s over the whole
request (wall clock, so vision encoding and prefill, which speculation cannot shorten, are included) and
`decode` from the time of the decode steps alone (what speculative decoding accelerates; the
c = tau / speedup of docs/engine.md is about this one). Output is the verifier's greedy text in every mode
(checked here too).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from jocr.config import OCRConfig
from jocr.engine import Engine, EngineConfig, GenerationRequest
from jocr.model.ocr import OCRModel
from jocr.pipeline.model import REFERENCE_MAX_DRAFTS
from jocr.tokenizer import Tokenizer
from jocr.train.mtp import MTPFitConfig, fit_mtp_head

CORPUS = """\
# Quarterly report

The committee met on the third of March to review the results of the second quarter. Revenue rose by
twelve percent compared with the same period last year, driven mainly by the new product line and by
higher demand in the northern region. Operating costs grew more slowly than revenue, so the margin
improved from 18.2% to 21.5%.

| Region | Revenue | Growth |
|---|---|---|
| North | 4.2 | 15% |
| South | 3.1 | 8% |
| East | 2.7 | 11% |

## Outlook

The board expects growth to continue in the second half of the year, although supply constraints may
delay some deliveries. The total cost is given by $C = \\sum_{i=1}^{n} p_i q_i$ where $p_i$ is the unit
price and $q_i$ the quantity of item $i$. A detailed plan will be presented at the next meeting.
"""


def build_model(layers: int, seed: int = 0) -> OCRModel:
    cfg = OCRConfig.preset("tiny")
    cfg.decoder.num_hidden_layers = layers
    return OCRModel(cfg).init_weights(seed=seed)


def teach(model: OCRModel, ids: list[int], steps: int, seq: int = 64, batch: int = 8, lr: float = 3e-3):
    """Memorise the corpus (next-token cross-entropy on random windows); the FastMTP head stays untouched."""
    params = [p for n, p in model.named_parameters() if not n.startswith("mtp_module")]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    data = torch.tensor(ids)
    g = torch.Generator().manual_seed(0)
    model.train()
    t0 = time.perf_counter()
    for step in range(steps):
        starts = torch.randint(0, len(ids) - seq - 1, (batch,), generator=g)
        x = torch.stack([data[s : s + seq + 1] for s in starts.tolist()])  # (B, seq + 1)
        logits = model(x[:, :-1]).logits  # (B, seq, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / 20)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if (step + 1) % 50 == 0:
            print(f"teach: step {step + 1}/{steps} loss {loss.item():.4f} ({time.perf_counter() - t0:.0f} s)")
    model.eval()


def prompts_from(ids: list[int], count: int, length: int, bos: int, seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    while len(ids) < length + 400:  # a BPE tokenizer makes the corpus short
        ids = ids + ids
    starts = torch.randint(0, len(ids) - length - 200, (count,), generator=g).tolist()
    return [[bos] + ids[s : s + length] for s in starts]


def prepare(args) -> OCRModel:
    if args.model:
        # As `jocr parse` loads it (`load_model`: the `auto` format, fp32 compute over the stored bytes), not
        # in the stored dtype: a bf16 checkpoint computed in bf16 is neither what users run nor row-invariant.
        from jocr.model.formats import load_formatted

        return load_formatted(Path(args.model), dtype="auto").eval()
    work = Path(args.workdir)
    tok = Tokenizer.byte_level()
    ids = tok.encode(CORPUS)
    prompts = prompts_from(ids, 96, 16, tok.bos_id, seed=1)
    if (work / "config.json").exists() and not args.rebuild:
        print(f"using the model saved in {work}")
        model = OCRModel.from_pretrained(work).eval()
        steps = args.fit_more
    else:
        model = build_model(args.layers)
        teach(model, ids, args.teach_steps)
        steps = args.fit_steps
    if steps:
        cfg = MTPFitConfig(steps=steps, batch_size=8, lr=3e-3, max_new_tokens=96, log_every=50)
        cfg.checkpoint_dir = str(work / "mtp-fit")  # keeps the distilled data between runs
        if (work / "mtp-fit" / "mtp_state.pt").exists():
            (work / "mtp-fit" / "mtp_state.pt").unlink()  # a new fitting round starts from the saved head
        stats = fit_mtp_head(model, prompts, cfg)
        print(f"fit: teacher-forced acceptance {[round(a, 3) for a in stats['acceptance_tf']]}")
        model.save_pretrained(work)
    return model


def run_mode(engine: Engine, requests: list[GenerationRequest]) -> dict:
    before = (engine.stats.steps, engine.stats.decode_s, engine.stats.spec_steps, engine.stats.spec_tokens)
    drafted0, accepted0 = list(engine.stats.drafted), list(engine.stats.accepted)
    t0 = time.perf_counter()
    results = engine.generate(requests)
    wall = time.perf_counter() - t0
    s = engine.stats
    steps = s.steps - before[0]
    spec_steps = s.spec_steps - before[2]
    drafted = [d - (drafted0[i] if i < len(drafted0) else 0) for i, d in enumerate(s.drafted)]
    accepted = [a - (accepted0[i] if i < len(accepted0) else 0) for i, a in enumerate(s.accepted)]
    return {
        "tokens": sum(len(r.token_ids) for r in results),
        "wall": wall,
        "decode_s": s.decode_s - before[1],
        "step_s": (s.decode_s - before[1]) / max(1, steps),
        "rows_spec_steps": spec_steps,
        "tau": (s.spec_tokens - before[3]) / spec_steps if spec_steps else None,
        "acceptance": [a / d if d else 0.0 for a, d in zip(accepted, drafted)],
        "outputs": [r.token_ids for r in results],
    }


def tokenizer_for(args) -> Tokenizer:
    """The model directory's tokenizer.json when there is one (a bundled model), else the byte-level one."""
    if args.model and (Path(args.model) / "tokenizer.json").exists():
        return Tokenizer.from_dir(args.model)
    return Tokenizer.byte_level()


def page_requests(model: OCRModel, tok: Tokenizer, profile: str, count: int, max_tokens: int, offset: int):
    """OCR requests on held-out synthetic pages (test split): what an OCR model's draft head is fitted for.

    They stop at EOS like parsing does, so tokens/s counts the tokens a page really produces."""
    from jocr.documents.preprocess import preprocess_image
    from jocr.synth import generate_page
    from jocr.synth.dataset import split_seeds
    from jocr.tokenizer import DEFAULT_PROMPT

    requests = []
    for seed in split_seeds("test", count, start=offset):
        views = preprocess_image(generate_page(seed, profile=profile).image, model.config.vision)
        n_image = model.config.image_token_count(views.grid, views.tiles is not None)
        prompt = tok.build_prompt(DEFAULT_PROMPT, [n_image])
        requests.append(GenerationRequest(prompt, images=[views], max_tokens=max_tokens))
    return requests


def vector_requests(model: OCRModel, tok: Tokenizer, count: int, max_tokens: int, vector_dir: str):
    """Anchored requests on vector PDF pages (`jocr synth --profile vector`), built as `jocr parse --anchor
    on` builds them: render, text layer, anchor (the model's budget), one prompt builder."""
    from jocr.documents.pages import LoadOptions, open_source
    from jocr.layout.request import PageRequestBuilder
    from jocr.lines.anchor import ANCHOR_VERSION, page_anchor

    builder = PageRequestBuilder(tok, model.config.vision)
    budget = model.config.anchor.max_tokens
    requests = []
    pdfs = sorted((Path(vector_dir) / "pdfs").glob("*.pdf"))
    for pdf in (pdfs * count)[:count]:
        with open_source(str(pdf), LoadOptions()) as source:
            image = source.render(0)
            decision = page_anchor(source, 0, "on", ANCHOR_VERSION, tok, budget)
        for page in builder.pages(image, decision.texts or [None]):  # one request per anchor window
            requests.append(GenerationRequest(page.prompt_ids, images=[page.views], max_tokens=max_tokens))
    return requests


def bench(model: OCRModel, args) -> None:
    tok = tokenizer_for(args)
    ids = tok.encode(CORPUS)
    modes: list[tuple[str, dict]] = [("AR", dict(drafter="none"))]
    for k in args.ks:
        modes.append((f"k={k}", dict(drafter="mtp", num_draft_tokens=k if k == "auto" else int(k))))
    if args.pages == "vector":  # anchored prompts: also the drafters that copy the anchor or its references
        for k in args.ks + ["8"]:
            modes.append((f"a{k}", dict(drafter="mtp+ngram", num_draft_tokens=k if k == "auto" else int(k))))
        for k in args.ks + ["5", "7"]:
            auto = dict(num_draft_tokens="auto", max_draft_tokens=REFERENCE_MAX_DRAFTS)
            drafts = auto if k == "auto" else dict(num_draft_tokens=int(k))
            modes.append((f"r{k}", dict(drafter="mtp+refs", **drafts)))
    if args.modes:
        modes = [(name, cfg) for name, cfg in modes if name == "AR" or name in args.modes]
    threads = torch.get_num_threads()
    source = f"{args.pages} page images, up to" if args.pages else "text prompts,"
    print(f"\ntorch {torch.__version__}, {threads} thread(s), {source} {args.tokens} tokens per request")
    header = (
        f"{'batch':>5} {'mode':>7} {'tok/s':>9} {'tau':>5} {'acceptance':>18} {'c':>5} {'speedup':>8}"
        f" {'decode':>7}"
    )
    for batch in args.batches:
        # At least --min-requests requests per regime (run `batch` at a time): one prompt alone says little.
        count = max(batch, args.min_requests)
        if args.pages == "vector":
            requests = vector_requests(model, tok, count, args.tokens, args.vector_dir)
        elif args.pages:
            requests = page_requests(model, tok, args.pages, count, args.tokens, offset=100 * batch)
        else:
            prompts = prompts_from(ids, count, 16, tok.bos_id, seed=100 + batch)
            requests = [GenerationRequest(p, max_tokens=args.tokens, stop_token_ids=()) for p in prompts]
        engines = {n: Engine(model, EngineConfig(max_batch_size=batch, **c), tokenizer=tok) for n, c in modes}
        for engine in engines.values():  # warm-up (and lets adaptive k measure this regime)
            engine.generate(requests)
        runs: dict[str, list[dict]] = {name: [] for name in engines}
        for _ in range(args.repeats):
            for name, engine in engines.items():
                runs[name].append(run_mode(engine, requests))
        reference = runs["AR"][0]["outputs"]
        ar_tps = statistics.median(r["tokens"] / r["wall"] for r in runs["AR"])
        ar_step = statistics.median(r["step_s"] for r in runs["AR"])
        ar_decode = statistics.median(r["decode_s"] for r in runs["AR"])
        print(f"\n{header}")
        for name, rs in runs.items():
            if any(r["outputs"] != reference for r in rs):
                print(f"ERROR: mode {name} at batch {batch} changed the output", file=sys.stderr)
                sys.exit(1)
            tps = statistics.median(r["tokens"] / r["wall"] for r in rs)
            taus = [r["tau"] for r in rs if r["tau"] is not None]
            tau = f"{statistics.median(taus):.2f}" if taus else "-"
            acc = rs[-1]["acceptance"]
            acc_s = "/".join(f"{a:.2f}" for a in acc) if acc else "-"
            c = statistics.median(r["step_s"] for r in rs) / ar_step if name != "AR" else 1.0
            decode = ar_decode / statistics.median(r["decode_s"] for r in rs)
            line = (
                f"{batch:>5} {name:>7} {tps:>9.1f} {tau:>5} {acc_s:>18} {c:>5.2f} {tps / ar_tps:>7.2f}x"
                f" {decode:>6.2f}x"
            )
            print(line)
        for name, engine in engines.items():
            if name.endswith("auto"):
                table = engine.controller.table()
                print(f"      {name}: adaptive k step times (s) by batch bucket and k: {table}")


def profile(model: OCRModel, args) -> None:
    import cProfile
    import pstats

    tok = tokenizer_for(args)
    # with --pages: the page the benchmark decodes first, so the profile sees the head's real acceptance
    spec = ("k=3", dict(drafter="mtp", num_draft_tokens=3))
    if args.pages == "vector":  # an anchored page's first window, with the reference drafter
        requests = vector_requests(model, tok, 1, args.tokens, args.vector_dir)[:1]
        spec = ("r7", dict(drafter="mtp+refs", num_draft_tokens=7))
    elif args.pages:
        requests = page_requests(model, tok, args.pages, 1, args.tokens, offset=0)
    else:
        prompts = prompts_from(tok.encode(CORPUS), 1, 16, tok.bos_id, seed=101)
        requests = [GenerationRequest(prompts[0], max_tokens=args.tokens, stop_token_ids=())]
    for name, cfg in (("AR", dict(drafter="none")), spec):
        engine = Engine(model, EngineConfig(max_batch_size=1, **cfg), tokenizer=tok)
        engine.generate(requests)
        prof = cProfile.Profile()
        prof.enable()
        results = engine.generate(requests)
        prof.disable()
        steps = engine.stats.steps // 2
        tokens = sum(len(r.token_ids) for r in results)
        print(f"\n== {name}: {steps} steps for {tokens} tokens per generation ==")
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def best_ms(fn, calls: int = 200, repeats: int = 5) -> float:
    """The best of `repeats` means of `calls` calls, in ms (the one least disturbed by other jobs)."""
    for _ in range(20):
        fn()
    means = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        means.append((time.perf_counter() - t0) / calls * 1e3)
    return min(means)


def breakdown(model: OCRModel, args) -> None:
    """What a speculative step is made of at batch 1: a verifier pass over 1, 2 and 4 positions (k = 0, 1,
    3) and one draft-head step, each timed alone on a cache of --context positions, and the c they imply
    before any engine work: (verifier pass over k + 1 positions + k draft steps) / verifier pass over 1."""
    from functools import partial

    from jocr.engine.cache import KVCache

    if model.mtp_module is None:
        sys.exit("--breakdown needs a model with a FastMTP head (config.mtp.enabled)")
    d = model.config.decoder.hidden_size
    n = args.context
    cache = KVCache(1, n + 8)
    g = torch.Generator().manual_seed(0)
    rows: list[tuple[str, float]] = []
    with torch.inference_mode():
        view = partial(cache.view, 0, 1)  # a fresh view per call, as the engine makes one per step
        model.decode(torch.randn(1, n, d, generator=g), torch.arange(n)[None], view())
        ids = torch.randint(4, model.config.decoder.vocab_size, (1, n), generator=g)
        model.mtp_step(torch.randn(1, n, d, generator=g), ids, torch.arange(n)[None], view())
        for t in (1, 2, 4):
            x, pos = torch.randn(1, t, d, generator=g), torch.arange(n, n + t)[None]
            rows.append(
                (
                    f"verifier pass, {t} position(s)",
                    best_ms(lambda x=x, pos=pos: model.decode(x, pos, view())),
                )
            )
        x, pos = torch.randn(1, 1, d, generator=g), torch.tensor([[n]])
        rows.append(("draft-head step", best_ms(lambda: model.mtp_step(x, ids[:, :1], pos, view()))))
    ar = rows[0][1]
    print(f"\ntorch {torch.__version__}, {torch.get_num_threads()} thread(s), batch 1, {n} cached positions")
    print(f"{'part':<34} {'ms':>7} {'x verifier(1)':>14}")
    for name, ms in rows:
        print(f"{name:<34} {ms:>7.3f} {ms / ar:>14.2f}")
    draft = rows[-1][1]
    for k, (_, verify) in ((1, rows[1]), (3, rows[2])):
        print(f"c at k = {k}, model passes only: {(verify + k * draft) / ar:.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", help="a saved model directory (default: build and teach a small one)")
    p.add_argument("--workdir", default="/tmp/jocr-decode-bench", help="where the built model is kept")
    p.add_argument("--rebuild", action="store_true", help="rebuild the small model even if saved")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--teach-steps", type=int, default=400)
    p.add_argument("--fit-steps", type=int, default=200)
    p.add_argument(
        "--fit-more", type=int, default=0, help="fit the saved model's head for this many more steps"
    )
    p.add_argument("--tokens", type=int, default=128, help="tokens generated per request")
    p.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 32])
    p.add_argument("--ks", type=lambda s: s.split(","), default=["1", "2", "3", "auto"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--modes",
        type=lambda s: s.split(","),
        help="only these modes (besides AR), e.g. k=auto,r7 (default: all)",
    )
    p.add_argument("--min-requests", type=int, default=4, help="requests per regime, at least")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--pages",
        metavar="PROFILE",
        help="with --model: OCR requests on held-out synthetic pages of this synth profile (e.g. cpu-small); "
        "vector: anchored PDF pages from --vector-dir, with the FastMTP + n-gram drafter as modes a<k> and "
        "the FastMTP + reference drafter as modes r<k> (r-auto: adaptive k up to 7)",
    )
    p.add_argument("--compile", action="store_true", help="also run with torch.compile'd decoder and head")
    p.add_argument(
        "--profile",
        action="store_true",
        help="print a cProfile of batch-1 k=3 decoding (--pages vector: reference drafter, k=7) and exit",
    )
    p.add_argument(
        "--breakdown", action="store_true", help="time the parts of a batch-1 speculative step alone and exit"
    )
    p.add_argument("--context", type=int, default=300, help="cached positions for --breakdown")
    p.add_argument(
        "--vector-dir",
        default=str(Path(__file__).resolve().parents[1] / "data" / "frozen-test" / "vector"),
        help="vector PDF pages for --pages vector (default: the frozen vector set)",
    )
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = prepare(args)
    if args.profile:
        profile(model, args)
        return 0
    if args.breakdown:
        breakdown(model, args)
        return 0
    print("\n== eager ==")
    bench(model, args)
    if args.compile:
        print("\n== torch.compile ==")
        try:
            model.decode = torch.compile(model.decode, dynamic=True)
            model.mtp_step = torch.compile(model.mtp_step, dynamic=True)
            bench(model, args)
        except Exception as exc:  # report and keep the eager table
            print(f"torch.compile failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
