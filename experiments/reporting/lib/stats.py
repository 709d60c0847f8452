"""What is signal and what is noise in the sweep (scipy.stats does the statistics).

- `welch_ratio`, the primary interval: seeds are independent runs, so the ratio of geometric
  means (batch B over the baseline) gets a Welch t-interval on log values (Welch 1947). Pairing
  seed k at two batch sizes is a modelling choice, so `paired_ratio` is a sensitivity analysis.
- `exact_test`: exact Mann-Whitney wherever its smallest attainable p is below 0.05 (3 vs 3
  seeds cannot go below 0.10; 3 vs 6 reach 0.024). `holm`: Holm's (1979) step-down adjustment.
- `verdict`: a Direction and a Size (against the paper's change) judged separately, with the
  Rule that decided; no verdict with one training seed per arm.
- `trend_test`: Spearman over all points (Monte Carlo p, a bound at its floor), the exact test on
  the batch means, and least-squares lines with a lack-of-fit F-test.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, replace
from enum import Enum

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
RESAMPLES = 10_000  # Monte Carlo permutations of the pooled Spearman test
SEED = 0  # the report must be reproducible
WELCH = "Welch t on log values, seeds as independent runs"
PAIRED = "paired t on log ratios, seed k with seed k (sensitivity analysis)"
EVAL_RESAMPLING = "Welch t on log values over evaluation seeds (one training seed)"
SINGLE = "single value: no interval"


@dataclass(frozen=True)
class RatioInterval:
    ratio: float  # geometric mean of b over geometric mean of a
    low: float
    high: float
    n_a: int
    n_b: int
    method: str
    df: float | None = None  # t degrees of freedom
    p_value: float | None = None  # two-sided t-test of "ratio = 1" (dual to the interval)

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    def to_dict(self) -> dict:
        return asdict(self)


def _logs(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) == 0 or len(b) == 0 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("a ratio needs finite values on both sides")
    if np.any(a <= 0) or np.any(b <= 0):
        raise ValueError("a ratio on the log scale needs positive values")
    return np.log(a), np.log(b)


def _exact(centre: float, n_a: int, n_b: int, method: str) -> RatioInterval:
    """No spread at all: the ratio is known exactly (no t-test to run)."""
    return RatioInterval(math.exp(centre), math.exp(centre), math.exp(centre), n_a, n_b, method)


def _from_t(result, centre: float, n_a: int, n_b: int, method: str) -> RatioInterval:
    ci = result.confidence_interval(CONFIDENCE)
    return RatioInterval(math.exp(centre), math.exp(ci.low), math.exp(ci.high), n_a, n_b,
                         method, float(result.df), float(result.pvalue))


def welch_ratio(a, b, method: str = WELCH) -> RatioInterval:
    """Geometric-mean ratio b / a with a Welch t-interval on log values (unequal variances)."""
    la, lb = _logs(a, b)
    centre = float(lb.mean() - la.mean())
    if len(la) < 2 or len(lb) < 2:
        return RatioInterval(math.exp(centre), math.nan, math.nan, len(la), len(lb), SINGLE)
    if np.ptp(la) == 0 and np.ptp(lb) == 0:
        return _exact(centre, len(la), len(lb), method)
    with warnings.catch_warnings():  # one constant arm is fine (variance 0), not imprecise
        warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
        result = stats.ttest_ind(lb, la, equal_var=False)
    return _from_t(result, centre, len(la), len(lb), method)


def paired_ratio(a, b) -> RatioInterval:
    """The same ratio with a paired t-interval on the per-seed log ratios (a[i] with b[i])."""
    la, lb = _logs(a, b)
    if len(la) != len(lb):
        raise ValueError(f"paired data need equal lengths, got {len(la)} and {len(lb)}")
    centre = float((lb - la).mean())
    if len(la) < 2:
        return RatioInterval(math.exp(centre), math.nan, math.nan, 1, 1, SINGLE)
    if np.ptp(lb - la) == 0:
        return _exact(centre, len(la), len(lb), PAIRED)
    return _from_t(stats.ttest_rel(lb, la), centre, len(la), len(lb), PAIRED)


@dataclass(frozen=True)
class ExactTest:
    n_a: int
    n_b: int
    u: float | None  # Mann-Whitney U of b against a
    p_value: float | None
    smallest_p: float  # the lowest two-sided p these arm sizes can reach
    method: str = "exact Mann-Whitney U, two-sided"

    @property
    def ran(self) -> bool:
        return self.p_value is not None


def smallest_exact_p(n_a: int, n_b: int) -> float:
    """Two-sided: only the two most extreme of C(n_a + n_b, n_a) splits reach the floor."""
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


def exact_test(a, b) -> ExactTest:
    """Exact Mann-Whitney test whenever its smallest attainable p is below ALPHA (3 vs 6 seeds
    reach 0.024); else only that floor, since no outcome could be significant."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    floor = smallest_exact_p(len(a), len(b))
    if floor >= ALPHA:
        return ExactTest(len(a), len(b), None, None, floor)
    r = stats.mannwhitneyu(b, a, method="exact", alternative="two-sided")
    return ExactTest(len(a), len(b), float(r.statistic), float(r.pvalue), floor)


def holm(p_values: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values: the k-th smallest of m is multiplied by m - k + 1,
    then made monotone; rejecting where adjusted p < alpha controls the family-wise error."""
    order = sorted(p_values, key=p_values.get)
    m, running, out = len(order), 0.0, {}
    for k, key in enumerate(order):
        running = max(running, min(1.0, (m - k) * p_values[key]))
        out[key] = running
    return out


class Direction(str, Enum):
    """Whether the change improves the metric significantly; NO_VERDICT with one training seed
    per arm, whose interval holds evaluation noise only."""
    REPRODUCED = "reproduced"
    OPPOSITE = "opposite"
    INCONCLUSIVE = "inconclusive"
    NO_VERDICT = "no verdict: one training seed (evaluation noise only)"


class Size(str, Enum):
    """Where the paper's change lies against our interval."""
    CONSISTENT = "consistent with"
    SMALLER = "smaller than"
    LARGER = "larger than"


class Rule(str, Enum):
    SEEDS = "a verdict needs at least 2 training seeds per arm"
    INTERVAL = ("direction: reproduced if the change improves the metric and its 95% interval "
                "excludes no change")
    INTERVAL_AND_SIZE = INTERVAL + "; size: consistent if the interval holds the paper's change"
    HOLM = ("direction (secondary metric): reproduced if the change improves the metric and its "
            "Holm-adjusted p < 0.05")


@dataclass(frozen=True)
class Verdict:
    direction: Direction
    size: Size | None  # None: no paper change to set against, or no interval
    rule: Rule


def direction(interval: RatioInterval, higher_is_better: bool, p_value: float | None = None
              ) -> Direction:
    """Reproduced if the change is on the improving side and significant: the interval clears
    1, or, for a Holm-adjusted secondary metric, its adjusted p < ALPHA."""
    significant = interval.has_interval and (
        interval.low > 1.0 or interval.high < 1.0 if p_value is None else p_value < ALPHA)
    if not significant:
        return Direction.INCONCLUSIVE
    return (Direction.REPRODUCED if (interval.ratio > 1.0) == higher_is_better
            else Direction.OPPOSITE)


def size(interval: RatioInterval, paper_change: float) -> Size:
    """Where the paper's change (in %) lies against our interval."""
    target = 1.0 + paper_change / 100.0
    return (Size.SMALLER if interval.high < target else Size.LARGER if interval.low > target
            else Size.CONSISTENT)


def verdict(interval: RatioInterval, higher_is_better: bool, training_seeds: tuple[int, int],
            paper_change: float | None = None, adjusted_p: float | None = None) -> Verdict:
    """`training_seeds`: seeds per arm (one seed: no verdict). `adjusted_p`: the Holm-adjusted
    p of a secondary metric, which then decides significance instead of the 95% interval.
    `paper_change`: the paper's change in %, for the size judgement."""
    if min(training_seeds) < 2:
        return Verdict(Direction.NO_VERDICT, None, Rule.SEEDS)
    sized = paper_change is not None and interval.has_interval
    rule = (Rule.HOLM if adjusted_p is not None else
            Rule.INTERVAL_AND_SIZE if sized else Rule.INTERVAL)
    return Verdict(direction(interval, higher_is_better, adjusted_p),
                   size(interval, paper_change) if sized else None, rule)


# -- trend over batch size --------------------------------------------------------------------
@dataclass(frozen=True)
class LineFit:
    """Least-squares line of the metric against log2(batch) over [first, last] batch sizes,
    with the lack-of-fit F-test of that line against one mean per batch size."""
    first: int
    last: int
    n: int
    levels: int
    slope: float  # per doubling of the batch
    slope_low: float
    slope_high: float
    lack_of_fit_f: float | None
    lack_of_fit_p: float | None  # None: fewer than 3 levels or no replicates
    span: str = ""  # 'first..last'
    ratio_per_doubling: float | None = None  # exp(slope) of a line on log values

    @property
    def fits(self) -> bool | None:
        return None if self.lack_of_fit_p is None else self.lack_of_fit_p >= ALPHA


def line_fit(batch_sizes, values, first: int | None = None, last: int | None = None) -> LineFit:
    """Slope per doubling with its t-interval, and the classic lack-of-fit test: residual
    sum of squares split into pure error (within batch sizes) and lack of fit (between the
    line and the batch means); F = (SS_lof / (c - 2)) / (SS_pe / (n - c))."""
    b = np.asarray(batch_sizes, float)
    y = np.asarray(values, float)
    first = int(b.min()) if first is None else first
    last = int(b.max()) if last is None else last
    keep = (b >= first) & (b <= last)
    x, y = np.log2(b[keep]), y[keep]
    levels = np.unique(x)
    if len(x) < 3 or len(levels) < 2:
        raise ValueError(f"a line over batch {first}..{last} needs at least 3 points over at "
                         "least 2 batch sizes")
    fit = stats.linregress(x, y)
    q = stats.t.ppf(0.5 + CONFIDENCE / 2, len(x) - 2)
    ss_res = float(np.sum((y - (fit.intercept + fit.slope * x)) ** 2))
    ss_pe = float(sum(np.sum((y[x == v] - y[x == v].mean()) ** 2) for v in levels))
    df_lof, df_pe = len(levels) - 2, len(x) - len(levels)
    f = p = None
    if df_lof > 0 and df_pe > 0 and ss_pe > 0:
        f = ((ss_res - ss_pe) / df_lof) / (ss_pe / df_pe)
        p = float(stats.f.sf(f, df_lof, df_pe))
    return LineFit(first, last, len(x), len(levels), float(fit.slope),
                   float(fit.slope - q * fit.stderr), float(fit.slope + q * fit.stderr),
                   None if f is None else float(f), p, f"{first}..{last}")


@dataclass(frozen=True)
class Trend:
    n: int
    spearman_rho: float  # over all points, seeds pooled
    spearman_p: float  # Monte Carlo permutation p, (exceedances + 1) / (resamples + 1)
    spearman_p_at_floor: bool  # no permutation reached |rho|: p is a bound, not a value
    resamples: int
    means_n: int  # batch sizes
    means_rho: float  # Spearman of the batch means
    means_p: float  # exact: every ordering of the means enumerated
    lines: list[LineFit]  # on log values: all batch sizes, up to and from the baseline


def _spearman(x, v, axis=-1):
    rx, rv = stats.rankdata(x), stats.rankdata(v, axis=axis)
    rx, rv = rx - rx.mean(), rv - rv.mean(axis=axis, keepdims=True)
    return np.sum(rx * rv, axis=axis) / np.sqrt(np.sum(rx ** 2) * np.sum(rv ** 2, axis=axis))


def spearman_p(x, y, resamples: float = math.inf) -> float:
    """Two-sided permutation p of Spearman's rho: the share of orderings of y whose |rho|
    reaches the observed one, every ordering enumerated when there are at most `resamples`
    (exact), else (exceedances + 1) / (resamples + 1) over random ones."""
    return float(stats.permutation_test(
        (np.asarray(y, float),), lambda v, axis=-1: np.abs(_spearman(x, v, axis)),
        permutation_type="pairings", vectorized=True, alternative="greater",
        n_resamples=resamples, rng=np.random.default_rng(SEED)).pvalue)


def trend_test(batch_sizes, values, baseline: int | None = None) -> Trend:
    """Trend of `values` against log2(batch) (one entry per (batch, seed))."""
    b = np.asarray(batch_sizes, float)
    y = np.asarray(values, float)
    if len(b) != len(y):
        raise ValueError(f"{len(b)} batch sizes but {len(y)} values")
    x = np.log2(b)
    if len(x) < 3 or len(np.unique(x)) < 2:
        raise ValueError("a trend needs at least 3 points over at least 2 batch sizes")
    if np.ptp(y) == 0:
        raise ValueError("constant values have no rank order: no trend to test")
    rho, p = float(stats.spearmanr(x, y).statistic), spearman_p(x, y, RESAMPLES)
    at_floor = math.factorial(len(y)) > RESAMPLES and p * (RESAMPLES + 1) < 1.5  # a bound
    levels = np.unique(b)
    means = np.array([y[b == v].mean() for v in levels])
    ranked = len(levels) > 2 and np.ptp(means) > 0
    means_rho = float(stats.spearmanr(levels, means).statistic) if ranked else math.nan
    means_p = spearman_p(levels, means) if ranked and len(levels) <= 8 else math.nan
    # lines on log values, the scale of the ratio intervals (whether a line "fits" depends on
    # the scale); their slopes are log change per doubling
    logs = np.log(y) if np.all(y > 0) else y
    lines = [line_fit(b, logs)]
    if baseline is not None and levels.min() < baseline < levels.max():
        for first, last in ((int(levels.min()), baseline), (baseline, int(levels.max()))):
            try:
                lines.append(line_fit(b, logs, first, last))
            except ValueError:
                pass
    return Trend(len(y), rho, p, at_floor,
                 RESAMPLES, len(levels), means_rho, float(means_p),
                 [replace(fit, ratio_per_doubling=math.exp(fit.slope) if logs is not y else None)
                  for fit in lines])
