"""`python -m experiments noise-scale`: which batch size is worth buying, from one short run.

Trains the first N generator steps of an experiment at one batch size (its learning-rate
schedule unchanged: N may stop before the schedule's end), measures the gradient noise scale
B_simple of D and G every MEASURE_EVERY steps (sngan/noise_scale.py) and reports
its last-window estimate with a bootstrap interval, and the critical batch it predicts:
McCandlish et al. 2018 (arXiv 1812.06162) find the critical batch close to B_noise, which
B_simple estimates. No sweep, no evaluation. The paper's derivation assumes one loss; a GAN
has two players, so the prediction is a hypothesis for the sweep to test.
"""
from __future__ import annotations

import contextlib
import tempfile

from common import files
from experiments import records
from experiments.config import ConfigError, RunConfig
from experiments.configs import preset
from experiments.running import lock, run_dir
from sngan import noise_scale

PLAYER_NAMES = {"d": "D", "g": "G"}
# Measuring is this command's purpose, so it measures more often than training does by default
# (train.noise_scale_every, chosen for a small overhead); --set train.noise_scale_every wins.
MEASURE_EVERY = 5


def run_config(name: str, overrides: dict, steps: int | None) -> RunConfig:
    """The experiment's config with `overrides`; `train.steps` among them is ignored: the run
    stops after `steps` (None: the schedule's length) and keeps the schedule, which is
    stretched only if it is shorter."""
    overrides = {"train.noise_scale_every": MEASURE_EVERY,
                 **{k: v for k, v in overrides.items() if k != "train.steps"}}
    cfg = preset(name, overrides)
    steps = steps or cfg.train.steps
    if steps > cfg.train.steps:
        cfg = cfg.with_overrides({"train.steps": steps})
    if not cfg.train.noise_scale_every:
        raise ConfigError("noise-scale needs train.noise_scale_every > 0 (measure every N "
                          "steps), e.g. --set train.noise_scale_every=10")
    if steps < 2 * cfg.train.noise_scale_every:
        raise ConfigError(f"--steps {steps} gives fewer than 2 measurements at "
                          f"train.noise_scale_every={cfg.train.noise_scale_every}: use more "
                          "steps or measure more often")
    return cfg


@contextlib.contextmanager
def work_dir(out: str | None):
    """`out` (kept, resumable), or a temporary directory removed afterwards."""
    if out is not None:
        yield out
        return
    with tempfile.TemporaryDirectory(prefix="noise-scale-") as tmp:
        yield tmp


def run(cfg: RunConfig, steps: int, out: str | None, command: str) -> dict:
    """`measure` in `out` (None: a temporary directory), locked for this process, which
    starts TensorFlow only then (lock.own_output; on a cluster each worker has its own)."""
    with work_dir(out) as out:
        replicator, out = lock.own_output(out, command, cfg.train.replicator)
        return measure(cfg, steps, out, replicator)


def measure(cfg: RunConfig, steps: int, out: str, replicator) -> dict:
    """Train `steps` steps in `out` (resuming what it holds) and summarise the noise scale."""
    from experiments.running import point  # TensorFlow-heavy: after the config's checks
    from sngan.training import GANTrainer
    run_dir.claim(out, cfg)
    trainer = GANTrainer(cfg.model, cfg.train, replicator, point.training_input_fn(cfg), out)
    trainer.noise_scale.replay(records.read_noise_series(out) or {}, trainer.restored_step)
    result = trainer.fit(until=steps)
    record = point.noise_scale_record(trainer, out)
    return dict(preset=cfg.preset, global_batch_size=cfg.train.global_batch_size,
                replicator=cfg.train.replicator, replicas=replicator.num_replicas,
                n_dis=cfg.train.n_dis, schedule_steps=cfg.train.steps,
                lr_decay_start=cfg.train.lr_decay_start, seed=cfg.train.seed,
                bn_cross_replica=cfg.model.bn_cross_replica, precision=cfg.train.precision,
                steps=result.steps, diverged_at=result.diverged_at,
                train_wall_time_s=round(result.wall_time_s, 3),
                noise_scale=record.to_dict() if record else None,
                series=trainer.noise_scale.to_dict()["series"])


def _estimate_line(player: str, e: dict) -> str:
    name = PLAYER_NAMES[player]
    if e["b_simple"] is None:
        return (f"B_simple({name}): undefined: the mean |G|^2 of the last {e['measurements']} "
                "measurements is not positive (noise swamps the gradient); train longer")
    high = f"{e['ci_high']:.0f}" if e["ci_high"] is not None else "unbounded"
    low = f"{e['ci_low']:.0f}" if e["ci_low"] is not None else "?"
    spread = f", smoothed {e['ema_mean']:.0f} ± {e['ema_std']:.0f}" if e["ema_std"] else ""
    crit = noise_scale.predicted_critical_batch(e["b_simple"])
    return (f"B_simple({name}) = {e['b_simple']:.0f}  [95% CI {low}, {high}]{spread}; "
            f"predicted critical batch ~ {crit}")


TRADE_OFF_BATCHES = tuple(2 ** k for k in range(3, 13))  # 8 .. 4096


def trade_off(b_noise: float, batches=TRADE_OFF_BATCHES) -> list[tuple[int, float, float]]:
    """(batch, S / S_min, E / E_min) if B_crit were `b_noise`: McCandlish's
    S = S_min (1 + B_noise / B) and E = E_min (1 + B / B_noise)."""
    return [(b, 1 + b_noise / b, 1 + b / b_noise) for b in batches]


def trade_off_lines(ns: dict) -> list[str]:
    """The trade-off each player's B_simple implies, one row per power-of-two batch."""
    players = [p for p in noise_scale.PLAYERS if (ns[p]["b_simple"] or 0) > 0]
    if not players:
        return []
    head = " | ".join(f"{PLAYER_NAMES[p]}: steps/S_min  images/E_min" for p in players)
    lines = ["trade-off implied if the critical batch were B_simple (steps relative to S_min, "
             "images relative to E_min):", f"  batch | {head}"]
    rows = {p: trade_off(ns[p]["b_simple"]) for p in players}
    for i, b in enumerate(TRADE_OFF_BATCHES):
        cells = " | ".join(f"{rows[p][i][1]:13.2f}  {rows[p][i][2]:12.2f}" for p in players)
        lines.append(f"  {b:5d} | {cells}")
    return lines


def describe(result: dict) -> str:
    """The estimate in a few lines, for the terminal."""
    head = (f"noise scale: preset {result['preset']}, batch {result['global_batch_size']}, "
            f"{result['steps']} steps ({result['replicas']} replica(s))")
    if result["diverged_at"] is not None:
        head += f", DIVERGED at step {result['diverged_at']}"
    ns = result["noise_scale"]
    if ns is None:
        return head + "\nno measurement was taken"
    lines = [head, f"window: the last {ns['d']['measurements']} measurements (from step "
             f"{ns['d']['window_start']}), every {ns['every']} steps; small batches: "
             f"{ns['source']}"]
    lines += [_estimate_line(p, ns[p]) for p in noise_scale.PLAYERS]
    lines += trade_off_lines(ns)
    lines.append("(McCandlish et al. 2018, arXiv 1812.06162: the critical batch is near "
                 "B_noise; their derivation assumes one loss, a GAN has two players)")
    return "\n".join(lines)


def save(path: str, result: dict, command: str) -> None:
    """The result with the command that produced it, atomically."""
    files.atomic_write_json(path, dict(result, command=command))
