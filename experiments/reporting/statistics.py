"""What is signal and what is noise in the sweep table (scipy.stats does the statistics).

- `ratio_interval`: metric at batch B over metric at batch 64 with a 95% bootstrap interval,
  resampling seeds jointly where both batches ran the same seeds (paired), independently
  otherwise; with one seed on each side the replicates are evaluation seeds of the same
  checkpoints, which measures evaluation noise only, and the result says so. A percentile
  bootstrap over 2-5 seeds under-covers badly (with 2 paired seeds it has 3 distinct
  resamples), so the interval reported is the wider of the bootstrap's and a t-interval on
  the log ratio (paired, or Welch), which is honest about how little a few seeds show.
- `trend_test`: Spearman's rank correlation and the least-squares slope per doubling of the
  batch, over all seeds pooled.
- `noise_floor`: the spread of one checkpoint's score over evaluation seeds.
- `verdict`: reproduced / opposite / inconclusive, by a rule printed beside it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 0  # the report must be reproducible
PAIRED, UNPAIRED, EVAL_RESAMPLING = ("over seeds, paired (bootstrap and t on log ratio)",
                                     "over seeds, unpaired (bootstrap and Welch t on logs)",
                                     "evaluation resampling (one training seed)")


@dataclass(frozen=True)
class RatioInterval:
    ratio: float  # mean(b) / mean(a)
    low: float
    high: float
    n_a: int
    n_b: int
    method: str

    def to_dict(self) -> dict:
        return asdict(self)


def _ratio_of_means(a, b, axis=-1):
    return np.mean(b, axis=axis) / np.mean(a, axis=axis)


def ratio_interval(a, b, paired: bool | None = None,
                   one_seed_replicates: bool = False) -> RatioInterval:
    """mean(b) / mean(a) with a 95% percentile-bootstrap interval.

    `a`, `b`: one value per training seed (paired: the same seeds in the same order), or,
    with `one_seed_replicates`, evaluation replicates of a single training seed each.
    `paired=None` pairs when the lengths match.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) == 0 or len(b) == 0 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("ratio_interval needs finite values on both sides")
    ratio = float(_ratio_of_means(a, b))
    if len(a) < 2 or len(b) < 2:  # nothing to resample: no interval
        return RatioInterval(ratio, math.nan, math.nan, len(a), len(b),
                             "single value: no interval")
    paired = (len(a) == len(b)) if paired is None else paired
    if paired and len(a) != len(b):
        raise ValueError(f"paired data need equal lengths, got {len(a)} and {len(b)}")
    method = EVAL_RESAMPLING if one_seed_replicates else (PAIRED if paired else UNPAIRED)
    if np.ptp(a) == 0 and np.ptp(b) == 0:  # degenerate: every resample is the same
        return RatioInterval(ratio, ratio, ratio, len(a), len(b), method)
    paired = paired and not one_seed_replicates
    res = stats.bootstrap((a, b), _ratio_of_means, paired=paired, vectorized=True,
                          confidence_level=CONFIDENCE, n_resamples=RESAMPLES,
                          method="percentile", rng=np.random.default_rng(SEED))
    ci = res.confidence_interval
    t_low, t_high = log_ratio_t_interval(a, b, paired)
    return RatioInterval(ratio, float(min(ci.low, t_low)), float(max(ci.high, t_high)),
                         len(a), len(b), method)


def log_ratio_t_interval(a, b, paired: bool) -> tuple[float, float]:
    """95% interval of the ratio from a t-interval on log values: paired differences, or
    Welch's unequal-variance difference of means. NaN-free only for positive values."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.any(a <= 0) or np.any(b <= 0):
        return math.inf, -math.inf  # no log interval: leave the bootstrap's
    la, lb = np.log(a), np.log(b)
    if paired:
        d = lb - la
        centre, se, df = d.mean(), d.std(ddof=1) / math.sqrt(len(d)), len(d) - 1
    else:
        va, vb = la.var(ddof=1) / len(la), lb.var(ddof=1) / len(lb)
        centre, se = lb.mean() - la.mean(), math.sqrt(va + vb)
        df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1)) \
            if va + vb > 0 else 1.0
    q = stats.t.ppf(0.5 + CONFIDENCE / 2, df)
    return float(math.exp(centre - q * se)), float(math.exp(centre + q * se))


@dataclass(frozen=True)
class Trend:
    n: int
    spearman_rho: float
    spearman_p: float
    slope_per_doubling: float  # least-squares slope of the metric against log2(batch)
    slope_low: float
    slope_high: float

    def to_dict(self) -> dict:
        return asdict(self)


def trend_test(batch_sizes, values) -> Trend:
    """Rank correlation and regression slope of `values` against log2(batch), all seeds pooled
    (one entry per (batch, seed))."""
    x = np.log2(np.asarray(batch_sizes, float))
    y = np.asarray(values, float)
    if len(x) != len(y):
        raise ValueError(f"{len(x)} batch sizes but {len(y)} values")
    if len(x) < 3 or len(np.unique(x)) < 2:
        raise ValueError("a trend needs at least 3 points over at least 2 batch sizes")
    rho = stats.spearmanr(x, y).statistic
    # scipy's t-approximation of Spearman's p is far off for a handful of points (rho = 1
    # with n = 5 gives 1e-24); a permutation test is exact when it can enumerate them all
    p = stats.permutation_test(
        (y,), lambda v: stats.spearmanr(x, v).statistic, permutation_type="pairings",
        n_resamples=RESAMPLES, rng=np.random.default_rng(SEED)).pvalue
    fit = stats.linregress(x, y)
    t = stats.t.ppf(0.5 + CONFIDENCE / 2, len(x) - 2)
    return Trend(len(x), float(rho), float(p), float(fit.slope),
                 float(fit.slope - t * fit.stderr), float(fit.slope + t * fit.stderr))


@dataclass(frozen=True)
class NoiseFloor:
    n: int
    mean: float
    std: float
    cv: float  # std / |mean|

    def to_dict(self) -> dict:
        return asdict(self)


def noise_floor(values) -> NoiseFloor:
    """Spread of one checkpoint's score over evaluation seeds."""
    v = np.asarray(values, float)
    if len(v) < 2:
        raise ValueError("a noise floor needs at least 2 evaluations of the same checkpoint")
    std = float(np.std(v, ddof=1))
    return NoiseFloor(len(v), float(v.mean()), std, std / abs(float(v.mean())))


REPRODUCED, OPPOSITE, INCONCLUSIVE = "reproduced", "opposite", "inconclusive at this budget"
RULE = ("reproduced if the 95% interval of the ratio to batch 64 lies entirely on the "
        "improving side of 1, opposite if entirely on the worsening side, inconclusive "
        "otherwise")


@dataclass(frozen=True)
class Verdict:
    metric: str
    outcome: str
    text: str


def verdict(metric: str, interval: RatioInterval, higher_is_better: bool,
            paper_change: float | None = None) -> Verdict:
    """One line: the outcome, our ratio with its interval, the paper's change, the rule."""
    low, high = interval.low, interval.high
    if math.isnan(low) or math.isnan(high):
        outcome = INCONCLUSIVE
    elif (low > 1.0) if higher_is_better else (high < 1.0):
        outcome = REPRODUCED
    elif (high < 1.0) if higher_is_better else (low > 1.0):
        outcome = OPPOSITE
    else:
        outcome = INCONCLUSIVE
    ours = (f"{100 * (interval.ratio - 1):+.1f}% [95% CI {100 * (low - 1):+.1f}%, "
            f"{100 * (high - 1):+.1f}%]" if not math.isnan(low)
            else f"{100 * (interval.ratio - 1):+.1f}% (no interval)")
    if interval.method == EVAL_RESAMPLING:
        ours += " (evaluation noise only: training-seed noise is not measured with one seed)"
    paper = f"; paper: {paper_change:+.0f}%" if paper_change is not None else ""
    text = (f"{metric} (batch 64 -> 512): {outcome}. Ours {ours}, {interval.method}{paper}. "
            f"Rule: {RULE}.")
    return Verdict(metric, outcome, text)
