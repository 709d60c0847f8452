"""The critical batch of McCandlish et al. 2018 (arXiv 1812.06162), fitted to steps to a target.

S = S_min (1 + B_crit / B) steps and E = E_min (1 + B / B_crit) examples; E counts the real
images D sees (n_dis * B per generator step), so E_min = n_dis * S_min * B_crit. Least squares
on log steps (seeds spread multiplicatively) over each batch's mean, weighted by its seeds:
B_crit on a log grid refined around its best value, log S_min in closed form. A batch with a
censored seed bounds its steps from below: a one-sided penalty where the curve falls under the
bound (Tobit-like; never dropped). Intervals: a bootstrap over seeds within each batch, their
deviations inflated by sqrt(n / (n - 1)) so that 3 seeds do not understate the spread.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from experiments.reporting.lib.crossings import Crossing

GRID_POINTS, REFINE_POINTS = 240, 41
GRID_SPAN = 1000.0  # B_crit searched in [min batch / SPAN, max batch * SPAN]
BOOTSTRAP = 2000
LEVEL = 0.95


def interval(values) -> tuple[float, float]:
    """The central LEVEL percentile interval of bootstrap replicates."""
    lo, hi = np.percentile(values, [(1 - LEVEL) / 2 * 100, (1 + LEVEL) / 2 * 100])
    return float(lo), float(hi)


def resample_mean(v: np.ndarray, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """`n` bootstrap means of one cell's log steps `v` (seeds drawn with replacement, their
    deviations inflated by sqrt(k / (k - 1))) and the (n x k) seeds drawn."""
    k = len(v)
    pick = rng.integers(0, k, size=(n, k))
    inflate = math.sqrt(k / (k - 1)) if k > 1 else 1.0
    return v.mean() + ((v - v.mean()) * inflate)[pick].mean(axis=1), pick


@dataclass(frozen=True)
class Fit:
    """S = s_min (1 + b_crit / B) fitted to one target's steps; intervals are (low, high)."""
    s_min: float
    b_crit: float
    e_min: float
    n_dis: int
    batches: tuple[int, ...]
    log_steps: tuple[float, ...]  # each batch size's mean log steps (a bound where censored)
    censored: tuple[bool, ...]
    residuals: tuple[float, ...]  # measured / fitted steps - 1, per batch size
    at_bound: str = ""  # 'upper': S ~ 1/B over the whole range; 'lower': S does not fall
    s_min_ci: tuple[float, float] | None = None
    b_crit_ci: tuple[float, float] | None = None
    e_min_ci: tuple[float, float] | None = None
    bootstrap_at_bound: float = 0.0  # fraction of resamples whose B_crit hit a grid end
    notes: tuple[str, ...] = ()

    @property
    def bounded(self) -> bool:
        """B_crit inside the searched range with an interval: a value to compare."""
        return not self.at_bound and self.b_crit_ci is not None

    def steps(self, batch) -> np.ndarray:
        return self.s_min * (1 + self.b_crit / np.asarray(batch, dtype=float))


def _profile(y, cens, w, c, inv_b):
    """For B_crit values `c` (shape C, or R x C: one grid per row) and per-batch data y, cens,
    w (shape R x N): the best log S_min (R x C) and the objective there (R x C). Exact for the
    piecewise quadratic in log S_min: the active censored set is grown until it is stable."""
    c = np.atleast_2d(c)
    t = y[:, None, :] - np.log1p(c[:, :, None] * inv_b[None, None, :])  # exact log S_min
    obs = (~cens)[:, None, :] & np.ones_like(t, dtype=bool)
    wt = np.broadcast_to(w[:, None, :], t.shape)
    active = obs.copy()
    for _ in range(y.shape[1] + 1):
        m = (wt * t * active).sum(-1) / np.maximum((wt * active).sum(-1), 1e-300)
        grown = obs | (cens[:, None, :] & (t > m[..., None]))
        if np.array_equal(grown, active):
            break
        active = grown
    r = t - m[..., None]
    return m, (wt * np.where(obs, r ** 2, np.where(r > 0, r ** 2, 0.0))).sum(-1)


def solve(y, cens, w, batches):
    """Best (log S_min, B_crit, at-bound flag: 1 upper, -1 lower) per row of y (R x N)."""
    inv_b = 1.0 / batches
    grid = np.geomspace(batches.min() / GRID_SPAN, batches.max() * GRID_SPAN, GRID_POINTS)
    _, cost = _profile(y, cens, w, grid, inv_b)
    i = np.argmin(cost, axis=1)
    lo, hi = np.log(grid[np.maximum(i - 1, 0)]), np.log(grid[np.minimum(i + 1, len(grid) - 1)])
    # refine between the grid neighbours of each row's best value
    fine = np.exp(lo[:, None] + np.linspace(0.0, 1.0, REFINE_POINTS)[None, :] * (hi - lo)[:, None])
    mr, cr = _profile(y, cens, w, fine, inv_b)
    j, rows = np.argmin(cr, axis=1), np.arange(y.shape[0])
    return mr[rows, j], fine[rows, j], np.where(i == len(grid) - 1, 1, np.where(i == 0, -1, 0))


def _batch_values(found: dict[int, list[Crossing]]):
    batches = np.array(sorted(found), dtype=float)
    logs = [np.log([max(c.step, 1e-9) for c in found[int(b)]]) for b in batches]
    return batches, logs, [np.array([c.censored for c in found[int(b)]]) for b in batches]


def resample(logs: list[np.ndarray], cens: list[np.ndarray], n: int, seed: int = 0):
    """`n` bootstrap replicates of the per-batch (mean log steps, censored)."""
    rng = np.random.default_rng(seed)
    ys, cs = np.empty((n, len(logs))), np.empty((n, len(logs)), dtype=bool)
    for j, (v, c) in enumerate(zip(logs, cens)):
        ys[:, j], pick = resample_mean(v, n, rng)
        cs[:, j] = c[pick].any(axis=1)
    return ys, cs


def fit(found: dict[int, list[Crossing]], n_dis: int, bootstrap: int = BOOTSTRAP,
        seed: int = 0) -> Fit | None:
    """The fit to {batch: per-seed crossings} of one target; None when fewer than 3 batch
    sizes have every seed at the target (the model has 2 parameters)."""
    batches, logs, cens = _batch_values(found)
    if sum(not c.any() for c in cens) < 3:
        return None
    y = np.array([[v.mean() for v in logs]])
    cb = np.array([[c.any() for c in cens]])
    w = np.array([[len(v) for v in logs]], dtype=float)
    m, c, bound = solve(y, cb, w, batches)
    s_min, b_crit = float(np.exp(m[0])), float(c[0])
    fitted = s_min * (1 + b_crit / batches)
    out = dict(s_min=s_min, b_crit=b_crit, e_min=n_dis * s_min * b_crit, n_dis=n_dis,
               batches=tuple(int(b) for b in batches), log_steps=tuple(float(v) for v in y[0]),
               censored=tuple(bool(v) for v in cb[0]),
               residuals=tuple(float(math.exp(v) / f - 1) for v, f in zip(y[0], fitted)),
               at_bound={1: "upper", -1: "lower", 0: ""}[int(bound[0])])
    if bootstrap:
        ys, cs = resample(logs, cens, bootstrap, seed)
        bm, bc, bb = solve(ys, cs, np.broadcast_to(w, ys.shape), batches)
        out.update(s_min_ci=interval(np.exp(bm)), b_crit_ci=interval(bc),
                   e_min_ci=interval(n_dis * np.exp(bm) * bc),
                   bootstrap_at_bound=float(np.mean(bb != 0)))
    return Fit(**out)


@dataclass(frozen=True)
class Speedup:
    """Going from batch `base` to `batch` at one target: steps saved S_base / S_batch (ratio of
    geometric means over seeds) with its bootstrap interval, and images spent E_batch / E_base.
    `bound` is '>' or '<' when a censored side makes the ratio a bound, '?' when both are."""
    base: int
    batch: int
    steps_saved: float
    ci: tuple[float, float] | None
    images_spent: float
    bound: str = ""


def bound_of(base_censored: bool, batch_censored: bool) -> str:
    """'>' when only the base's steps are a lower bound, '<' the mirror, '?' both, '' none."""
    return {(True, False): ">", (False, True): "<", (True, True): "?"}.get(
        (base_censored, batch_censored), "")


def speedup(found: dict[int, list[Crossing]], base: int, batch: int,
            bootstrap: int = BOOTSTRAP, seed: int = 0) -> Speedup | None:
    if base not in found or batch not in found:
        return None
    _, logs, cens = _batch_values({b: found[b] for b in (base, batch)})
    bound = bound_of(bool(cens[0].any()), bool(cens[1].any()))
    if bound == "?":
        return Speedup(base, batch, float("nan"), None, float("nan"), "?")
    ratio = math.exp(logs[0].mean() - logs[1].mean())
    ci = None
    if bootstrap and not bound:
        ys, _ = resample(logs, cens, bootstrap, seed)
        ci = interval(np.exp(ys[:, 0] - ys[:, 1]))
    return Speedup(base, batch, ratio, ci, batch / base / ratio, bound)
