import pytest

from jocr.train.config import OptimConfig, TrainConfig


def test_yaml_load_with_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "kind: sft\nrun_dir: runs/x\nbatch_size: 4\n"
        "data:\n  stages:\n    - {samples: 10, profiles: {cpu-lines: 1.0}}\n"
        "    - {samples: 5, degrade: 0.5}\n"
    )
    cfg = TrainConfig.load(path, {"optim.lr": 5e-4, "max_steps": 7})
    assert cfg.batch_size == 4 and cfg.max_steps == 7 and cfg.optim.lr == 5e-4
    assert cfg.data.stages[1].degrade == 0.5


def test_unknown_keys_and_kinds_are_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown key"):
        TrainConfig.from_dict({"optim": {"learning_rate": 1e-3}})
    with pytest.raises(ValueError, match="kind"):
        TrainConfig.from_dict({"kind": "pretrain"})


def test_lr_schedule_warmup_then_cosine_to_floor():
    o = OptimConfig(lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert o.lr_at(0, 100) == pytest.approx(0.1)
    assert o.lr_at(9, 100) == pytest.approx(1.0)
    assert o.lr_at(10, 100) == pytest.approx(1.0)
    assert o.lr_at(55, 100) == pytest.approx(0.55)
    assert o.lr_at(100, 100) == pytest.approx(0.1)
    assert OptimConfig(lr=1.0, warmup_steps=0, schedule="constant").lr_at(50, 100) == 1.0


def test_shipped_configs_load_and_name_their_stage(monkeypatch):
    """Every stage config in configs/ parses (unknown keys are errors) and finds its model file, so a
    documented command never fails on its config."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)  # configs name their model file relative to the repository root
    stages = [p for p in sorted((root / "configs").glob("*.yaml")) if not p.name.startswith("model-")]
    assert len(stages) >= 7
    for path in stages:
        if "kind: formula" in path.read_text():  # the formula reader's own config (jocr.train.formula_stage)
            from jocr.train.formula_stage import FormulaTrainConfig

            assert FormulaTrainConfig.load(path).run_dir, path.name
            continue
        cfg = TrainConfig.load(path)
        assert cfg.kind in ("sft", "robust", "grpo", "merge", "mtp") and cfg.run_dir, path.name
        if cfg.model_file:
            assert {"vision", "decoder"} <= set(cfg.model_dict()), path.name
