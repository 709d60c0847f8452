"""The committed reference run, results/fashion_mnist: the fashion_mnist study at a budget a
2-core CPU can repeat over seeds. 1,000 generator steps per point with the learning rate
decayed linearly to 0 over the second half (most curves are still rising at the end: the
comparison belongs to this budget), 5 evaluations per curve, the final checkpoint scored with
3 evaluation seeds.

Its points record preset 'fashion_mnist' (the experiment; this file sets its budget), as the
committed ones do, so that later sweeps extend them instead of being refused as another study.
Re-running skips finished points and resumes the others from their last checkpoint.
"""
from experiments.config import RunConfig, SweepAxes
from experiments.configs import fashion_mnist
from experiments.configs.fashion_mnist import LR_SEARCH_FACTORS, lr_search_arm

# the report's comparison is the experiment's (the committed points record preset fashion_mnist)
COMPARISON = fashion_mnist.COMPARISON


def get_config() -> RunConfig:
    return fashion_mnist.get_config().with_overrides(
        {"train.steps": 1_000, "train.lr_decay_start": 500, "eval.every": 200,
         # v2 trained without measuring the gradient noise scale; v3's points keep its settings
         "train.noise_scale_every": 0})


# study v4's runs: steps per batch size, and the settings they share
TIME_TO_TARGET_STEPS = ((16, 8_000), (32, 4_000), (64, 3_000), (128, 2_400), (256, 2_000),
                        (512, 2_000))
CONSTANT_LR_BF16 = (("train.lr_decay_start", None), ("train.precision", "bfloat16"),
                    ("train.noise_scale_every", 25))

# study v5, the lr searched per batch size: v4's constant_lr settings with both players' lr
# multiplied by one factor (their ratio and Adam's betas kept), each run ended once it has
# passed IS 7.5 (above v4's highest target, 7.0). Factor 1 is v4's constant_lr arm; batch 512
# at sqrt 8 is lr_probe. Arms lr_xF, F written with 'p' for the point (0.5 -> lr_x0p5).
LR_SEARCH_STOP = "is_mean>=7.5"
TIME_TO_TARGET_BATCHES = tuple(b for b, _ in TIME_TO_TARGET_STEPS)


def _lr_search(factor: float, seeds=(0, 1)) -> SweepAxes:
    base = fashion_mnist.get_config().train
    return SweepAxes(batch_sizes=TIME_TO_TARGET_BATCHES, seeds=seeds, arm=lr_search_arm(factor),
                     eval_every=100, steps_by_batch=TIME_TO_TARGET_STEPS,
                     settings=CONSTANT_LR_BF16 + (("train.g_lr", base.g_lr * factor),
                                                  ("train.d_lr", base.d_lr * factor),
                                                  ("train.stop_at", LR_SEARCH_STOP)))


SWEEPS = {
    # v2: every batch size from 8 to 512, 3 seeds
    "v2": SweepAxes(batch_sizes=(8, 16, 32, 64, 128, 256, 512), seeds=(0, 1, 2)),
    # study v3: 6 seeds per arm of the paper's comparison, 64 vs 512 at equal steps
    "more_seeds": SweepAxes(batch_sizes=(64, 512), seeds=(3, 4, 5)),
    # study v3's control: batch 64 sees the images batch 512 sees in 1,000 steps (8,000
    # steps of 64 = 1,000 of 512), the lr decayed over the second half, evaluated every 1,000
    "equal_images": SweepAxes(batch_sizes=(64,), seeds=(0, 1, 2), budget="equal_images",
                              arm="equal_images", steps=8_000, lr_decay_start=4_000,
                              eval_every=1_000),
    # the precision check: v2's settings in bfloat16 (sngan/precision.py), batch 64 and 512,
    # seeds 0-2, compared with v2's float32 points of the same seeds (docs/study.md)
    "bfloat16": SweepAxes(batch_sizes=(64, 512), seeds=(0, 1, 2), arm="bfloat16",
                          settings=(("train.precision", "bfloat16"),)),
    # study v4, time to target: constant lr, each batch size trained until its IS curve has
    # crossed 3 to 6 and more (steps from the committed curves: batch 64 at constant lr passes
    # IS 6 near step 1,900 and 7 near 2,500; batch 16 passes 6 at 2,900 and 7 at 4,100, so
    # batch 512 should pass 7 near 2,000), evaluated every 100 steps, the noise scale measured
    # in the same runs;
    # in bfloat16, which the precision check passed (its schedule comparison uses the
    # 'bfloat16' arm's points)
    "constant_lr": SweepAxes(batch_sizes=(16, 32, 64, 128, 256, 512), seeds=(0, 1, 2),
                             arm="constant_lr", eval_every=100,
                             steps_by_batch=TIME_TO_TARGET_STEPS, settings=CONSTANT_LR_BF16),
    # study v4's learning-rate probe: is batch 512 under-stepped at lr x1? The same runs at
    # lr x sqrt(8) for both players
    # (study v5 adds its seed 2: --seeds 2)
    "lr_probe": SweepAxes(batch_sizes=(512,), seeds=(0, 1), lr_scaling="sqrt", arm="lr_probe",
                          eval_every=100, steps_by_batch=TIME_TO_TARGET_STEPS,
                          settings=CONSTANT_LR_BF16),
    # study v5: one sweep per lr factor, every batch size, seeds 0-1 (the search); the third
    # seed at each batch size's chosen factor is `--sweep lr_xF --batch-sizes B --seeds 2`.
    # Run one cell at a time (--batch-sizes B --seeds S), batch 512 last; extend the factors
    # until each batch size's best has a worse (or diverged) neighbour on both sides.
    **{lr_search_arm(f): _lr_search(f) for f in LR_SEARCH_FACTORS},
}
