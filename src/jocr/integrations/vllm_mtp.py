"""jocr's FastMTP head as a vLLM EAGLE draft (architecture "EagleJocrOCRForCausalLM"); imported only in vLLM.

Why "eagle" and not vLLM's "mtp" method: FastMTP applies one block recursively, feeding each step the head's
own output state (arXiv 2509.18362; the jina-ocr-v1 recipe), which is what vLLM's EAGLE proposer does
(`v1/spec_decode/llm_base_proposer.py`: step 1 takes the verifier's hidden state, later steps the state this
class returns). vLLM verifies the drafts greedily, so the committed text is the verifier's greedy text.

One draft step: h' = mtp_block(eh_proj(concat(enorm(embed(t_next)), hnorm(h)))); logits = lm_head(norm(h')).
`forward` returns h' as both of EAGLE's outputs (the state to sample from and the state fed back); with
`MTPConfig.feedback == "post_norm"` it returns norm(h') instead, and `compute_logits` skips the norm.
Embedding and lm_head are shared with the verifier by vLLM's proposer (no `has_own_*` flag set when the jocr
config shares them); the shared final norm is loaded from the checkpoint's `model.norm`.

vLLM's proposer lays out the draft's first pass as jocr's engine does: the state at position p is paired with
token p + 1 at RoPE position p, and the drafter sees token ids (`<image>` placeholders embed as the token),
not the vision embeddings.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.logits_processor import LogitsProcessor
from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead, VocabParallelEmbedding
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.models.deepseek_v2 import DeepseekV2DecoderLayer

from jocr.integrations.vllm_config import ocr_config_from_hf, text_config_for

_HEAD = "mtp_module.heads.0."
# (fused vLLM parameter, checkpoint name, shard id): vLLM fuses q/k/v and gate/up projections.
_STACKED = (
    (".qkv_proj", ".q_proj", "q"),
    (".qkv_proj", ".k_proj", "k"),
    (".qkv_proj", ".v_proj", "v"),
    (".gate_up_proj", ".gate_proj", 0),
    (".gate_up_proj", ".up_proj", 1),
)


class _FastMTPHead(nn.Module):
    def __init__(self, vllm_config: VllmConfig, ocr_config, prefix: str) -> None:
        super().__init__()
        d = ocr_config.decoder
        text = text_config_for(ocr_config)
        # The FastMTP block is dense (FastMTP, arXiv 2509.18362: a dense block, MLP width intermediate_size).
        text.first_k_dense_replace = d.num_hidden_layers + 1
        self.embed_tokens = VocabParallelEmbedding(
            d.vocab_size, d.hidden_size, prefix=f"{prefix}.embed_tokens"
        )
        self.enorm = RMSNorm(d.hidden_size, eps=d.rms_norm_eps)
        self.hnorm = RMSNorm(d.hidden_size, eps=d.rms_norm_eps)
        self.eh_proj = nn.Linear(2 * d.hidden_size, d.hidden_size, bias=False)
        # The layer index in the prefix gives the block its own KV-cache layer after the verifier's layers
        # (the jocr engine uses cache layer index num_hidden_layers for it too).
        self.mtp_block = DeepseekV2DecoderLayer(
            vllm_config, prefix=f"{prefix}.layers.{d.num_hidden_layers}", config=text
        )
        self.norm = RMSNorm(d.hidden_size, eps=d.rms_norm_eps)

    def forward(
        self,
        input_ids: torch.Tensor,  # (T,)
        positions: torch.Tensor,  # (T,)
        hidden_states: torch.Tensor,  # (T, D) verifier state or the previous step's output
    ) -> torch.Tensor:
        embeds = self.embed_tokens(input_ids)  # (T, D)
        x = torch.cat([self.enorm(embeds), self.hnorm(hidden_states.to(embeds.dtype))], dim=-1)  # (T, 2D)
        h, residual = self.mtp_block(positions, self.eh_proj(x), None)
        return h + residual  # (T, D) block output before the final norm


class EagleJocrOCRForCausalLM(nn.Module):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        spec = vllm_config.speculative_config
        assert spec is not None, "the FastMTP draft runs only as a speculative draft model"
        self.config = spec.draft_model_config.hf_config
        self.ocr_config = ocr_config_from_hf(self.config)
        mtp = self.ocr_config.mtp
        if not mtp.enabled:
            raise ValueError(
                "this checkpoint has no FastMTP head (mtp.enabled is false); drop speculative_config"
            )
        d = self.ocr_config.decoder
        self.post_norm_feedback = mtp.feedback == "post_norm"
        self.model = _FastMTPHead(vllm_config, self.ocr_config, prefix="model")
        self.lm_head = ParallelLMHead(d.vocab_size, d.hidden_size, prefix="lm_head")
        self.logits_processor = LogitsProcessor(d.vocab_size)
        # vLLM's proposer replaces the draft's embedding / lm_head by the verifier's unless these are True
        # (llm_base_proposer.py `_maybe_share_embeddings`, `_maybe_share_lm_head`).
        self.has_own_embed_tokens = not mtp.share_embedding
        self.has_own_lm_head = not mtp.share_lm_head
        self._checkpoint_names = self._name_map()

    def _name_map(self) -> dict[str, str]:
        """vLLM parameter name -> checkpoint name for the tensors that are not under the head's own prefix."""
        mtp = self.ocr_config.mtp
        return {
            "model.embed_tokens.weight": _HEAD + "embed_tokens.weight"
            if not mtp.share_embedding
            else "model.embed_tokens.weight",
            "model.norm.weight": _HEAD + "shared_head.norm.weight"
            if not mtp.share_norm
            else "model.norm.weight",
            "lm_head.weight": _HEAD + "shared_head.head.weight"
            if not mtp.share_lm_head
            else "lm_head.weight",
        }

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model.embed_tokens(input_ids)

    def forward(
        self,
        input_ids: torch.Tensor,  # (T,)
        positions: torch.Tensor,  # (T,)
        hidden_states: torch.Tensor,  # (T, D)
        inputs_embeds: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if inputs_embeds is not None:
            raise NotImplementedError("the FastMTP draft takes token ids, not input embeddings")
        h = self.model(input_ids, positions, hidden_states)
        if self.post_norm_feedback:
            h = self.model.norm(h)
        return h, h

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        if not self.post_norm_feedback:
            hidden_states = self.model.norm(hidden_states)
        return self.logits_processor(self.lm_head, hidden_states)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        """Load the head from the full jocr checkpoint (the same directory as the verifier's)."""
        params = dict(self.named_parameters())
        wanted = {ckpt: name for name, ckpt in self._checkpoint_names.items()}
        loaded: set[str] = set()
        for ckpt_name, tensor in weights:
            if ckpt_name in wanted:
                name = wanted[ckpt_name]
                param = params[name]
                getattr(param, "weight_loader", default_weight_loader)(param, tensor)
                loaded.add(name)
                continue
            if not ckpt_name.startswith(_HEAD):
                continue  # the verifier's tensors
            name = "model." + ckpt_name[len(_HEAD) :]
            for fused, part, shard in _STACKED:
                if part in name:
                    name = name.replace(part, fused)
                    param = params[name]
                    param.weight_loader(param, tensor, shard)
                    break
            else:
                if name not in params:
                    continue  # e.g. unshared-head tensors already handled through _name_map
                param = params[name]
                getattr(param, "weight_loader", default_weight_loader)(param, tensor)
            loaded.add(name)
        return loaded
