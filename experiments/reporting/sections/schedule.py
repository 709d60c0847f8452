"""The schedule confound: the headline time-to-target arm (lr constant) against the decayed-lr
equal-steps points of its precision, at the config's baseline and target batch: IS at the
config's schedule step per batch, and the target / baseline IS ratio at every common step."""
from __future__ import annotations

from dataclasses import dataclass

from experiments.records import Point
from experiments.reporting.lib import markdown, stats
from experiments.reporting.lib.metrics import describe
from experiments.reporting.lib.seeds import EQUAL_STEPS, budget
from experiments.reporting.sections import time_to_target as ttt
from experiments.reporting.study import precision_of

KEY, ORDER = "schedule_confound", 50
AT_STEP = ("IS at step {step}, decayed lr (linearly to 0 from step {starts}) against the '{arm}' "
           "arm (lr constant), {precision}: constant / decayed [95% Welch interval].")
SERIES = ("IS ratio batch {target_batch} / batch {baseline_batch} at each evaluation step "
          "(geometric means, Welch 95% interval):")


@dataclass(frozen=True)
class AtStep:
    """IS per seed of both schedules at the schedule step, and constant / decayed."""
    decayed: list[float]
    constant: list[float]
    ratio: stats.RatioInterval


@dataclass(frozen=True)
class ScheduleConfound:
    arm: str
    precision: str
    step: int
    baseline_batch: int
    target_batch: int
    decay_starts: list[int]
    at_step: dict[str, AtStep]  # str(batch) ->
    ratio_target_to_baseline: dict[str, dict[str, stats.RatioInterval]]  # schedule -> step ->


def _is_at(points: list[Point], batch: int, step: int) -> list[float]:
    return [e.is_mean for p in points if p.record.global_batch_size == batch
            for e in p.history if e.step == step and e.is_mean and e.is_mean > 0]


def confound(arm: str, arm_points: list[Point], others: list[Point], baseline: int,
             target: int, step: int) -> ScheduleConfound | None:
    precision = precision_of(arm_points[0])
    decayed = [p for p in others if p.record.status == "done" and p.history
               and precision_of(p) == precision and p.config.train.lr_decay_start is not None
               and budget(p.record) == EQUAL_STEPS and p.config.train.steps == step]
    if not decayed:
        return None
    at_step = {}
    for b in (baseline, target):
        a, c = _is_at(decayed, b, step), _is_at(arm_points, b, step)
        if a and c:
            at_step[str(b)] = AtStep(a, c, stats.welch_ratio(a, c))
    series = {name: {str(s): stats.welch_ratio(_is_at(pts, baseline, s), _is_at(pts, target, s))
                     for s in sorted({e.step for p in pts for e in p.history})
                     if _is_at(pts, baseline, s) and _is_at(pts, target, s)}
              for name, pts in (("decayed", decayed), ("constant", arm_points))}
    return ScheduleConfound(arm, precision, step, baseline, target,
                            sorted({p.config.train.lr_decay_start for p in decayed}), at_step,
                            series)


def compute(study, earlier: dict) -> ScheduleConfound | None:
    arm, c = ttt.headline_arm(study), study.comparison
    if arm is None:
        return None
    return confound(arm, ttt.full_arms(study)[arm], study.budget_points, c.baseline_batch,
                    c.target_batch, c.schedule_step)


def _ratio(r: stats.RatioInterval | None, spec: str) -> str:
    return "-" if r is None else f"{r.ratio:{spec}}" + ttt.ci_text((r.low, r.high), spec)


def render(conf: ScheduleConfound, study) -> str:
    rows = [[b, f"{describe(d.decayed).mean:.2f} ({len(d.decayed)})",
             f"{describe(d.constant).mean:.2f} ({len(d.constant)})", _ratio(d.ratio, ".3f")]
            for b, d in conf.at_step.items()]
    series = conf.ratio_target_to_baseline
    steps = sorted({int(s) for d in series.values() for s in d})
    return "\n".join([
        f"## The schedule confound ({conf.precision})", "",
        AT_STEP.format(starts="/".join(map(str, conf.decay_starts)), **conf.__dict__), "",
        markdown.table(["batch", "decayed (seeds)", "constant (seeds)", "constant / decayed"],
                       rows), "",
        SERIES.format(**conf.__dict__), "",
        markdown.table(["step", "decayed lr", "constant lr"],
                       [[str(s)] + [_ratio(series[n].get(str(s)), ".2f")
                                    for n in ("decayed", "constant")] for s in steps]), ""])
