"""A cost model for a sweep's ETA: fitted to the points finished so far, or calibrated.

    time(point) = a * steps + b * work + c * evaluations

* `steps`: generator steps (per-step costs that do not grow with the batch: op dispatch,
  optimizer updates, host syncs, the per-point set-up spread over the steps);
* `work`: the point's training work, its total FLOPs (`steps * sngan.flops.train_step_flops`)
  when every point carries `step_flops`, otherwise the images through G and D,
  `steps * batch * (n_dis + 1)`. FLOPs are the better unit: a D update costs more than a G
  forward, and n_dis changes the mix;
* `evaluations`: scorings of the point (each generates and classifies `num_fake` images).

`fit(points)` solves for a, b, c >= 0 by non-negative least squares on the finished points,
with columns scaled to unit norm. When the finished points cannot separate the terms it uses
fewer: c comes straight from the points' measured evaluation seconds when they are recorded
(`eval_seconds`, as metrics.json's `eval_wall_time_s`), and a is taken as 0 until two finished
points differ in work per step; so after ONE point the training time is scaled by FLOPs (or
images), which is exact when the cost is FLOP-proportional. `calibrate(...)` builds the same
model from a few timed steps at two batch sizes and one timed evaluation (a dry run, and the
start of a sweep).

One point cannot tell a per-step overhead from a per-FLOP cost, and on a small-channel model
the overhead is large (small batches run well below the rate of large ones): a FLOP-only fit
on the first, smallest point over-predicts the rest of the sweep. `fit(points, prior)`
therefore keeps a calibrated model's SHAPE (a : b, and its per-point set-up) and fits only
its scale to the finished points' training time, which corrects what calibration misses
(input pipeline, checkpoints, summaries, a machine slower than during calibration).

numpy and scipy only: TensorFlow is not imported (`PointCost.for_point` counts a config's
FLOPs with `sngan.flops`, imported when called). The sweep prices its points here.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np
from scipy.optimize import nnls


@dataclasses.dataclass(frozen=True)
class PointCost:
    """What one sweep point does and, once finished, how long it took."""
    steps: int
    global_batch: int
    n_dis: int
    evaluations: int = 1
    step_flops: float | None = None  # FLOPs of one training step (sngan.flops)
    seconds: float | None = None  # measured wall time of the point; None: not finished
    eval_seconds: float | None = None  # the part of `seconds` spent evaluating, if known

    @property
    def finished(self) -> bool:
        return self.seconds is not None

    @property
    def images(self) -> int:
        """Images through G and D: each step draws B per D update and B for the G update."""
        return self.steps * self.global_batch * (self.n_dis + 1)

    def work(self, unit: str) -> float:
        if unit == "flop":
            if self.step_flops is None:
                raise ValueError("unit 'flop' needs step_flops on every point")
            return float(self.steps) * float(self.step_flops)
        return float(self.images)

    @classmethod
    def for_point(cls, cfg, seconds: float | None = None,
                  eval_seconds: float | None = None) -> PointCost:
        """The cost of a sweep point with RunConfig `cfg`: its training step's FLOPs, and its
        evaluations: the curve's, the final one and the final checkpoint's replicates
        (experiments.running.point). `seconds`: its measured time, once finished."""
        from sngan import flops
        t, ev = cfg.train, cfg.eval
        return cls(steps=t.steps, global_batch=t.global_batch_size, n_dis=t.n_dis,
                   evaluations=evaluations_for(t.steps, ev.every) + ev.replicates - 1,
                   step_flops=flops.train_config_step_flops(cfg.model, t), seconds=seconds,
                   eval_seconds=eval_seconds)


def evaluations_for(steps: int, every: int) -> int:
    """Scorings of the training curve `experiments.running.point.run_point` makes: every
    `every` steps before the end, plus the final one."""
    return (steps - 1) // every + 1 if every else 1


@dataclasses.dataclass(frozen=True)
class CostModel:
    per_step: float  # a: seconds per generator step
    per_work: float  # b: seconds per unit of work (FLOP or image, see `unit`)
    per_eval: float  # c: seconds per evaluation
    unit: str = "flop"  # "flop" or "image"
    per_point: float = 0.0  # fixed cost of a point (set-up, tracing); calibration only
    fitted_on: int = 0  # finished points behind the fit (0: calibrated)

    def predict(self, point: PointCost) -> float:
        return (self.per_point + self.per_step * point.steps
                + self.per_work * point.work(self.unit) + self.per_eval * point.evaluations)


def _unit(points: Iterable[PointCost]) -> str:
    return "flop" if all(p.step_flops is not None for p in points) else "image"


def _solve(columns: list[np.ndarray], target: np.ndarray) -> list[float]:
    """NNLS on unit-norm-scaled columns; returns coefficients in the original units."""
    a = np.stack(columns, axis=1)
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    x, _ = nnls(a / scale, np.asarray(target, float))
    return list(x / scale)


def _independent(columns: list[np.ndarray]) -> bool:
    a = np.stack(columns, axis=1)
    a = a / np.maximum(np.linalg.norm(a, axis=0), 1e-300)
    return np.linalg.matrix_rank(a, tol=1e-9) == a.shape[1]


def _measured_eval_seconds(done: list[PointCost]) -> float | None:
    """Seconds per evaluation by the finished points' own clock; None if not recorded."""
    timed = [p for p in done if p.eval_seconds is not None]
    if timed and sum(p.evaluations for p in timed) > 0:
        return sum(p.eval_seconds for p in timed) / sum(p.evaluations for p in timed)
    return None


def _training_seconds(p: PointCost, per_eval: float) -> float:
    """A finished point's time without its evaluations (their own clock, else `per_eval`)."""
    return p.seconds - (p.eval_seconds if p.eval_seconds is not None
                        else per_eval * p.evaluations)


def _scaled(prior: CostModel, done: list[PointCost]) -> CostModel:
    """`prior`'s shape with its training part scaled to the finished points' training time."""
    per_eval = _measured_eval_seconds(done)
    per_eval = prior.per_eval if per_eval is None else per_eval
    train = sum(max(0.0, _training_seconds(p, per_eval) - prior.per_point) for p in done)
    shape = sum(prior.per_step * p.steps + prior.per_work * p.work(prior.unit) for p in done)
    scale = train / shape if shape > 0 else 1.0
    return CostModel(prior.per_step * scale, prior.per_work * scale, per_eval, prior.unit,
                     per_point=prior.per_point, fitted_on=len(done))


def fit(points: Iterable[PointCost], prior: CostModel | None = None) -> CostModel | None:
    """The cost model of the finished points; None before any point has finished.

    With a `prior` (a calibrated model, `calibrate`), it is returned as is before any point
    has finished, and afterwards only its scale is fitted (see the module docstring).
    """
    points = list(points)
    done = [p for p in points if p.finished and p.seconds > 0]
    if prior is not None:
        return _scaled(prior, done) if done else prior
    if not done:
        return None
    unit = _unit(points)
    steps = np.array([p.steps for p in done], float)
    work = np.array([p.work(unit) for p in done])
    evals = np.array([p.evaluations for p in done], float)
    seconds = np.array([p.seconds for p in done], float)

    per_eval = _measured_eval_seconds(done)
    if per_eval is not None:
        # c from the evaluations' own clock; fit the training time alone.
        target = np.maximum(0.0, np.array([_training_seconds(p, per_eval) for p in done]))
        if _independent([steps, work]):
            a, b = _solve([steps, work], target)
        else:
            a, b = 0.0, _solve([work], target)[0]
        return CostModel(a, b, per_eval, unit, fitted_on=len(done))

    # Evaluation time unknown: fit it jointly when the points can tell it apart.
    for names in (("steps", "work", "evals"), ("work", "evals"), ("work",)):
        cols = [dict(steps=steps, work=work, evals=evals)[n] for n in names]
        if len(done) >= len(cols) and _independent(cols):
            coef = dict(zip(names, _solve(cols, seconds)))
            return CostModel(coef.get("steps", 0.0), coef.get("work", 0.0),
                             coef.get("evals", 0.0), unit, fitted_on=len(done))
    return CostModel(0.0, float(seconds.sum() / work.sum()), 0.0, unit, fitted_on=len(done))


def predict_remaining(points: Iterable[PointCost], model: CostModel | None = None,
                      prior: CostModel | None = None) -> float | None:
    """Seconds the unfinished points will take (by `model`, else fitted on the finished ones,
    with `prior` if given); None when there is nothing to go on yet."""
    points = list(points)
    model = model or fit(points, prior)
    if model is None:
        return None
    return float(sum(model.predict(p) for p in points if not p.finished))


def calibrate(step_seconds: Mapping[int, float], step_work: Mapping[int, float],
              eval_seconds: float = 0.0, setup_seconds: float = 0.0,
              unit: str = "flop") -> CostModel:
    """A cost model from a dry run's measurements, before any point has run.

    step_seconds: {global batch: seconds per training step} at (ideally) two batch sizes far
    apart, timed after warm-up; step_work: {global batch: work of one step} (FLOPs from
    sngan.flops.train_step_flops, or images); eval_seconds: one timed evaluation;
    setup_seconds: a point's fixed cost (building and tracing the step), if measured.
    With two batch sizes, seconds/step = a + b * work/step is solved exactly (a, b clipped
    at 0); with one, a = 0.
    """
    batches = sorted(step_seconds)
    if not batches:
        raise ValueError("calibrate needs at least one timed batch size")
    missing = [b for b in batches if b not in step_work]
    if missing:
        raise ValueError(f"no work given for batch sizes {missing}")
    w = np.array([float(step_work[b]) for b in batches])
    t = np.array([float(step_seconds[b]) for b in batches])
    if len(batches) >= 2 and _independent([np.ones_like(w), w]):
        a, b = _solve([np.ones_like(w), w], t)
    else:
        a, b = 0.0, float(t.sum() / w.sum())
    return CostModel(a, b, float(eval_seconds), unit, per_point=float(setup_seconds))
