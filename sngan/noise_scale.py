"""The gradient noise scale B_simple = tr(Sigma) / |G|^2, from squared gradient norms at two
batch sizes.

McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch Training" (arXiv
1812.06162): the critical batch size, past which a bigger batch stops cutting the steps a
training needs nearly in proportion, is about the noise scale B_noise, and B_simple estimates it.
Their Appendix A.1: a batch-B gradient's squared norm has expectation |G|^2 + tr(Sigma) / B, so
the norms at a small and a big batch give unbiased estimates of both terms. Each single estimate
is noisy (tr(Sigma) can come out negative), so both are smoothed with an exponential moving
average before the ratio, as the paper does. A zero-started EMA is biased towards 0 by the same
factor (1 - decay^n) in numerator and denominator, so their ratio needs no bias correction.

Pure numpy: the trainer measures the norms (sngan/gradient_noise.py); this module turns them
into estimates, keeps the series and summarises it. Players are 'd' and 'g' for the GAN; the
paper's derivation assumes one loss, which a two-player game does not have.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

ESTIMATOR = ("B_simple = tr(Sigma)/|G|^2 from squared gradient norms at two batch sizes, "
             "McCandlish et al. 2018 (arXiv 1812.06162) Appendix A.1; |G|^2 and tr(Sigma) each "
             "EMA-smoothed over measurements before the ratio")
EMA_DECAY = 0.9  # per measurement: about the last 10 measurements weigh in
WINDOW_FRACTION = 0.5  # summaries use the last half of the measurements
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
PLAYERS = ("d", "g")


def unbiased_terms(small_sq: float, big_sq: float, b_small: float, b_big: float
                   ) -> tuple[float, float]:
    """(|G|^2, tr(Sigma)) estimates from the mean squared norm of batch-`b_small` gradients and
    the squared norm of a batch-`b_big` gradient (McCandlish et al., eqs. A.2-A.3)."""
    if not 0 < b_small < b_big:
        raise ValueError(f"need 0 < b_small < b_big, got b_small={b_small}, b_big={b_big}")
    g2 = (b_big * big_sq - b_small * small_sq) / (b_big - b_small)
    trace = (small_sq - big_sq) / (1.0 / b_small - 1.0 / b_big)
    return float(g2), float(trace)


def ratio(trace: float, g2: float) -> float | None:
    """tr(Sigma)/|G|^2, or None when |G|^2 is not positive (the noise swamps the signal)."""
    return float(trace / g2) if g2 > 0 and math.isfinite(trace) else None


@dataclass
class Series:
    """One player's measurements: the step, the unbiased estimates and the EMA-smoothed ratio."""
    steps: list[int] = field(default_factory=list)
    g2: list[float] = field(default_factory=list)
    trace: list[float] = field(default_factory=list)
    b_simple: list[float | None] = field(default_factory=list)  # EMA ratio after each step

    def to_dict(self) -> dict:
        return dict(steps=self.steps, g2=self.g2, trace=self.trace, b_simple=self.b_simple)


class NoiseScaleTracker:
    """EMAs of |G|^2 and tr(Sigma) per player, and every measurement for the summaries.

    `batches` maps a player to its (b_small, b_big); `source` says where the small batches come
    from (replicas, accumulation micro-batches or slices of one batch). A step numbered s
    (counting from 1) is measured when s is a multiple of `every`.
    """

    def __init__(self, every: int, batches: dict[str, tuple[int, int]], source: str,
                 ema_decay: float = EMA_DECAY):
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        if not 0 <= ema_decay < 1:
            raise ValueError(f"ema_decay must be in [0, 1), got {ema_decay}")
        for player, (small, big) in batches.items():
            if not 0 < small < big:
                raise ValueError(f"player {player!r}: need 0 < b_small < b_big, got "
                                 f"{small}, {big}")
        self.every, self.batches, self.source, self.ema_decay = every, dict(batches), source, \
            ema_decay
        self.series = {p: Series() for p in batches}
        self._ema = {p: [0.0, 0.0] for p in batches}  # [g2, trace], zero-started

    def due(self, step_number: int) -> bool:
        return step_number % self.every == 0

    def observe(self, step: int, player: str, small_sq: float, big_sq: float) -> float | None:
        """Add one measurement; returns the player's smoothed B_simple after it."""
        g2, trace = unbiased_terms(small_sq, big_sq, *self.batches[player])
        self._observe_terms(player, int(step), g2, trace)
        return self.series[player].b_simple[-1]

    def current(self) -> dict[str, float | None]:
        """The latest smoothed B_simple per player (None before the first measurement)."""
        return {p: (s.b_simple[-1] if s.b_simple else None) for p, s in self.series.items()}

    def replay(self, saved: dict, until_step: int) -> None:
        """Re-feed a saved `to_dict()` series up to `until_step` (a resumed run's history)."""
        for player, s in saved.get("series", {}).items():
            if player not in self.series:
                continue
            for step, g2, trace in zip(s["steps"], s["g2"], s["trace"]):
                if step <= until_step:
                    self._observe_terms(player, int(step), float(g2), float(trace))

    def _observe_terms(self, player: str, step: int, g2: float, trace: float) -> None:
        ema = self._ema[player]
        ema[0] = self.ema_decay * ema[0] + (1 - self.ema_decay) * g2
        ema[1] = self.ema_decay * ema[1] + (1 - self.ema_decay) * trace
        s = self.series[player]
        s.steps.append(step)
        s.g2.append(g2)
        s.trace.append(trace)
        s.b_simple.append(ratio(ema[1], ema[0]))

    def settings(self) -> dict:
        """What a record needs to name the estimator and how it ran."""
        return dict(estimator=ESTIMATOR, source=self.source, every=self.every,
                    ema_decay=self.ema_decay, window_fraction=WINDOW_FRACTION,
                    batches={p: list(b) for p, b in self.batches.items()})

    def to_dict(self) -> dict:
        return dict(settings=self.settings(),
                    series={p: s.to_dict() for p, s in self.series.items()})

    def summary(self) -> dict | None:
        """settings + per-player `window_summary`, or None before any measurement."""
        if not any(s.steps for s in self.series.values()):
            return None
        return dict(self.settings(), **{p: window_summary(s) for p, s in self.series.items()})


def window_summary(series: Series, fraction: float = WINDOW_FRACTION,
                   confidence: float = CONFIDENCE, seed: int = 0) -> dict:
    """B_simple over the last `fraction` of the measurements, with its interval and spread.

    b_simple: the ratio of the window's mean tr(Sigma) to its mean |G|^2 (what the EMA tracks,
    without its lag); ci_low/ci_high: a percentile bootstrap over the window's measurements
    (ci_high None: unbounded, some resamples had no positive |G|^2); ema_mean/ema_std: mean
    and standard deviation of the smoothed B_simple over the window (its spread in time).
    """
    n = len(series.steps)
    if n == 0:
        return dict(measurements=0, window_start=None, b_simple=None, ci_low=None,
                    ci_high=None, ema_mean=None, ema_std=None)
    start = n - max(1, int(math.ceil(fraction * n)))
    g2 = np.asarray(series.g2[start:], np.float64)
    trace = np.asarray(series.trace[start:], np.float64)
    low = high = None
    if len(g2) >= 2:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(g2), (BOOTSTRAP_RESAMPLES, len(g2)))
        num, den = trace[idx].mean(axis=1), g2[idx].mean(axis=1)
        ratios = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.inf)
        alpha = (1 - confidence) / 2
        lo, hi = np.quantile(ratios, [alpha, 1 - alpha], method="inverted_cdf")
        low = float(lo) if math.isfinite(lo) else None
        high = float(hi) if math.isfinite(hi) else None
    smoothed = [b for b in series.b_simple[start:] if b is not None]
    return dict(measurements=len(g2), window_start=int(series.steps[start]),
                b_simple=ratio(float(trace.mean()), float(g2.mean())), ci_low=low,
                ci_high=high,
                ema_mean=float(np.mean(smoothed)) if smoothed else None,
                ema_std=float(np.std(smoothed, ddof=1)) if len(smoothed) > 1 else None)


def predicted_critical_batch(b_simple: float | None) -> int | None:
    """The power of two nearest B_simple in log2 (at least 1), or None without an estimate.

    McCandlish et al. find the critical batch close to B_noise; B_simple equals B_noise when
    the loss's Hessian is a multiple of the identity and is the paper's practical stand-in.
    Powers of two are the batch sizes a sweep runs."""
    if b_simple is None or not b_simple > 0 or not math.isfinite(b_simple):
        return None
    return 2 ** max(0, round(math.log2(b_simple)))
