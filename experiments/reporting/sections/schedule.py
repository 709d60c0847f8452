"""The schedule confound: the headline time-to-target arm (lr constant) against the decayed-lr
equal-steps points of its precision, at the config's baseline and target batch: IS at the
config's schedule step per batch, and the target / baseline IS ratio at every common step."""
from __future__ import annotations

from experiments.records import Point
from experiments.reporting.lib import markdown, stats
from experiments.reporting.lib.metrics import describe
from experiments.reporting.lib.seeds import EQUAL_STEPS, budget
from experiments.reporting.sections import time_to_target
from experiments.reporting.study import precision_of

KEY, ORDER = "schedule_confound", 50
AT_STEP = ("IS at step {step}, decayed lr (linearly to 0 from step {starts}) against the '{arm}' "
           "arm (lr constant), {precision}: constant / decayed [95% Welch interval].")
SERIES = ("IS ratio batch {target} / batch {baseline} at each evaluation step (geometric means, "
          "Welch 95% interval):")


def _is_at(points: list[Point], batch: int, step: int) -> list[float]:
    return [e.is_mean for p in points if p.record.global_batch_size == batch
            for e in p.history if e.step == step and e.is_mean and e.is_mean > 0]


def confound(arm_points: list[Point], others: list[Point], baseline: int, target: int,
             step: int) -> dict | None:
    precision = precision_of(arm_points[0])
    decayed = [p for p in others if p.record.status == "done" and p.history
               and precision_of(p) == precision and p.config.train.lr_decay_start is not None
               and budget(p.record) == EQUAL_STEPS and p.config.train.steps == step]
    if not decayed:
        return None
    out = {"precision": precision, "step": step, "baseline_batch": baseline,
           "target_batch": target, "at_step": {}, "ratio_target_to_baseline": {},
           "decay_starts": sorted({p.config.train.lr_decay_start for p in decayed})}
    for b in (baseline, target):
        a, c = _is_at(decayed, b, step), _is_at(arm_points, b, step)
        if a and c:
            out["at_step"][str(b)] = dict(decayed=a, constant=c,
                                          ratio=stats.welch_ratio(a, c).to_dict())
    for name, pts in (("decayed", decayed), ("constant", arm_points)):
        series = {}
        for s in sorted({e.step for p in pts for e in p.history}):
            lo, hi = _is_at(pts, baseline, s), _is_at(pts, target, s)
            if lo and hi:
                series[str(s)] = stats.welch_ratio(lo, hi).to_dict()
        out["ratio_target_to_baseline"][name] = series
    return out


def compute(study, earlier: dict) -> dict | None:
    arm = time_to_target.headline_arm(study)
    if arm is None:
        return None
    c = study.comparison
    pts = time_to_target.full_arms(study)[arm]
    result = confound(pts, study.budget_points, c.baseline_batch, c.target_batch,
                      c.schedule_step)
    return None if result is None else dict(result, arm=arm)


def _ratio(r: dict | None, spec: str) -> str:
    if r is None:
        return "-"
    return f"{r['ratio']:{spec}}" + time_to_target.ci_text((r["low"], r["high"]), spec)


def render(conf: dict, study) -> str:
    rows = [[b, f"{describe(d['decayed']).mean:.2f} ({len(d['decayed'])})",
             f"{describe(d['constant']).mean:.2f} ({len(d['constant'])})",
             _ratio(d["ratio"], ".3f")] for b, d in conf["at_step"].items()]
    series = conf["ratio_target_to_baseline"]
    steps = sorted({int(s) for d in series.values() for s in d})
    lines = [f"## The schedule confound ({conf['precision']})", "",
             AT_STEP.format(starts="/".join(map(str, conf["decay_starts"])), **conf), "",
             markdown.table(["batch", "decayed (seeds)", "constant (seeds)", "constant / decayed"],
                            rows), "",
             SERIES.format(target=conf["target_batch"], baseline=conf["baseline_batch"]), "",
             markdown.table(["step", "decayed lr", "constant lr"],
                            [[str(s)] + [_ratio(series[n].get(str(s)), ".2f")
                                         for n in ("decayed", "constant")] for s in steps]), ""]
    return "\n".join(lines)
