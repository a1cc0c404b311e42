"""The SFT stage's vision heads as one object: the bag-of-tokens head, the raster CTC reading head and the
glyph heads (train/vision_aux.py, train/glyph_loss.py), the taps that feed them, their losses, their state
in the checkpoint and the files that hand them on to the next stage."""

from __future__ import annotations

from pathlib import Path

import torch

CTC_HEAD_FILE = "ctc_head.pt"
GLYPH_HEADS_FILE = "glyph_heads.pt"


class VisionHeads:
    """Built from `data` weights (0 leaves a head out). Each head starts from the trainer state when
    resuming, else from the file its previous stage left beside the model this run starts from (so a
    reading head goes on reading), else fresh."""

    def __init__(self, model, data, state: dict, start_dir: str | None):
        self.data = data
        dim, vocab = model.config.vision.projector_dim, model.config.decoder.vocab_size
        self.aux = self.ctc = self.glyph = None
        self.tap = self.neck_tap = None

        def resume(head, key: str, carried_file: str | None = None):
            carried = Path(start_dir) / carried_file if start_dir and carried_file else None
            if key in state:
                head.load_state_dict(state[key])
            elif carried is not None and carried.is_file():
                head.load_state_dict(torch.load(carried, weights_only=True))
            return head

        if data.vision_aux_weight > 0:
            from jocr.train.vision_aux import BagOfTokensHead

            self.aux = resume(BagOfTokensHead(dim, vocab), "aux_head")
        if data.vision_ctc_weight > 0:
            from jocr.train.vision_aux import GridCTCHead

            self.ctc = resume(GridCTCHead(dim), "ctc_head", CTC_HEAD_FILE)
        if data.vision_glyph_weight > 0:
            from jocr.train.glyph_loss import GlyphHeads
            from jocr.train.vision_aux import OutputTap

            channels = model.config.vision.sam_out_channels
            self.glyph = resume(GlyphHeads(channels, dim), "glyph_heads", GLYPH_HEADS_FILE)
            self.neck_tap = OutputTap(model.model.sam_model.neck)
        if self.heads:
            from jocr.train.vision_aux import OutputTap

            self.tap = OutputTap(model.model.projector)

    @property
    def heads(self) -> list[torch.nn.Module]:
        return [h for h in (self.aux, self.ctc, self.glyph) if h is not None]

    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for h in self.heads for p in h.parameters()]

    def losses(self, batch, n_samples: int, tokenizer, window: dict) -> dict[str, torch.Tensor]:
        """The heads' losses {aux, ctc, glyph} on the features the last forward produced (empty without
        heads or features); glyph accuracies are added to `window`."""
        parts: dict[str, torch.Tensor] = {}
        if self.tap is None:
            return parts
        from jocr.train.vision_aux import bag_of_tokens_loss, grid_ctc_loss, visible_text

        feats = self.tap.take()  # (B, N, D) with one view per row
        # Taken every step, so that a skipped step never leaves its maps for the next one.
        neck = self.neck_tap.take() if self.neck_tap is not None else None  # (B, C, F, F)
        first = tokenizer.image_id + 1  # ids below are specials
        if feats is None or feats.shape[0] != n_samples:
            return parts
        if self.aux is not None:
            parts["aux"] = bag_of_tokens_loss(self.aux, feats, batch["labels"], first)
        if self.ctc is not None:
            texts = [visible_text(tokenizer.decode(row[row >= first])) for row in batch["labels"]]
            parts["ctc"] = grid_ctc_loss(self.ctc, feats, texts)
        glyph_ready = neck is not None and neck.shape[0] == n_samples and "glyph_fine" in batch
        if self.glyph is not None and glyph_ready:
            from jocr.train.glyph_loss import glyph_loss

            glyph, stats = glyph_loss(self.glyph, neck, feats, batch["glyph_fine"], batch["glyph_grid"])
            parts["glyph"] = glyph
            window["fine_acc"] += stats["fine_acc"]
            window["grid_acc"] += stats["grid_acc"]
        return parts

    def add_weighted(self, total: torch.Tensor, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        """total + each part times its `data` weight, in the order aux, ctc, glyph."""
        weights = (
            ("aux", self.data.vision_aux_weight),
            ("ctc", self.data.vision_ctc_weight),
            ("glyph", self.data.vision_glyph_weight),
        )
        for key, weight in weights:
            if key in parts:
                total = total + weight * parts[key]
        return total

    def save_state(self, state: dict) -> None:
        for key, head in (("aux_head", self.aux), ("ctc_head", self.ctc), ("glyph_heads", self.glyph)):
            if head is not None:
                state[key] = head.state_dict()

    def save_files(self, out_dir: Path) -> None:
        """The reading heads beside a finished model, for the stage that starts from it."""
        if self.ctc is not None:
            torch.save(self.ctc.state_dict(), out_dir / CTC_HEAD_FILE)
        if self.glyph is not None:
            torch.save(self.glyph.state_dict(), out_dir / GLYPH_HEADS_FILE)

    def close(self) -> None:
        for tap in (self.tap, self.neck_tap):
            if tap is not None:
                tap.close()
