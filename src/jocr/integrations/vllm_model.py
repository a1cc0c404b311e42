"""jocr's OCR model as a vLLM model class (architecture "JocrOCRForCausalLM"); imported only inside vLLM.

- Vision: jocr's own DeepEncoder modules and `OCRModel.encode_images` (the code the jocr engine runs), fed
  by jocr's own preprocessing (`jocr.documents.preprocess`: PIL, numpy, torch; no torchvision), so the image
  embeddings and `<image>` counts follow the jocr config (tile sizes, 2..max_tiles, token grid) instead of the
  sizes vLLM's DeepSeek-OCR class fixes in code.
- Decoder: vLLM's own DeepSeek-V2 model (plain multi-head attention, fused MoE, paged KV cache), built from a
  DeepSeek-V2 text config derived from the jocr config.
- Hidden states: `forward` returns the state that jocr's FastMTP head is fed (`MTPConfig.feedback`: before or
  after the final norm) because vLLM hands exactly that tensor to an EAGLE draft; `compute_logits` applies the
  final norm itself when it was left out, so the verifier's logits are unchanged.

Checkpoint names are jocr's published layout (`model.sam_model.*`, `model.layers.*`, `lm_head`, ...); the
FastMTP tensors (`mtp_module.*`) belong to the draft class in vllm_mtp.py and are skipped here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import torch
from torch import nn
from transformers import BatchFeature
from vllm.config import VllmConfig
from vllm.config.multimodal import MultiModalDummyOptions
from vllm.model_executor.models.interfaces import MultiModalEmbeddings, SupportsMultiModal
from vllm.model_executor.models.utils import (
    AutoWeightsLoader,
    WeightsMapper,
    init_vllm_registered_model,
    maybe_prefix,
)
from vllm.multimodal import MULTIMODAL_REGISTRY
from vllm.multimodal.inputs import MultiModalFieldConfig, MultiModalKwargsItems
from vllm.multimodal.parse import ImageProcessorItems, ImageSize, MultiModalDataItems
from vllm.multimodal.processing import (
    BaseDummyInputsBuilder,
    BaseMultiModalProcessor,
    BaseProcessingInfo,
    PromptReplacement,
    PromptUpdate,
)
from vllm.sequence import IntermediateTensors

from jocr.config import OCRConfig
from jocr.documents.preprocess import candidate_grids, image_tokens_for_size
from jocr.integrations.vllm_config import ocr_config_from_hf, text_config_for
from jocr.layout.request import PageRequestBuilder
from jocr.model.ocr import OCRModel
from jocr.model.vision import ClipEncoder, Projector, SamEncoder
from jocr.tokenizer import IMAGE_TOKEN
from jocr.types import PageViews


def _ocr_config(ctx_or_config) -> OCRConfig:
    return ocr_config_from_hf(ctx_or_config)


# Multimodal processing -------------------------------------------------------------------------------------
class JocrProcessingInfo(BaseProcessingInfo):
    def ocr_config(self) -> OCRConfig:
        return _ocr_config(self.get_hf_config())

    def get_supported_mm_limits(self) -> Mapping[str, int | None]:
        return {"image": None}

    def check_image_token(self) -> None:
        """Refuse a checkpoint whose tokenizer does not encode "<image>" as the config's image_token_id.

        The processor expands only the config's id (`_get_prompt_updates`), but vLLM writes two kinds of
        prompt as text and tokenizes them with the checkpoint's tokenizer: its start-up profiling prompt
        (`get_dummy_text`; vllm/multimodal/processing/processor.py, `get_dummy_inputs`) and chat requests.
        With `<image>` at another id neither holds a placeholder to expand, and vLLM stops on a bare
        assertion ("Failed to apply prompt replacement for mm_items['image'][0]") while the engine starts;
        this names the two ids instead (as jocr.integrations.hf.export does for the same mismatch)."""
        expected = self.ocr_config().image_token_id
        ids = list(self.get_tokenizer().encode(IMAGE_TOKEN, add_special_tokens=False))
        if ids != [expected]:
            where = getattr(self.get_hf_config(), "name_or_path", None) or "the checkpoint"
            raise ValueError(
                f"{where}: config.json says image_token_id {expected} but its tokenizer encodes "
                f"{IMAGE_TOKEN!r} as {ids}; vLLM would find no {IMAGE_TOKEN} placeholder to expand. Put "
                f"{IMAGE_TOKEN} at id {expected} in tokenizer.json, or set image_token_id in config.json to "
                f"its id there"
            )

    def get_supported_mm_processor_kwargs(self) -> dict[str, set[str]]:
        # No Hugging Face processor exists for jocr: preprocessing takes no per-request kwargs.
        return {"text_kwargs": set(), "images_kwargs": set()}

    def get_num_image_tokens(self, *, image_width: int, image_height: int) -> int:
        return image_tokens_for_size(image_width, image_height, self.ocr_config().vision)

    def get_image_size_with_most_features(self) -> ImageSize:
        """The image size whose tile grid yields the most `<image>` tokens (for vLLM's memory profiling)."""
        v = self.ocr_config().vision
        sizes = [(v.base_size, v.base_size)]
        if v.crop_mode:
            sizes += [
                (v.tile_size * c, v.tile_size * r) for c, r in candidate_grids(v.min_tiles, v.max_tiles)
            ]
        width, height = max(sizes, key=lambda wh: image_tokens_for_size(wh[0], wh[1], v))
        return ImageSize(width=width, height=height)


class JocrDummyInputsBuilder(BaseDummyInputsBuilder[JocrProcessingInfo]):
    def get_dummy_text(self, mm_counts: Mapping[str, int]) -> str:
        return IMAGE_TOKEN * mm_counts.get("image", 0)

    def get_dummy_mm_data(
        self,
        seq_len: int,
        mm_counts: Mapping[str, int],
        mm_options: MultiModalDummyOptions | None = None,
    ):
        size = self.info.get_image_size_with_most_features()
        return {
            "image": self._get_dummy_images(
                width=size.width, height=size.height, num_images=mm_counts.get("image", 0)
            )
        }


class JocrMultiModalProcessor(BaseMultiModalProcessor[JocrProcessingInfo]):
    def __init__(self, info: JocrProcessingInfo, *args: object, **kwargs: object) -> None:
        super().__init__(info, *args, **kwargs)
        if info.ctx.tokenizer is not None:  # without a tokenizer vLLM takes no text prompts at all
            info.check_image_token()

    def _call_hf_processor(
        self, hf_data: Mapping[str, object], hf_kwargs: Mapping[str, object]
    ) -> BatchFeature:
        """jocr preprocessing in place of a Hugging Face processor: a global view per image, its tiles."""
        vision = self.info.ocr_config().vision
        builder = PageRequestBuilder(None, vision)
        views = [builder.views(image)[0] for image in hf_data.get("images", [])]
        tile = vision.tile_size
        crops = [pv.tiles for pv in views if pv.tiles is not None]
        return BatchFeature(
            {
                "pixel_values": torch.stack([pv.global_view for pv in views]),  # (N, 3, base, base)
                "images_crop": torch.cat(crops)
                if crops
                else torch.zeros(0, 3, tile, tile),  # (sum n, 3, t, t)
                # (N, 2): (cols, rows), with (0, 0) for an untiled image so "no tiles" is explicit.
                "images_spatial_crop": torch.tensor(
                    [list(pv.grid) if pv.tiles is not None else [0, 0] for pv in views], dtype=torch.long
                ),
            }
        )

    def _get_mm_fields_config(
        self, hf_inputs: BatchFeature, hf_processor_mm_kwargs: Mapping[str, object]
    ) -> Mapping[str, MultiModalFieldConfig]:
        spatial = hf_inputs.get("images_spatial_crop", torch.empty((0, 2), dtype=torch.long))
        tiles_per_image = spatial.prod(dim=-1)  # 0 for untiled images
        return dict(
            pixel_values=MultiModalFieldConfig.batched("image"),
            images_spatial_crop=MultiModalFieldConfig.batched("image", keep_on_cpu=True),
            images_crop=MultiModalFieldConfig.flat_from_sizes("image", tiles_per_image),
        )

    def _get_prompt_updates(
        self,
        mm_items: MultiModalDataItems,
        hf_processor_mm_kwargs: Mapping[str, object],
        out_mm_kwargs: MultiModalKwargsItems,
    ) -> Sequence[PromptUpdate]:
        image_token_id = self.info.ocr_config().image_token_id

        def replacement(item_idx: int) -> list[int]:
            images = mm_items.get_items("image", ImageProcessorItems)
            size = images.get_image_size(item_idx)
            n = self.info.get_num_image_tokens(image_width=size.width, image_height=size.height)
            return [image_token_id] * n

        # Each `<image>` in the prompt becomes the image's full placeholder run (jocr Tokenizer.build_prompt).
        return [PromptReplacement(modality="image", target=[image_token_id], replacement=replacement)]


# Model -----------------------------------------------------------------------------------------------------
class _VisionTower(nn.Module):
    """jocr's DeepEncoder under the checkpoint's `model.*` names; encodes with `OCRModel.encode_images`."""

    # The engine's own image path, shared so vLLM's image embeddings are the engine's.
    encode_images = OCRModel.encode_images
    _encode_views = OCRModel._encode_views
    _with_newlines = OCRModel._with_newlines

    def __init__(self, config: OCRConfig) -> None:
        super().__init__()
        v = config.vision
        self.config = config
        self.model = nn.Module()
        self.model.sam_model = SamEncoder(v)
        self.model.vision_model = ClipEncoder(v)
        self.model.projector = Projector(v)
        self.model.image_newline = nn.Parameter(torch.zeros(v.projector_dim))
        self.model.view_seperator = nn.Parameter(torch.zeros(v.projector_dim))

    @property
    def dtype(self) -> torch.dtype:
        return self.model.image_newline.dtype

    @property
    def device(self) -> torch.device:
        return self.model.image_newline.device


@MULTIMODAL_REGISTRY.register_processor(
    JocrMultiModalProcessor, info=JocrProcessingInfo, dummy_inputs=JocrDummyInputsBuilder
)
class JocrOCRForCausalLM(nn.Module, SupportsMultiModal):
    hf_to_vllm_mapper = WeightsMapper(
        orig_to_new_prefix={
            "model.embed_tokens.": "language_model.model.embed_tokens.",
            "model.layers.": "language_model.model.layers.",
            "model.norm.": "language_model.model.norm.",
            "lm_head.": "language_model.lm_head.",
            "model.": "vision.model.",
        }
    )

    @classmethod
    def get_placeholder_str(cls, modality: str, i: int) -> str | None:
        if modality.startswith("image"):
            return "<image>"
        raise ValueError("only images are supported")

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        self.ocr_config = _ocr_config(vllm_config.model_config.hf_config)
        self.config = vllm_config.model_config.hf_config
        if not hasattr(self.config, "image_token_index"):
            # vLLM's speculative proposer reads it from the target config (published configs lack it).
            self.config.image_token_index = self.ocr_config.image_token_id
        self.pre_norm_feedback = self.ocr_config.mtp.feedback == "pre_norm"
        with self._mark_tower_model(vllm_config, "image"):
            self.vision = _VisionTower(self.ocr_config)
        with self._mark_language_model(vllm_config):
            self.language_model = init_vllm_registered_model(
                vllm_config=vllm_config,
                hf_config=text_config_for(self.ocr_config),
                prefix=maybe_prefix(prefix, "language_model"),
            )
        if self.pre_norm_feedback:
            # DeepseekV2Model returns the last layer's pre-norm state as an extra output when asked for the
            # "aux hidden state" after its last layer (its EAGLE-3 hook); that is the FastMTP input.
            n = self.ocr_config.decoder.num_hidden_layers
            self.language_model.set_aux_hidden_state_layers((n,))
        self.make_empty_intermediate_tensors = self.language_model.make_empty_intermediate_tensors

    def get_language_model(self) -> nn.Module:
        return self.language_model

    def embed_multimodal(self, **kwargs: object) -> MultiModalEmbeddings | None:
        pixel_values = kwargs.get("pixel_values")  # (N, 3, base, base)
        if pixel_values is None:
            return None
        crops = kwargs.get("images_crop")  # (sum n, 3, t, t)
        spatial = kwargs["images_spatial_crop"]  # (N, 2) (cols, rows) or (0, 0)
        views, offset = [], 0
        for i in range(pixel_values.shape[0]):
            cols, rows = (int(x) for x in spatial[i])
            n = cols * rows
            tiles = crops[offset : offset + n] if n else None
            offset += n
            views.append(
                PageViews(global_view=pixel_values[i], tiles=tiles, grid=(cols, rows) if n else (1, 1))
            )
        with torch.no_grad():
            return self.vision.encode_images(views)

    def forward(
        self,
        input_ids: torch.Tensor | None,  # (T,) flattened over the batch
        positions: torch.Tensor,  # (T,)
        intermediate_tensors: IntermediateTensors | None = None,
        inputs_embeds: torch.Tensor | None = None,  # (T, D)
        **kwargs: object,
    ) -> torch.Tensor:
        out = self.language_model.model(
            input_ids, positions, intermediate_tensors, inputs_embeds=inputs_embeds
        )
        if self.pre_norm_feedback:
            _, (pre_norm,) = out
            return pre_norm  # (T, D)
        return out

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        if self.pre_norm_feedback:
            hidden_states = self.language_model.model.norm(hidden_states)
        return self.language_model.compute_logits(hidden_states)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        loader = AutoWeightsLoader(self, ignore_unexpected_prefixes=["mtp_module."])
        return loader.load_weights(weights, mapper=self.hf_to_vllm_mapper)
