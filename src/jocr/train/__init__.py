"""Training: SFT, robustness, GRPO, merge, FastMTP head fitting (docs/training.md)."""

# Label value that cross-entropy skips (PyTorch's default `ignore_index`): prompt and padding positions.
IGNORE_INDEX = -100
