import torch
import torch.nn.functional as F

from jocr.train import IGNORE_INDEX
from jocr.train.config import TrainConfig
from jocr.train.curves import read_log
from jocr.train.data import DataConfig, Stage, encode_example, sample_plan
from jocr.train.sft import answer_loss, train_sft


def test_answer_loss_matches_manual_cross_entropy():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7)
    labels = torch.tensor(
        [[IGNORE_INDEX, IGNORE_INDEX, 3, 4, 1], [IGNORE_INDEX, 2, 6, IGNORE_INDEX, IGNORE_INDEX]]
    )
    loss, correct, n = answer_loss(logits, labels)
    manual = [
        F.cross_entropy(logits[0, 1:4], labels[0, 2:5], reduction="sum"),
        F.cross_entropy(logits[1, 0:2], labels[1, 1:3], reduction="sum"),
    ]
    assert n == 5
    assert torch.allclose(loss, sum(manual) / 5)
    preds = torch.cat(
        [logits[0, 1:4].argmax(-1) == labels[0, 2:5], logits[1, 0:2].argmax(-1) == labels[1, 1:3]]
    )
    assert int(correct) == int(preds.sum())


def test_encode_example_masks_prompt_and_ends_with_eos():
    from jocr.tokenizer import Tokenizer

    tok = Tokenizer.byte_level()
    ids, labels = encode_example(tok.build_prompt("OCR.", 5), tok, "hi")
    assert ids[0] == tok.bos_id and ids[1:6] == [tok.image_id] * 5
    n_prompt = len(tok.build_prompt("OCR.", 5))
    assert labels[:n_prompt] == [IGNORE_INDEX] * n_prompt
    assert labels[n_prompt:] == tok.encode("hi") + [tok.eos_id] == ids[n_prompt:]


def test_sample_plan_follows_stages_deterministically():
    cfg = DataConfig(
        stages=[Stage(samples=3, profiles={"a": 1.0}), Stage(samples=10, profiles={"b": 1.0}, degrade=1.0)]
    )
    plans = [sample_plan(cfg, i) for i in range(6)]
    assert [p[0] for p in plans] == ["a", "a", "a", "b", "b", "b"]
    assert [p[1] for p in plans] == [False] * 3 + [True] * 3
    assert plans == [sample_plan(cfg, i) for i in range(6)]
    assert len({p[2] for p in plans}) == 6


def _cfg(tmp_path, tok_path, max_steps, model):
    return TrainConfig.from_dict(
        {
            "kind": "sft",
            "run_dir": str(tmp_path / "run"),
            "model": model,
            "tokenizer": {"path": str(tok_path)},
            "data": {
                "prompt": "OCR.",
                "stages": [{"samples": 1000, "profiles": {"cpu-lines": 1.0}}],
                "dedup": False,
                "input_noise": 0.1,
                "vision_aux_weight": 0.5,
            },
            "optim": {"lr": 3e-3, "warmup_steps": 5},
            "batch_size": 8,
            "max_steps": max_steps,
            "log_every": 5,
            "workers": 0,
            "threads": 1,
        }
    )


def test_sft_learns_and_resumes(tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg):
    out = train_sft(_cfg(tmp_path, byte_tokenizer_path, 20, tiny_model_cfg), log=lambda *a: None)
    assert (
        out.name == "final" and (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    )
    first = read_log(tmp_path / "run" / "log.jsonl")
    assert first[0]["loss"] > 1.5 * first[-1]["loss"], [r["loss"] for r in first]
    state = torch.load(tmp_path / "run" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert state["step"] == 20 and state["next_index"] == 160
    # raising max_steps resumes from the checkpoint instead of starting over
    train_sft(_cfg(tmp_path, byte_tokenizer_path, 25, tiny_model_cfg), log=lambda *a: None)
    steps = [r["step"] for r in read_log(tmp_path / "run" / "log.jsonl")]
    assert steps == [5, 10, 15, 20, 25]
    state = torch.load(tmp_path / "run" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert state["step"] == 25 and state["next_index"] == 200 and "aux_head" in state
    assert all(r["vision_aux"] > 0 for r in read_log(tmp_path / "run" / "log.jsonl"))
    assert (tmp_path / "run" / "curves.png").is_file()


def test_batch_loss_equals_full_logits_loss(tiny_model_cfg, fake_synth, byte_tokenizer_path, tmp_path):
    from jocr.tokenizer import Tokenizer
    from jocr.train.data import SampleMaker, collate
    from jocr.train.sft import batch_loss, build_model

    cfg = _cfg(tmp_path, byte_tokenizer_path, 1, tiny_model_cfg)
    tok = Tokenizer.from_file(byte_tokenizer_path)
    model = build_model(cfg, tok)
    maker = SampleMaker(cfg.data, tok, model.config.vision)
    batch = collate([maker.make(i) for i in range(3)], tok.pad_id)
    fast, correct, n = batch_loss(model, batch)
    full = model(batch["input_ids"], images=batch["images"])
    ref, ref_correct, ref_n = answer_loss(full.logits, batch["labels"])
    assert n == ref_n and int(correct) == int(ref_correct)
    assert torch.allclose(fast, ref, atol=1e-5)
    # per sample: the mean of the rows' own token means (rows of different lengths, so it differs)
    assert len({int((batch["labels"][r] != IGNORE_INDEX).sum()) for r in range(3)}) > 1
    per_row, _, _ = batch_loss(model, batch, per_sample=True)
    rows = [answer_loss(full.logits[r : r + 1], batch["labels"][r : r + 1])[0] for r in range(3)]
    assert torch.allclose(per_row, sum(rows) / 3, atol=1e-5)


def test_input_noise_touches_only_answer_inputs():
    from jocr.train.data import add_input_noise

    ids = torch.arange(40).view(2, 20)
    labels = torch.full((2, 20), IGNORE_INDEX)
    labels[:, 10:] = ids[:, 10:]
    g = torch.Generator().manual_seed(0)
    noisy = add_input_noise(ids, labels, 0.5, 100, 200, generator=g)
    assert torch.equal(noisy[:, :10], ids[:, :10])
    changed = noisy[:, 10:] != ids[:, 10:]
    assert 0 < int(changed.sum()) < 20 and bool((noisy[:, 10:][changed] >= 100).all())
    assert torch.equal(add_input_noise(ids, labels, 0.0, 100, 200), ids)


def test_zero_mean_convs_blind_filters_to_flat_inputs():
    import pytest

    from jocr.train.sft import zero_mean_convs

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.Linear(2, 2))
    zero_mean_convs(model, ["0.weight"])
    flat = torch.ones(1, 3, 5, 5)
    assert model[0](flat).abs().max() < 1e-6
    assert model[0](torch.randn(1, 3, 5, 5)).abs().max() > 1e-3
    with pytest.raises(ValueError):
        zero_mean_convs(model, ["1.weight"])
    with pytest.raises(ValueError):
        zero_mean_convs(model, ["missing"])


def test_vision_only_stage_trains_the_encoder_and_hands_its_head_on(
    tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg
):
    from safetensors.torch import load_file

    from jocr.train.heads import CTC_HEAD_FILE

    cfg = _cfg(tmp_path, byte_tokenizer_path, 6, tiny_model_cfg)
    cfg.data.answer_weight, cfg.data.vision_aux_weight, cfg.data.vision_ctc_weight = 0.0, 0.0, 1.0
    out = train_sft(cfg, log=lambda *a: None)
    trained = load_file(out / "model.safetensors")
    fresh = train_sft(_cfg(tmp_path / "fresh", byte_tokenizer_path, 0, tiny_model_cfg), log=lambda *a: None)
    fresh_w = load_file(fresh / "model.safetensors")
    decoder = [k for k in trained if k.startswith("model.layers.")]
    vision = [k for k in trained if k.startswith("model.sam_model.blocks.")]
    assert decoder and all(torch.equal(trained[k], fresh_w[k]) for k in decoder)  # the decoder never ran
    assert any(not torch.equal(trained[k], fresh_w[k]) for k in vision)
    assert all(r["vision_ctc"] > 0 and r["loss"] == 0 for r in read_log(tmp_path / "run" / "log.jsonl"))
    # the next stage starts from the model and keeps the reading head
    _assert_next_stage_keeps(
        tmp_path, byte_tokenizer_path, out, CTC_HEAD_FILE, "ctc_head", "vision_ctc_weight"
    )


def _assert_next_stage_keeps(tmp_path, tok_path, model_dir, head_file, state_key, weight_field):
    """A stage started from `model_dir` (`init`) begins with the head saved beside that model."""
    head = torch.load(model_dir / head_file, weights_only=True)
    nxt = _cfg(tmp_path / "next", tok_path, 0, None)
    nxt.init = str(model_dir)
    setattr(nxt.data, weight_field, 0.5)
    train_sft(nxt, log=lambda *a: None)
    state = torch.load(tmp_path / "next" / "run" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert all(torch.equal(state[state_key][k], head[k]) for k in head)


def test_glyph_stage_trains_the_encoder_and_hands_its_heads_on(
    tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg
):
    from jocr.train.heads import GLYPH_HEADS_FILE

    cfg = _cfg(tmp_path, byte_tokenizer_path, 6, tiny_model_cfg)
    cfg.data.answer_weight, cfg.data.vision_aux_weight, cfg.data.vision_glyph_weight = 0.0, 0.0, 1.0
    out = train_sft(cfg, log=lambda *a: None)
    records = read_log(tmp_path / "run" / "log.jsonl")
    assert all(r["glyph"] > 0 and r["loss"] == 0 for r in records)
    _assert_next_stage_keeps(
        tmp_path, byte_tokenizer_path, out, GLYPH_HEADS_FILE, "glyph_heads", "vision_glyph_weight"
    )


def test_init_vision_starts_a_new_decoder_and_vocabulary_on_a_trained_encoder(
    tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg
):
    import pytest
    from safetensors.torch import load_file

    from jocr.model.params import VISION_PREFIXES
    from jocr.tokenizer import Tokenizer
    from jocr.train.bpe import train_bpe
    from jocr.train.heads import GLYPH_HEADS_FILE

    first = _cfg(tmp_path / "a", byte_tokenizer_path, 4, tiny_model_cfg)
    first.data.vision_glyph_weight = 1.0
    encoder_dir = train_sft(first, log=lambda *a: None)
    small_tok = tmp_path / "small" / "tokenizer.json"
    small_tok.parent.mkdir()
    Tokenizer(train_bpe(["alpha beta gamma delta omega sigma"] * 50, vocab_size=300)).save(small_tok)
    second = _cfg(tmp_path / "b", small_tok, 0, tiny_model_cfg)
    second.init_vision, second.seed, second.data.vision_glyph_weight = str(encoder_dir), 7, 1.0
    out = train_sft(second, log=lambda *a: None)
    a, b = load_file(encoder_dir / "model.safetensors"), load_file(out / "model.safetensors")
    vision = [k for k in a if k.startswith(VISION_PREFIXES)]
    assert vision and all(torch.equal(a[k], b[k]) for k in vision)
    assert b["model.embed_tokens.weight"].shape[0] != a["model.embed_tokens.weight"].shape[0]
    assert not torch.equal(
        a["model.layers.0.self_attn.o_proj.weight"], b["model.layers.0.self_attn.o_proj.weight"]
    )
    heads = torch.load(encoder_dir / GLYPH_HEADS_FILE, weights_only=True)
    state = torch.load(tmp_path / "b" / "run" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert all(torch.equal(state["glyph_heads"][k], heads[k]) for k in heads)
    with pytest.raises(ValueError, match="exclusive"):
        TrainConfig.from_dict({"init": str(out), "init_vision": str(encoder_dir)})
    other = {**tiny_model_cfg, "vision": {**tiny_model_cfg["vision"], "clip_ffn": 40}}
    bad = _cfg(tmp_path / "c", small_tok, 0, other)
    bad.init_vision = str(encoder_dir)
    with pytest.raises(ValueError, match="different vision config"):
        train_sft(bad, log=lambda *a: None)


def test_a_stage_started_from_a_model_renders_with_that_models_tokenizer(tmp_path, byte_tokenizer_path):
    from jocr.train.sft import tokenizer_file

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    cfg = _cfg(tmp_path, byte_tokenizer_path, 0, None)
    cfg.init = str(model_dir)
    assert tokenizer_file(cfg) == byte_tokenizer_path  # no tokenizer in the init dir: tokenizer.path
    (model_dir / "tokenizer.json").write_text(byte_tokenizer_path.read_text())
    assert tokenizer_file(cfg) == model_dir / "tokenizer.json"
