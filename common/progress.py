"""A one-line progress report for long loops: steps/s, images/s and ETA."""
from __future__ import annotations

import sys
import time


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class ProgressMeter:
    """Rates are measured since the last report, so a slow first (tracing) step fades out.

    Time spent outside training (evaluations) is declared with `exclude` and reported on its
    own, so steps/s and the ETA describe training alone.
    """

    def __init__(self, total_steps: int, images_per_step: int, start_step: int = 0,
                 prefix: str = "", stream=None):
        self.total = total_steps
        self.images_per_step = images_per_step
        self.prefix = prefix
        self.stream = stream or sys.stdout
        self._last_step = start_step
        self._last_time = time.perf_counter()
        self._excluded = 0.0

    def exclude(self, seconds: float) -> None:
        """Time since the last report that was not training (e.g. an evaluation)."""
        self._excluded += seconds

    def rates(self, step: int) -> tuple[float, float, float]:
        now = time.perf_counter()
        dt = max(now - self._last_time - self._excluded, 1e-9)
        steps_per_s = (step - self._last_step) / dt
        self._last_step, self._last_time = step, now
        eta = (self.total - step) / steps_per_s if steps_per_s > 0 else float("inf")
        return steps_per_s, steps_per_s * self.images_per_step, eta

    def report(self, step: int, **metrics: float) -> str:
        excluded = self._excluded
        steps_per_s, images_per_s, eta = self.rates(step)
        self._excluded = 0.0
        values = " ".join(f"{k}={v:.4g}" for k, v in metrics.items())
        eta_text = format_duration(eta) if eta != float("inf") else "?"
        evals = f" (+ eval {excluded:.1f} s)" if excluded >= 0.05 else ""
        line = (f"{self.prefix}step {step}/{self.total} | train {steps_per_s:.2f} steps/s "
                f"{images_per_s:.0f} img/s{evals} | ETA {eta_text} (training) | {values}")
        print(line, file=self.stream, flush=True)
        return line
