"""jocr's model as a Transformers `PreTrainedModel` for `trust_remote_code` (exported as `modeling_jocr.py`).

    model = AutoModel.from_pretrained(path, trust_remote_code=True, use_safetensors=True)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)
    text = model.infer(tokenizer, prompt="<image>\\n...", image_file="page.png", output_path="out",
                       base_size=1024, image_size=640, crop_mode=True, save_results=False, eval_mode=True)

The network is jocr's `OCRModel` itself: `JocrForOCR` holds its submodules under the checkpoint's own names
(`model.*`, `lm_head`, `mtp_module.*`), so the weights load without renaming and the forward pass is the code
the jocr engine runs. Transformers owns the KV cache here: `_CacheView` gives a Transformers `Cache` the cache
protocol of docs/architecture.md (full keys / values and a visibility mask), with left padding masked.
The FastMTP head is loaded but unused: this path decodes with the MoE decoder alone (greedy = the engine's
greedy tokens; speculation never changes them).

Device-agnostic: tensors follow the model's parameters (`model.to("mps")`, `device_map`), nothing names CUDA.
`infer` applies jocr's repetition guard (engine/guard.py: no-repeat 30-gram in a 90-token window with the
table-cell tags exempt, loop detector) and never generates `<image>`, as the engine does; `generate` is
Transformers' own with `<image>` suppressed by the exported generation_config.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import GenerationMixin, LogitsProcessor, PreTrainedModel, StoppingCriteria
from transformers.cache_utils import DynamicCache
from transformers.modeling_outputs import CausalLMOutputWithPast

from jocr.engine.guard import GuardConfig, GuardState
from jocr.integrations.document_page import is_pdf, page_markdown, read_page
from jocr.integrations.hf.configuration import JocrConfig
from jocr.integrations.hf.processing import JocrProcessor, jocr_tokenizer, load_image, vision_settings
from jocr.layout.request import join_windows
from jocr.model.ocr import OCRModel

# `jocr parse`'s default token budget (jocr.pipeline.DEFAULT_MAX_TOKENS, jina-ocr-v1's published default).
DEFAULT_MAX_NEW_TOKENS = 4096
_HAS_CACHE_FIELD = "cache" in CausalLMOutputWithPast.__dataclass_fields__


class _CacheView:
    """jocr's cache protocol over a Transformers `Cache`: `update(layer, k, v, positions)` -> (k_all, v_all,
    mask).

    Slots are the cache's own (a left-padded row's pad tokens occupy slots too), so visibility is causal over
    slots and excludes padding; each token always sees itself so a pad row never attends to nothing."""

    def __init__(self, cache, attention_mask: torch.Tensor | None) -> None:
        self.cache = cache
        self.attention_mask = attention_mask  # (B, S) 1 = real token, or None

    def update(self, layer_idx: int, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor):
        t = k.shape[2]
        k_all, v_all = self.cache.update(k, v, layer_idx)  # (B, H_kv, S, D)
        s = k_all.shape[2]
        slots = torch.arange(s, device=k.device)
        query_slots = slots[s - t :]  # (T,)
        mask = slots[None, :] <= query_slots[:, None]  # (T, S)
        mask = mask[None, None].expand(k.shape[0], 1, t, s)  # (B, 1, T, S)
        if self.attention_mask is not None:
            keep = self.attention_mask[:, -s:].to(device=k.device, dtype=torch.bool)  # (B, S)
            mask = (mask & keep[:, None, None, :]) | (slots[None, :] == query_slots[:, None])[None, None]
        return k_all, v_all, mask


class JocrPreTrainedModel(PreTrainedModel):
    config_class = JocrConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _no_split_modules = ["DecoderLayer"]
    supports_gradient_checkpointing = False

    def _init_weights(self, module) -> None:
        # Checkpoints carry every tensor; a fresh model is initialised with jocr's rule (`init_jocr_weights`).
        pass


class JocrForOCR(JocrPreTrainedModel, GenerationMixin):
    def __init__(self, config: JocrConfig) -> None:
        super().__init__(config)
        core = OCRModel(config.to_ocr_config())
        # The same module objects under the checkpoint's names; `core` (kept outside the module tree, so no
        # parameter is registered twice) runs them with jocr's own code.
        self.model = core.model
        self.lm_head = core.lm_head
        self.rotary = core.rotary
        self.mtp_module = core.mtp_module
        self.__dict__["core"] = core
        self.post_init()

    @property
    def ocr_config(self):
        return self.core.config

    def init_jocr_weights(self, std: float = 0.02, seed: int | None = None) -> JocrForOCR:
        self.core.init_weights(std=std, seed=seed)
        return self

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def get_output_embeddings(self):
        return self.lm_head

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,  # (B, T)
        attention_mask: torch.Tensor | None = None,  # (B, S) over cache + new tokens, 1 = real
        position_ids: torch.LongTensor | None = None,  # (B, T)
        cache=None,
        images: list | None = None,  # one list of PageViews per row (or None), used where <image> ids are
        use_cache: bool | None = None,
        logits_to_keep: int = 0,
        past_key_values=None,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        if input_ids is None:
            raise ValueError("JocrForOCR needs input_ids (image placeholders are spliced into them)")
        cache = cache if cache is not None else past_key_values
        keep_cache = use_cache if use_cache is not None else cache is not None
        if cache is None:
            cache = DynamicCache(config=self.config)
        past = cache.get_seq_length()
        t = input_ids.shape[1]
        if position_ids is None:
            if attention_mask is not None:
                position_ids = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)[:, -t:]  # (B, T)
            else:
                position_ids = torch.arange(past, past + t, device=input_ids.device).expand(
                    input_ids.shape[0], t
                )
        position_ids = position_ids.to(input_ids.device)
        image_embeds = None
        if images is not None and bool((input_ids == self.ocr_config.image_token_id).any()):
            image_embeds = self.core.encode_rows(images)
        embeds = self.core.embed(input_ids, image_embeds)  # (B, T, D)
        keep = logits_to_keep if isinstance(logits_to_keep, int) and logits_to_keep > 0 else None
        out = self.core.decode(embeds, position_ids, _CacheView(cache, attention_mask), keep)
        fields = {"logits": out.logits, "hidden_states": None}
        fields["cache" if _HAS_CACHE_FIELD else "past_key_values"] = cache if keep_cache else None
        return CausalLMOutputWithPast(**fields)

    # DeepSeek-OCR's entry point ---------------------------------------------------------------------------
    @torch.inference_mode()
    def infer(
        self,
        tokenizer,
        prompt: str = "",
        image_file: Any = "",
        output_path: str = "",
        base_size: int | None = None,
        image_size: int | None = None,
        crop_mode: bool | None = None,
        test_compress: bool = False,
        save_results: bool = False,
        eval_mode: bool = False,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        max_tiles: int | None = None,
        return_details: bool = False,
        page: int = 1,
        anchor: str = "auto",
    ):
        """One page -> Markdown, as `jocr parse` writes it (DeepSeek-OCR's `infer` signature, plus `page` and
        `anchor` for PDFs).

        image_file: an image (path or PIL image) or a PDF (path or bytes), of which page `page` (1-based) is
        rendered at 144 dpi and, for a model trained with anchors (config.json `anchor.version`), read with
        its text layer in the prompt (`anchor` "auto" | "on" | "off", as `jocr parse --anchor`; needs
        pypdfium2): one request per anchor window, the answers' run references (`@i`) resolved against it.
        base_size / image_size / crop_mode / max_tiles default to the model's config.json; pass DeepSeek-OCR's
        mode values (e.g. 1024 / 640 / True) to change the views. With save_results the Markdown goes to
        `output_path/result.mmd` (and grounding boxes to `result_with_boxes.jpg`). Without eval_mode the text
        is also printed. return_details gives a dict with the token ids (all requests', in order), finish
        reason, boxes, and for a PDF each request's token ids, the raw answer and the anchoring decision."""
        del test_compress  # DeepSeek-OCR prints compression statistics with it; nothing to compute here
        vision = vision_settings(self.ocr_config.vision, base_size, image_size, crop_mode, max_tiles)
        processor = JocrProcessor(jocr_tokenizer(tokenizer), vision)
        document = None
        if is_pdf(image_file):
            config = self.ocr_config.anchor
            document = read_page(image_file, page, anchor, config, processor.tokenizer)
            image = document.image
        elif page != 1:
            raise ValueError(f"page {page}: only a PDF has pages (image_file is an image)")
        else:
            image = load_image(image_file)
        views, image_tokens = processor.builder.views(image)
        answers = []
        for window in document.anchors if document is not None else [None]:
            ids = processor.prompt_ids(prompt, image_tokens, anchor=window)
            answers.append(self.generate_page(ids, views, processor.tokenizer, max_new_tokens))
        token_ids = [t for tokens, _ in answers for t in tokens]
        if document is None:
            finish = answers[0][1]
            markdown, boxes = processor.postprocess(token_ids, image.size, finish)
        else:
            texts = [processor.decode(tokens) for tokens, _ in answers]
            reasons = [reason for _, reason in answers]
            markdown, boxes, finish = page_markdown(processor.builder, document, texts, reasons)
        if save_results:
            _save_results(Path(output_path or "."), markdown, boxes, image)
        if not eval_mode:
            print(markdown)
        if return_details:
            details = {"text": markdown, "token_ids": token_ids, "finish_reason": finish, "boxes": boxes}
            if document is not None:
                details["requests"] = [tokens for tokens, _ in answers]
                details["raw"] = join_windows([processor.decode(tokens) for tokens, _ in answers])
                details["anchor"] = document.anchor.to_dict()
            return details
        return markdown

    def generate_page(
        self, prompt_ids: list[int], views, tokenizer, max_new_tokens: int, guard: GuardConfig | None = None
    ):
        """Greedy tokens for one page with the engine's stop rules: (generated ids without the stop token,
        finish reason "stop" | "length" | "repetition"). guard: the repetition guard's settings (default: the
        engine's, with the tokenizer's `<td>`/`</td>` exempt)."""
        tok = jocr_tokenizer(tokenizer)
        # The engine's limit (jocr.engine.generate): output stops where prompt + output would pass the model's
        # trained positions, with finish reason "length".
        positions = self.ocr_config.decoder.max_position_embeddings
        max_new_tokens = min(max_new_tokens, positions - len(prompt_ids))
        if max_new_tokens < 1:
            return [], "length"
        guard = _Guard(guard or GuardConfig(whitelist_ids=tuple(tok.td_ids)), len(prompt_ids))
        input_ids = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)  # (1, T)
        out = self.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            images=[[views]],
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            eos_token_id=tok.eos_id,
            pad_token_id=tok.pad_id,
            suppress_tokens=[self.ocr_config.image_token_id],
            logits_processor=[guard.processor()],
            stopping_criteria=[guard.criterion()],
        )
        generated = out[0, len(prompt_ids) :].tolist()
        if generated and generated[-1] == tok.eos_id:
            return generated[:-1], "stop"
        if guard.looped[0]:
            return generated, "repetition"
        return generated, "length"


class _Guard:
    """jocr's repetition guard over Transformers' generation loop: one GuardState per row, fed the generated
    tokens as they appear (the logits processor bans, the stopping criterion ends a looping row)."""

    def __init__(self, config: GuardConfig, prompt_len: int) -> None:
        self.config = config
        self.prompt_len = prompt_len
        self.states: list[GuardState] = []
        self.looped: list[bool] = []

    def sync(self, input_ids: torch.Tensor) -> None:  # input_ids: (B, prompt + generated)
        if not self.states:
            self.states = [GuardState(self.config) for _ in range(input_ids.shape[0])]
            self.looped = [False] * input_ids.shape[0]
        for b, state in enumerate(self.states):
            new = input_ids[b, self.prompt_len + len(state.tokens) :].tolist()
            for token in new:
                self.looped[b] = state.push(int(token)) or self.looped[b]

    def processor(self) -> LogitsProcessor:
        guard = self

        class _Ban(LogitsProcessor):
            def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
                guard.sync(input_ids)
                for b, state in enumerate(guard.states):
                    banned = state.banned()
                    if banned:
                        scores[b, list(banned)] = float("-inf")
                return scores

        return _Ban()

    def criterion(self) -> StoppingCriteria:
        guard = self

        class _Loop(StoppingCriteria):
            def __call__(
                self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs
            ) -> torch.BoolTensor:
                guard.sync(input_ids)
                return torch.tensor(guard.looped, dtype=torch.bool, device=input_ids.device)

        return _Loop()


def _save_results(out_dir: Path, markdown: str, boxes, page_image) -> None:
    """DeepSeek-OCR's result files: result.mmd, and result_with_boxes.jpg (the page the model read, boxes
    drawn) for output with grounding boxes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "result.mmd").write_text(markdown, encoding="utf-8")
    if boxes:
        from PIL import ImageDraw

        image = page_image.convert("RGB")
        draw = ImageDraw.Draw(image)
        for box in boxes:
            draw.rectangle((box.x1, box.y1, box.x2, box.y2), outline=(255, 0, 0), width=2)
        image.save(out_dir / "result_with_boxes.jpg")
