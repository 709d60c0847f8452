"""Study v5: the learning rate searched per batch size, and the critical batch on that frontier.

McCandlish et al. (arXiv 1812.06162) define S_min, E_min and B_crit where every batch size
trains at its own best learning rate; Shallue et al. (JMLR 2019, arXiv 1811.03600) show that
batch-size comparisons without per-batch tuning disagree for that reason alone. A search run
is one (batch, lr factor, seed); the runs of one (batch, factor) form a cell.

Selection, per target and batch size: the factor whose cell reaches the target in the fewest
steps on the selection seeds (geometric mean; a cell with a seed that never reached the target
ranks below every cell whose seeds all did, its unreached seeds counted at their step cap).
The held-out seed (never used to choose) gives S* free of selection bias; its ratio to the
selection seeds' S* measures that bias. Bootstrap intervals re-select the factor in every
resample. A choice is bracketed when the chosen factor has a searched neighbour on both sides
(worse by construction; a diverged run is worse than any) at most a factor 2 away. The lr rule
reads each bracketed batch's best factor between grid points: the vertex of the parabola
through the chosen cell and its two neighbours (log steps against log factor), since a grid of
factor-2 steps alone cannot resolve an exponent finer than its spacing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from experiments.reporting.lib import mccandlish as fit_lib
from experiments.reporting.lib import stats as statistics
from experiments.reporting.lib.crossings import Crossing, Curve, curve_of

SELECTION_SEEDS = (0, 1)
MAX_NEIGHBOUR_GAP = 2.0  # the grid's largest allowed ratio between neighbouring factors
EXCESS = 1.2  # Zhang et al. (arXiv 2410.21676): steps 20% above perfect scaling
RULES = {"none": 0.0, "square root": 0.5, "linear": 1.0}  # lr* ~ B^a
# why a choice is or is not bracketed (an enumerated verdict, counted in the report)
BRACKETED, AT_LOWEST, AT_HIGHEST, WIDE_GAP = ("bracketed", "best at the lowest factor",
                                              "best at the highest factor",
                                              "a neighbour more than 2x away")
BRACKETS = (BRACKETED, AT_LOWEST, AT_HIGHEST, WIDE_GAP)


@dataclass(frozen=True)
class SearchRun:
    """One run of the search: its cell, its curve, its step cap and whether it diverged."""
    batch: int
    factor: float
    seed: int
    curve: Curve
    cap: int
    diverged: bool = False

    def crossing(self, metric: str, target: float) -> Crossing:
        """The curve's crossing; a target never reached is censored at the step cap."""
        c = self.curve.crossing(metric, target)
        return c if c.reached else Crossing(float(self.cap), censored=True)

    def log_steps(self, metric: str, target: float) -> tuple[float, bool]:
        c = self.crossing(metric, target)
        return math.log(max(c.step, 1e-9)), c.censored


@dataclass(frozen=True)
class Choice:
    """One batch size's chosen factor at one target, how well the grid brackets it (and the
    factor to run next when it does not), and the steps there: selection seeds, held-out
    seeds and all seeds (geometric means); selection_bias = held-out / selection steps."""
    batch: int
    factor: float
    bracket: str
    refined_factor: float  # the parabola's vertex when bracketed, else `factor`
    factors: tuple[float, ...]  # the searched factors, ascending
    cell_steps: tuple[float | None, ...]  # each factor's selection-seed steps (None: censored)
    steps_selection: float
    steps_held_out: float | None
    steps_all: float
    censored: bool  # a seed at the chosen factor never reached the target
    seeds: tuple[int, ...]
    selection_bias: float | None
    next_factor: float | None


def runs_of(points, base_lr: float) -> list[SearchRun]:
    """records.Points as search runs: the factor is the point's G lr over `base_lr`."""
    return [SearchRun(batch=p.record.global_batch_size,
                      factor=round(p.config.train.g_lr / base_lr, 6), seed=p.record.seed,
                      curve=curve_of(p), cap=p.config.train.steps,
                      diverged=p.record.status == "diverged") for p in points]


def _cells(runs: list[SearchRun]) -> dict[int, dict[float, list[SearchRun]]]:
    out: dict[int, dict[float, list[SearchRun]]] = {}
    for r in sorted(runs, key=lambda r: (r.batch, r.factor, r.seed)):
        out.setdefault(r.batch, {}).setdefault(r.factor, []).append(r)
    return out


def bracket(factors: list[float], chosen: float) -> str:
    i = factors.index(chosen)
    if i == 0:
        return AT_LOWEST
    if i == len(factors) - 1:
        return AT_HIGHEST
    gap = max(chosen / factors[i - 1], factors[i + 1] / chosen)
    return WIDE_GAP if gap > MAX_NEIGHBOUR_GAP * (1 + 1e-9) else BRACKETED


def next_factor(factors: list[float], f: float, where: str) -> float | None:
    """The factor that would bracket an unbracketed choice: half the lowest, twice the highest,
    or the power of 2 inside a gap wider than 2x; None when bracketed."""
    if where in (AT_LOWEST, AT_HIGHEST):
        return f / 2 if where == AT_LOWEST else f * 2
    if where != WIDE_GAP:
        return None
    i = factors.index(f)
    lo, hi = ((factors[i - 1], f) if f / factors[i - 1] > factors[i + 1] / f
              else (f, factors[i + 1]))
    inside = [2.0 ** k for k in range(-10, 11) if lo < 2.0 ** k < hi]
    mid = math.log(math.sqrt(lo * hi))
    return min(inside, key=lambda x: abs(math.log(x) - mid)) if inside else math.sqrt(lo * hi)


def vertex(logf, y):
    """The minimum of the parabola through three (log factor, log steps) points, clipped to
    their span; the middle point where the parabola does not open upwards. Vectorised over
    trailing axes of `y` (shape 3 x ...)."""
    x0, x1, x2 = logf
    y0, y1, y2 = y
    d = (x0 - x1) * (x0 - x2) * (x1 - x2)
    a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / d
    b = (x2 ** 2 * (y0 - y1) + x1 ** 2 * (y2 - y0) + x0 ** 2 * (y1 - y2)) / d
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(a > 0, -b / (2 * np.where(a > 0, a, 1.0)), x1)
    return np.clip(v, x0, x2)


def _geo(values: list[tuple[float, bool]]) -> float:
    return float(math.exp(np.mean([v for v, _ in values])))


def choose(runs: list[SearchRun], metric: str, target: float,
           selection_seeds=SELECTION_SEEDS) -> dict[int, Choice]:
    """Per batch size, the factor chosen on `selection_seeds` and its steps."""
    out = {}
    for batch, cells in _cells(runs).items():
        sel = {f: v for f, rs in cells.items()
               if (v := [r.log_steps(metric, target) for r in rs if r.seed in selection_seeds])}
        if not sel:
            continue
        # a cell's rank: (seeds censored, mean log steps)
        rank = {f: (sum(c for _, c in v), float(np.mean([x for x, _ in v])))
                for f, v in sel.items()}
        factors = sorted(sel)
        chosen = min(factors, key=rank.get)
        i, where, refined = factors.index(chosen), bracket(factors, chosen), chosen
        if where in (BRACKETED, WIDE_GAP):
            three = factors[i - 1:i + 2]
            refined = float(np.exp(vertex(np.log(three), [rank[f][1] for f in three])))
        every = [r.log_steps(metric, target) for r in cells[chosen]]
        held = [r.log_steps(metric, target) for r in cells[chosen]
                if r.seed not in selection_seeds]
        steps_selection, steps_held_out = _geo(sel[chosen]), _geo(held) if held else None
        out[batch] = Choice(
            batch, chosen, where, refined, tuple(factors),
            tuple(None if rank[f][0] else _geo(sel[f]) for f in factors), steps_selection,
            steps_held_out, _geo(every), any(c for _, c in every),
            tuple(r.seed for r in cells[chosen]),
            None if steps_held_out is None else steps_held_out / steps_selection,
            next_factor(factors, chosen, where))
    return out


def found_at(runs: list[SearchRun], choices: dict[int, Choice], metric: str,
             target: float) -> dict[int, list[Crossing]]:
    """{batch: crossings of the chosen cell's runs}, for lib/mccandlish.py."""
    out = {}
    for r in runs:
        if r.batch in choices and r.factor == choices[r.batch].factor:
            out.setdefault(r.batch, []).append(r.crossing(metric, target))
    return out


def resampled_choices(runs: list[SearchRun], metric: str, target: float, n: int, seed: int = 0):
    """`n` bootstrap replicates of the tuned curve, re-selecting every batch's factor in each:
    (batches, y: n x batches mean log steps, censored: n x batches, log refined factor).
    Seeds are drawn within each cell as fit_lib.resample draws them; selection uses every
    seed of a cell, since a resample no longer knows which seeds chose."""
    rng = np.random.default_rng(seed)
    cells = _cells(runs)
    batches = sorted(cells)
    y, logf = np.empty((n, len(batches))), np.empty((n, len(batches)))
    cens = np.zeros((n, len(batches)), dtype=bool)
    cols = np.arange(n)
    for j, b in enumerate(batches):
        factors = sorted(cells[b])
        means, censored = [], []
        for f in factors:
            v, c = np.array([r.log_steps(metric, target) for r in cells[b][f]]).T
            m, pick = fit_lib.resample_mean(v, n, rng)
            means.append(m)
            censored.append(c.astype(bool)[pick].sum(axis=1))
        means, censored = np.array(means), np.array(censored)  # factors x n
        best = np.argmin(censored * 1e6 + means, axis=0)  # fewest censored, then fewest steps
        y[:, j], cens[:, j] = means[best, cols], censored[best, cols] > 0
        lf = np.log(np.array(factors))
        logf[:, j] = lf[best]
        inner = (best > 0) & (best < len(factors) - 1)
        if inner.any():  # the vertex between the neighbours, as `choose` reads it
            k = best[inner]
            logf[inner, j] = vertex(np.stack([lf[k - 1], lf[k], lf[k + 1]]),
                                    np.stack([means[k + d, cols[inner]] for d in (-1, 0, 1)]))
    return np.array(batches, dtype=float), y, cens, logf


@dataclass(frozen=True)
class TunedFit:
    """S* = S_min (1 + B_crit / B) over one range of batch sizes, with the re-selecting
    bootstrap's intervals and the lack-of-fit F-test against one mean per batch size."""
    batches: tuple[int, ...]
    fit: fit_lib.Fit  # its own intervals do not re-select
    b_crit_ci: tuple[float, float] | None
    s_min_ci: tuple[float, float] | None
    lack_of_fit_p: float | None


def lack_of_fit_p(found: dict[int, list[Crossing]], f: fit_lib.Fit) -> float | None:
    """F-test of the hyperbola's 2 parameters against one mean log step per batch size (pure
    error: the seeds' scatter). None with censored batches or too few degrees of freedom."""
    if any(f.censored):
        return None
    logs = [np.log([c.step for c in found[b]]) for b in f.batches]
    fitted = np.log(f.steps(np.array(f.batches)))
    ss_lof = sum(len(v) * (v.mean() - m) ** 2 for v, m in zip(logs, fitted))
    ss_pe = sum(((v - v.mean()) ** 2).sum() for v in logs)
    df_lof, df_pe = len(logs) - 2, sum(len(v) - 1 for v in logs)
    if df_lof < 1 or df_pe < 1 or ss_pe <= 0:
        return None
    return float(stats.f.sf((ss_lof / df_lof) / (ss_pe / df_pe), df_lof, df_pe))


def tuned_fit(runs: list[SearchRun], choices: dict[int, Choice], metric: str, target: float,
              n_dis: int, batches=None, bootstrap: int = fit_lib.BOOTSTRAP,
              resampled=None) -> TunedFit | None:
    """`resampled`: resampled_choices of the same runs and target, when already drawn."""
    keep = [r for r in runs if batches is None or r.batch in batches]
    found = found_at(keep, choices, metric, target)
    f = fit_lib.fit(found, n_dis, bootstrap=0)
    if f is None:
        return None
    b_ci = s_ci = None
    if bootstrap:
        bs, y, cens, _ = resampled or resampled_choices(keep, metric, target, bootstrap)
        w = np.array([[len(found[int(b)]) for b in bs]], dtype=float)
        m, c, _ = fit_lib.solve(y, cens, np.broadcast_to(w, y.shape), bs)
        b_ci, s_ci = fit_lib.interval(c), fit_lib.interval(np.exp(m))
    return TunedFit(f.batches, f, b_ci, s_ci, lack_of_fit_p(found, f))


def excess_batch(choices: dict[int, Choice], excess: float = EXCESS) -> float | None:
    """The batch size where tuned steps exceed perfect scaling from the smallest batch by
    `excess` (Zhang et al.: no model needed), log-interpolated; None if no batch does (or the
    smallest batch's steps are censored)."""
    bs = sorted(choices)
    if not bs or choices[bs[0]].censored:
        return None
    ratio = [math.log(choices[b].steps_all * b / (choices[bs[0]].steps_all * bs[0])) for b in bs]
    for i in range(1, len(bs)):
        if ratio[i] >= math.log(excess):
            t = (math.log(excess) - ratio[i - 1]) / (ratio[i] - ratio[i - 1])
            x0, x1 = math.log(bs[i - 1]), math.log(bs[i])
            return float(math.exp(x0 + min(max(t, 0.0), 1.0) * (x1 - x0)))
    return None


@dataclass(frozen=True)
class LrRule:
    """lr* ~ B^a: the exponent fitted to the chosen factors (log-log least squares) with the
    re-selecting bootstrap's interval; each textbook rule 'inside' or 'outside' it; the batch
    where lr* peaks and whether it falls after (Li et al. 2024, arXiv 2405.14578)."""
    exponent: float
    ci: tuple[float, float] | None
    rules: dict
    peak_batch: int
    falls_after_peak: bool


def _slope(logb: np.ndarray, logf: np.ndarray) -> np.ndarray:
    """Least-squares slope of each row of logf on logb."""
    x = logb - logb.mean()
    return ((logf - logf.mean(axis=-1, keepdims=True)) * x).sum(-1) / (x ** 2).sum()


def lr_rule(runs: list[SearchRun], choices: dict[int, Choice], metric: str, target: float,
            bootstrap: int = fit_lib.BOOTSTRAP, resampled=None) -> LrRule | None:
    bs = sorted(choices)
    if len(bs) < 2:
        return None
    logb = np.log(np.array(bs, dtype=float))
    factors = np.array([choices[b].refined_factor for b in bs])
    ci = None
    if bootstrap:
        _, _, _, logf = resampled or resampled_choices(runs, metric, target, bootstrap)
        ci = fit_lib.interval(_slope(logb, logf))
    rules = {name: None if ci is None else "inside" if ci[0] <= v <= ci[1] else "outside"
             for name, v in RULES.items()}
    peak = int(np.argmax(factors))
    return LrRule(float(_slope(logb, np.log(factors))), ci, rules, bs[peak],
                  bool(peak < len(bs) - 1 and factors[-1] < factors[peak]))


@dataclass(frozen=True)
class TunedSpeedup:
    """From the baseline batch to `batch`, each at its chosen factor: steps saved (ratio of
    geometric means over all seeds) with a Welch t-interval on log steps and the re-selecting
    bootstrap's interval, the images spent, and the two factors. `bound` as
    fit_lib.Speedup's (then no interval)."""
    baseline: int
    batch: int
    steps_saved: float
    welch_ci: tuple[float, float] | None
    bootstrap_ci: tuple[float, float] | None
    images_spent: float
    baseline_factor: float
    factor: float
    bound: str = ""


def speedup(runs: list[SearchRun], choices: dict[int, Choice], metric: str, target: float,
            baseline: int, batch: int, bootstrap: int = fit_lib.BOOTSTRAP
            ) -> TunedSpeedup | None:
    if baseline not in choices or batch not in choices:
        return None
    found = found_at(runs, choices, metric, target)
    a, b = found[baseline], found[batch]
    saved = choices[baseline].steps_all / choices[batch].steps_all
    bound = fit_lib.bound_of(any(c.censored for c in a), any(c.censored for c in b))
    welch = boot = None
    if not bound:
        w = statistics.welch_ratio([c.step for c in b], [c.step for c in a])
        welch = (w.low, w.high) if w.has_interval else None
        if bootstrap:
            bs, y, _, _ = resampled_choices(
                [r for r in runs if r.batch in (baseline, batch)], metric, target, bootstrap)
            i, j = list(bs).index(baseline), list(bs).index(batch)
            boot = fit_lib.interval(np.exp(y[:, i] - y[:, j]))
    return TunedSpeedup(baseline, batch, saved, welch, boot, batch / baseline / saved,
                        choices[baseline].factor, choices[batch].factor, bound)
