"""Training data: synthetic pages rendered in a separate worker process and turned into model batches.

Sample i of a run is fully determined by (data seed, i): its curriculum stage, synth profile, degradation
and page seed all derive from it, so a resumed run continues exactly where it stopped by restarting the
worker at the next unconsumed index. Rendering runs in its own process so it overlaps the trainer's
forward/backward on the other core (DESIGN.md, "Training a reader on two CPU cores").

Sequence layout (the prompt of `jocr.layout.request.PageRequestBuilder`, as at inference): BOS,
`<image>` x n, "\\n" + prompt,
then the target Markdown and EOS. Loss is taken on the target and EOS only (labels -100 elsewhere).
"""

from __future__ import annotations

import multiprocessing as mp
import queue as queue_mod
import random
from dataclasses import dataclass, field
from typing import Any

import torch

from jocr.train import IGNORE_INDEX
from jocr.train.filters import DuplicateFilter, FilterConfig, FilterStats, is_degenerate
from jocr.types import PageViews

# Page seeds of training samples start here; the synth frozen test/validation splits use small seeds, and the
# BPE corpus uses 10_000_000+, so training never sees an evaluation page.
TRAIN_SEED_BASE = 100_000_000


# The profile name of formula crops (`jocr.synth.formula_crops`): one formula under the formula prompt.
FORMULA_CROP = "formula-crop"


@dataclass
class Stage:
    """One curriculum stage: `samples` page indices drawn from `profiles` (name -> weight)."""

    samples: int
    profiles: dict[str, float] = field(default_factory=lambda: {"cpu-lines": 1.0})
    degrade: float = 0.0  # probability that a page is rendered as its degraded twin


@dataclass
class DataConfig:
    stages: list[Stage] = field(default_factory=lambda: [Stage(samples=10**9)])
    seed: int = 0
    max_target_tokens: int = 300
    prompt: str | None = None  # a task name or text, as `jocr parse --prompt`; None: the default OCR prompt
    queue_size: int = 64
    filters: FilterConfig = field(default_factory=FilterConfig)
    dedup: bool = True
    # Probability that an answer token, as decoder *input*, is replaced by a random token (labels unchanged).
    # It weakens the language-model shortcut of teacher forcing so the image stays the main evidence.
    input_noise: float = 0.0
    # Weight of the bag-of-tokens loss on the vision features (train/vision_aux.py); 0 turns it off.
    vision_aux_weight: float = 0.0
    # Weight of the CTC reading loss on the raster-ordered vision grid (train/vision_aux.py); 0 turns it off.
    vision_ctc_weight: float = 0.0
    # Weight of the glyph reading loss (train/glyph_loss.py: each feature cell names the characters printed in
    # it, from the renderer's glyph boxes); 0 turns it off.
    vision_glyph_weight: float = 0.0
    # Anchored pages (docs/training.md, "Anchored model"): the stages' profile "vector" draws pages from this
    # folder (or list of folders), written by `jocr synth DIR --profile vector`, and reads each through the
    # user's path (render, text layer, `page_anchor`), so the anchor in training is the anchor at
    # inference; the profile "vector-ocr" draws the pages' OCR copies (`jocr synth DIR --ocr-copies N`,
    # jocr.train.ocr_copies) with the lines OCR read from them, anchored by the same `build_windows`.
    # anchor_dropout: the share of those pages trained on the image alone (the image-only path
    # stays alive); anchor_max_tokens: the anchor's token budget, saved into the model's config as
    # `anchor.max_tokens`; anchor_windows: the share of anchored pages cut into windows (`build_windows`) of
    # a budget drawn between anchor_min_tokens and anchor_max_tokens, one window read at random, so the
    # model learns the windows that a page longer than the budget is read in.
    vector_dir: str | list[str] | None = None
    anchor_dropout: float = 0.0
    anchor_max_tokens: int = 1024
    anchor_windows: float = 0.0
    anchor_min_tokens: int = 256
    # Asking a page (docs/asking.md, "Training data"): the stages' profile "docqa" draws documents from this
    # folder (or list), written by `jocr synth DIR --profile docqa`: question + anchor -> answer
    # (`jocr.train.docqa_data`), with the anchor settings above.
    docqa_dir: str | list[str] | None = None
    # The share of question samples asked over their focused window of runs (`jocr.pipeline.ask_focus`,
    # the window `jocr ask` uses with AskConfig.focus) instead of the page's anchor; targets are built
    # for the window the sample shows. Extraction samples keep the page's anchor.
    docqa_focus: float = 0.0
    # Charts and tables (docs/asking.md, "Captions"): folder(s) from `jocr synth DIR --profile docqa-charts`.
    # The profile "charts" asks their questions as "docqa" does; the profile "caption" cuts a chart out of
    # its page and trains the caption prompt on the crop and the crop's anchor -> the reference caption.
    charts_dir: str | list[str] | None = None
    # Weight of the decoder's answer cross-entropy. 0 makes a vision-only stage: the decoder is not run and
    # only the encoder (and the auxiliary heads) learn, from the auxiliary losses.
    answer_weight: float = 1.0
    # The answer loss as the mean of each sample's own token mean (True) rather than one mean over all the
    # batch's answer tokens (False): a 3-token answer (`@13`) then weighs as much as a 300-token page, so a
    # mixture of short answers and page reading trains both by their share of samples.
    answer_loss_per_sample: bool = False

    @property
    def anchored(self) -> bool:
        """Whether a stage draws anchored pages ("vector", "vector-ocr"; questions, "docqa"/"charts";
        chart crops, "caption")."""
        return any(
            {"vector", "vector-ocr", "docqa", "charts", "caption"} & set(s.profiles) for s in self.stages
        )

    def draws(self, profile: str) -> bool:
        """Whether any stage draws samples of `profile` (a weight above 0)."""
        return any(s.profiles.get(profile, 0) > 0 for s in self.stages)

    @property
    def ocr_anchored(self) -> bool:
        """Whether a stage draws OCR-anchored pages ("vector-ocr"): the model then reads OCR'd pages'
        anchors under `--anchor auto` (`jocr.config.AnchorConfig.ocr`)."""
        return self.draws("vector-ocr")

    @property
    def formula_crops(self) -> bool:
        """Whether a stage draws formula crops (`FORMULA_CROP`): the model's config then says it reads
        formulas (`jocr.config.ElementsConfig.formula`)."""
        return self.draws(FORMULA_CROP)

    def __post_init__(self) -> None:
        self.stages = [s if isinstance(s, Stage) else Stage(**s) for s in self.stages]
        if isinstance(self.filters, dict):
            self.filters = FilterConfig(**self.filters)
        if not self.stages:
            raise ValueError("data.stages must list at least one stage")
        if not 0.0 <= self.anchor_dropout <= 1.0:
            raise ValueError("data.anchor_dropout must be in [0, 1]")
        if not 0.0 <= self.anchor_windows <= 1.0:
            raise ValueError("data.anchor_windows must be in [0, 1]")
        if not 0.0 <= self.docqa_focus <= 1.0:
            raise ValueError("data.docqa_focus must be in [0, 1]")
        if self.anchor_windows > 0 and not 0 < self.anchor_min_tokens <= self.anchor_max_tokens:
            raise ValueError("data.anchor_min_tokens must be in (0, anchor_max_tokens]")
        if any("docqa" in s.profiles for s in self.stages) and not self.docqa_dir:
            raise ValueError(
                "the profile 'docqa' needs data.docqa_dir (a folder from jocr synth --profile docqa)"
            )
        for name in ("charts", "caption"):
            if any(name in s.profiles for s in self.stages) and not self.charts_dir:
                raise ValueError(
                    f"the profile '{name}' needs data.charts_dir (a folder from "
                    "jocr synth --profile docqa-charts)"
                )
        for name in ("vector", "vector-ocr"):
            if any(name in s.profiles for s in self.stages) and not self.vector_dir:
                raise ValueError(
                    f"the profile '{name}' needs data.vector_dir (a folder from jocr synth --profile vector)"
                )
        aux = (self.vision_aux_weight, self.vision_ctc_weight, self.vision_glyph_weight)
        if self.answer_weight <= 0 and max(aux) <= 0:
            raise ValueError(
                "data.answer_weight 0 (vision-only) needs vision_aux_weight, vision_ctc_weight or "
                "vision_glyph_weight"
            )


def sample_plan(cfg: DataConfig, index: int) -> tuple[str, bool, int]:
    """(profile, degrade, page seed) of sample `index`; stages follow each other by index."""
    start = 0
    stage = cfg.stages[-1]
    for s in cfg.stages:
        if index < start + s.samples:
            stage = s
            break
        start += s.samples
    rng = random.Random(cfg.seed * 1_000_003 + index)
    names = sorted(stage.profiles)
    profile = rng.choices(names, weights=[stage.profiles[n] for n in names])[0]
    degrade = rng.random() < stage.degrade
    return profile, degrade, TRAIN_SEED_BASE + cfg.seed * 10_000_000 + index


@dataclass
class Sample:
    index: int
    input_ids: list[int]
    labels: list[int]
    views: PageViews
    profile: str
    anchored: bool = False
    # Glyph reading targets (train/glyph_loss.py): fine (F*F,) and grid (G*G, slots); None when not asked for.
    glyph_fine: torch.Tensor | None = None
    glyph_grid: torch.Tensor | None = None


def encode_example(prompt_ids: list[int], tokenizer, target: str) -> tuple[list[int], list[int]]:
    """(input_ids, labels) for one page after its prompt: loss on the target tokens and closing EOS only."""
    target_ids = tokenizer.encode(target) + [tokenizer.eos_id]
    return prompt_ids + target_ids, [IGNORE_INDEX] * len(prompt_ids) + target_ids


class SampleMaker:
    """Renders and encodes samples by index, applying the data filters (used inside the worker)."""

    def __init__(self, cfg: DataConfig, tokenizer, vision) -> None:
        from jocr.layout.request import PageRequestBuilder

        self.cfg, self.tokenizer, self.vision = cfg, tokenizer, vision
        self.builder = PageRequestBuilder(tokenizer, vision, cfg.prompt or None)
        self.dedup = DuplicateFilter() if cfg.dedup else None
        self.stats = FilterStats()
        self.formula_builder = None  # the formula prompt's builder, made at the first formula crop

    def make(self, index: int) -> Sample | None:
        from jocr.synth import generate_page

        profile, degrade, seed = sample_plan(self.cfg, index)
        if profile in ("vector", "vector-ocr"):
            return self._make_vector(index, seed, ocr=profile == "vector-ocr")
        if profile in ("docqa", "charts", "caption"):
            return self._make_docqa(index, seed, profile)
        if profile == FORMULA_CROP:
            return self._make_formula_crop(index, seed, degrade)
        page = generate_page(seed, profile, degrade)
        text = page.markdown.strip()
        if not self._accept(text):
            return None
        if self.dedup is not None and not self.dedup.accept(text):
            self.stats.duplicate += 1
            return None
        page_input = self.builder.page(page.image)
        ids, labels = encode_example(page_input.prompt_ids, self.tokenizer, text)
        self.stats.kept += 1
        sample = Sample(index=index, input_ids=ids, labels=labels, views=page_input.views, profile=profile)
        if self.cfg.vision_glyph_weight > 0:
            sample.glyph_fine, sample.glyph_grid = self._glyph_targets(page, degrade)
        return sample

    def _make_formula_crop(self, index: int, seed: int, degrade: bool) -> Sample | None:
        """A formula crop (`jocr.synth.formula_crops`), folded and under the formula prompt as `jocr parse
        --task formula` reads one (`jocr.documents.fold`), its LaTeX the target."""
        from jocr.documents.fold import fold_wide
        from jocr.layout.request import PageRequestBuilder
        from jocr.synth.formula_crops import formula_crop

        image, text = formula_crop(seed, degrade)
        if not self._accept(text):
            return None
        if self.formula_builder is None:
            self.formula_builder = PageRequestBuilder(self.tokenizer, self.vision, "formula")
        page_input = self.formula_builder.page(fold_wide(image))  # folded, as the formula task reads a crop
        ids, labels = encode_example(page_input.prompt_ids, self.tokenizer, text)
        self.stats.kept += 1
        return Sample(index=index, input_ids=ids, labels=labels, views=page_input.views, profile=FORMULA_CROP)

    def _accept(self, text: str) -> bool:
        """The target filters (empty, too long, degenerate), counted in `stats`."""
        if not text:
            self.stats.empty += 1
            return False
        target_ids = self.tokenizer.encode(text)
        if len(target_ids) + 1 > self.cfg.max_target_tokens:
            self.stats.too_long += 1
            return False
        if is_degenerate(text, target_ids, self.cfg.filters):
            self.stats.degenerate += 1
            return False
        return True

    def _vector_pdf(self, seed: int, ocr: bool):
        """The vector page drawn by `seed`: from all of `vector_dir`'s pages, or (`ocr`) from those with an
        OCR copy (`jocr synth DIR --ocr-copies N`)."""
        from pathlib import Path

        from jocr.train.ocr_copies import copy_paths

        key = "_vector_ocr_pdfs" if ocr else "_vector_pdfs"
        if not hasattr(self, key):
            dirs = self.cfg.vector_dir if isinstance(self.cfg.vector_dir, list) else [self.cfg.vector_dir]
            pdfs = [pdf for d in dirs for pdf in sorted((Path(d) / "pdfs").glob("*.pdf"))]
            if ocr:
                pdfs = [pdf for pdf in pdfs if copy_paths(pdf.parent.parent, pdf.stem)[1].exists()]
            if not pdfs:
                what = "OCR copies (jocr synth DIR --ocr-copies N)" if ocr else "pdfs/*.pdf"
                raise ValueError(f"data.vector_dir {self.cfg.vector_dir} holds no {what}")
            setattr(self, key, pdfs)
        pages = getattr(self, key)
        return pages[seed % len(pages)]

    def _make_vector(self, index: int, seed: int, ocr: bool = False) -> Sample | None:
        """A vector page from `vector_dir`, read exactly as `jocr parse --anchor on` reads a user's PDF, or
        (`ocr`, profile "vector-ocr") its scanned or photographed copy with the lines OCR read from it, as
        `jocr parse` reads an image. An anchored page's target is its Markdown with the anchor's runs as
        references (`window_target`; OCR'd runs found up to OCR's errors, `ocr_reference_form`)."""
        from jocr.lines.anchor import ANCHOR_VERSION, build_windows, page_anchor, window_target

        pdf = self._vector_pdf(seed, ocr)
        text = (pdf.parent.parent / "gt" / f"{pdf.stem}_pg1_repeat1.md").read_text(encoding="utf-8").strip()
        drop = random.Random(f"anchor-dropout/{self.cfg.seed}/{index}").random() < self.cfg.anchor_dropout
        rng = random.Random(f"anchor-window/{self.cfg.seed}/{index}")
        budget = self.cfg.anchor_max_tokens
        if rng.random() < self.cfg.anchor_windows:
            budget = rng.randint(self.cfg.anchor_min_tokens, self.cfg.anchor_max_tokens)
        windows, form = [], None
        if ocr:
            from PIL import Image

            from jocr.train.ocr_copies import ocr_reference_form, read_copy

            copy = read_copy(pdf.parent.parent, pdf.stem)
            with Image.open(copy.image) as opened:
                image = opened.convert("RGB")
            if not drop and copy.lines.usable and copy.lines.lines:
                windows, form = build_windows(copy.lines, self.tokenizer, budget), ocr_reference_form
        else:
            from jocr.documents.pages import LoadOptions, open_source

            with open_source(str(pdf), LoadOptions()) as source:
                image = source.render(0)
                if not drop:
                    decision = page_anchor(source, 0, "on", ANCHOR_VERSION, self.tokenizer, budget)
                    windows = decision.windows if decision.anchored else []
        anchor = None
        if windows:
            # The page in reference form, cut to what the drawn window's reader writes.
            window = rng.randrange(len(windows))
            anchor = windows[window].text
            text = window_target(text, windows, window, form)
        if not self._accept(text):
            return None
        page_input = self.builder.page(image, anchor=anchor)
        ids, labels = encode_example(page_input.prompt_ids, self.tokenizer, text)
        self.stats.kept += 1
        return Sample(
            index=index,
            input_ids=ids,
            labels=labels,
            views=page_input.views,
            profile="vector-ocr" if ocr else "vector",
            anchored=anchor is not None,
        )

    def _make_docqa(self, index: int, seed: int, profile: str = "docqa") -> Sample | None:
        """A question on a `jocr.synth.docqa` document ("docqa") or a chart or table ("charts"), its prompt
        built as `jocr ask` builds it; or a chart's caption ("caption"): the caption prompt on the crop."""
        from jocr.pipeline.ask import question_ids
        from jocr.train.docqa_data import caption_sample_parts, docqa_sample_parts

        if profile == "caption":
            image, question, anchor, target = caption_sample_parts(self, index, seed)
        else:
            folders = self.cfg.charts_dir if profile == "charts" else self.cfg.docqa_dir
            image, question, anchor, target = docqa_sample_parts(self, index, seed, folders)
        target_ids = self.tokenizer.encode(target)
        if not target or len(target_ids) + 1 > self.cfg.max_target_tokens:
            self.stats.too_long += bool(target)
            self.stats.empty += not target
            return None
        views, n = self.builder.views(image)
        ids, labels = encode_example(question_ids(self.builder, n, question, anchor), self.tokenizer, target)
        self.stats.kept += 1
        return Sample(
            index=index,
            input_ids=ids,
            labels=labels,
            views=views,
            profile=profile,
            anchored=anchor is not None,
        )

    def _glyph_targets(self, page, degraded: bool) -> tuple[torch.Tensor, torch.Tensor]:
        from jocr.train.glyph_loss import glyph_targets, ignored_targets

        v = self.vision
        cell = v.base_size // v.clip_grid
        if degraded or page.glyphs is None:  # a degraded page's geometry no longer matches its boxes
            return ignored_targets(v.base_size, v.patch_size, cell)
        return glyph_targets(page.glyphs, v.base_size, v.patch_size, cell, fit=v.single_view_fit)


def _worker_main(cfg: DataConfig, tokenizer_path: str, vision_dict: dict, start: int, out: Any, stop: Any):
    torch.set_num_threads(1)
    from jocr.config import _vision_from_dict
    from jocr.tokenizer import Tokenizer

    maker = SampleMaker(cfg, Tokenizer.from_file(tokenizer_path), _vision_from_dict(vision_dict))
    index = start
    while not stop.is_set():
        try:
            sample = maker.make(index)
        except Exception as exc:  # a generator bug must not kill a long run silently: report and skip
            out.put(("error", index, f"{type(exc).__name__}: {exc}"))
            sample = None
        if sample is not None:
            item = ("sample", sample, maker.stats.as_dict())
            while not stop.is_set():
                try:
                    out.put(item, timeout=0.5)
                    break
                except queue_mod.Full:
                    continue
        index += 1


class SampleStream:
    """Iterates samples from `start` on, rendered by a background process (or inline with workers=0)."""

    def __init__(self, cfg: DataConfig, tokenizer_path: str, vision, start: int = 0, workers: int = 1):
        self.cfg, self.start, self.workers = cfg, start, workers
        self.filter_stats: dict[str, int] = {}
        self.errors: list[str] = []
        self._proc = None
        if workers > 0:
            from dataclasses import asdict

            ctx = mp.get_context("spawn")
            self._queue = ctx.Queue(maxsize=cfg.queue_size)
            self._stop = ctx.Event()
            vdict = asdict(vision)
            self._proc = ctx.Process(
                target=_worker_main,
                args=(cfg, tokenizer_path, vdict, start, self._queue, self._stop),
                daemon=True,
            )
            self._proc.start()
        else:
            from jocr.tokenizer import Tokenizer

            self._maker = SampleMaker(cfg, Tokenizer.from_file(tokenizer_path), vision)
            self._next = start

    def __iter__(self):
        return self

    def __next__(self) -> Sample:
        if self._proc is None:
            while True:
                sample = self._maker.make(self._next)
                self._next += 1
                self.filter_stats = self._maker.stats.as_dict()
                if sample is not None:
                    return sample
        while True:
            try:
                item = self._queue.get(timeout=5.0)
            except queue_mod.Empty:
                if not self._proc.is_alive():
                    raise RuntimeError("the data worker process died; see its stderr") from None
                continue
            if item[0] == "error":
                self.errors.append(f"sample {item[1]}: {item[2]}")
                if len(self.errors) > 50 and len(self.errors) > self.filter_stats.get("kept", 0):
                    raise RuntimeError(f"the data worker keeps failing, last: {self.errors[-1]}")
                continue
            self.filter_stats = item[2]
            return item[1]

    def close(self) -> None:
        if self._proc is not None:
            self._stop.set()
            self._proc.join(timeout=5)
            if self._proc.is_alive():
                self._proc.terminate()
            self._proc = None


def add_input_noise(
    input_ids: torch.Tensor, labels: torch.Tensor, p: float, low: int, high: int, generator=None
) -> torch.Tensor:
    """Replace answer input tokens (labels != IGNORE_INDEX) by uniform ids in [low, high) with probability p.

    input_ids, labels: (B, T); returns a new (B, T) tensor, labels are left as they are.
    """
    if p <= 0:
        return input_ids
    hit = (labels != IGNORE_INDEX) & (torch.rand(input_ids.shape, generator=generator) < p)  # (B, T)
    noise = torch.randint(low, high, input_ids.shape, generator=generator)  # (B, T)
    return torch.where(hit, noise, input_ids)


def collate(samples: list[Sample], pad_id: int) -> dict[str, Any]:
    """Right-pad a batch: input_ids and labels (B, T) long, images one [PageViews] per row."""
    width = max(len(s.input_ids) for s in samples)
    ids = torch.full((len(samples), width), pad_id, dtype=torch.long)  # (B, T)
    labels = torch.full((len(samples), width), IGNORE_INDEX, dtype=torch.long)  # (B, T)
    for row, s in enumerate(samples):
        ids[row, : len(s.input_ids)] = torch.tensor(s.input_ids)
        labels[row, : len(s.labels)] = torch.tensor(s.labels)
    batch = {"input_ids": ids, "labels": labels, "images": [[s.views] for s in samples]}
    with_glyphs = [s for s in samples if s.glyph_fine is not None]
    if with_glyphs:
        for key in ("glyph_fine", "glyph_grid"):  # (B, F*F) and (B, G*G, slots)
            blank = torch.full(getattr(with_glyphs[0], key).shape, IGNORE_INDEX)
            batch[key] = torch.stack([blank if getattr(s, key) is None else getattr(s, key) for s in samples])
    return batch
