"""The progress line: training speed without evaluation time, which is shown on its own."""
import io

from common import progress


def test_evaluation_time_is_excluded_from_training_speed(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[0])
    out = io.StringIO()
    meter = progress.ProgressMeter(total_steps=100, images_per_step=64, stream=out)
    now[0] += 10.0  # 10 steps of training in 10 s ...
    meter.exclude(6.0)  # ... of which 6 s were an evaluation
    line = meter.report(10)
    assert "train 2.50 steps/s 160 img/s (+ eval 6.0 s)" in line
    assert "ETA 00:36 (training)" in line  # 90 steps at 2.5 steps/s
    now[0] += 4.0  # the next interval has no evaluation (only the callbacks' microseconds)
    meter.exclude(1e-5)
    line = meter.report(20)
    assert "train 2.50 steps/s" in line and "eval" not in line
    assert out.getvalue().count("\n") == 2


def test_format_duration():
    assert progress.format_duration(59.4) == "00:59"
    assert progress.format_duration(3725) == "1:02:05"
