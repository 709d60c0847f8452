"""The sweep's cost model on synthetic timings: known coefficients come back, one finished
point already predicts other batch sizes when the cost is FLOP-proportional, calibration."""
import subprocess
import sys

import numpy as np
import pytest

from experiments.running import cost_model as cm

BATCHES = (8, 16, 32, 64, 128, 256, 512)
FLOPS_PER_IMAGE_STEP = 0.74e9  # ~ fashion_mnist: 47.4 GFLOP per step at batch 64


def sweep_points(steps=300, every=75, n_dis=2, budget="equal_steps"):
    points = []
    for b in BATCHES:
        s = steps if budget == "equal_steps" else max(1, round(steps * 64 / b))
        points.append(cm.PointCost(steps=s, global_batch=b, n_dis=n_dis,
                                   evaluations=cm.evaluations_for(s, every),
                                   step_flops=FLOPS_PER_IMAGE_STEP * b))
    return points


def timed(points, a, b, c, noise=0.0, record_eval=True, seed=0, unit="flop"):
    rng = np.random.default_rng(seed)
    out = []
    for p in points:
        train = a * p.steps + b * p.work(unit)
        ev = c * p.evaluations
        jitter = 1.0 + noise * rng.standard_normal()
        out.append(cm.PointCost(**{**p.__dict__, "seconds": (train + ev) * jitter,
                                   "eval_seconds": ev * jitter if record_eval else None}))
    return out


@pytest.mark.parametrize("record_eval", [True, False])
@pytest.mark.parametrize("budget", ["equal_steps", "equal_images"])
def test_recovers_known_coefficients(record_eval, budget):
    a, b, c = 0.05, 1.0 / 60e9, 4.0  # 50 ms/step overhead, 60 GFLOP/s, 4 s per evaluation
    points = sweep_points(budget=budget)
    if budget == "equal_steps":  # vary the eval count so that c is identifiable from totals
        points = [cm.PointCost(**{**p.__dict__, "evaluations": 1 + i % 3})
                  for i, p in enumerate(points)]
    model = cm.fit(timed(points, a, b, c, record_eval=record_eval))
    assert model.unit == "flop" and model.fitted_on == len(BATCHES)
    np.testing.assert_allclose([model.per_step, model.per_work, model.per_eval], [a, b, c],
                               rtol=1e-6)


def test_noisy_fit_is_close_and_non_negative():
    a, b, c = 0.0, 1.0 / 60e9, 4.0  # a truly zero: NNLS must not go negative
    model = cm.fit(timed(sweep_points(), a, b, c, noise=0.03, seed=3))
    assert model.per_step >= 0 and model.per_work >= 0 and model.per_eval >= 0
    assert model.per_work == pytest.approx(b, rel=0.1)
    assert model.per_eval == pytest.approx(c, rel=0.1)


@pytest.mark.parametrize("first", [8, 64, 512])
@pytest.mark.parametrize("record_eval", [True, False])
def test_one_point_predicts_other_batches_when_flop_proportional(first, record_eval):
    points = timed(sweep_points(), a=0.0, b=1.0 / 60e9, c=0.0 if not record_eval else 4.0,
                   record_eval=record_eval)
    done = next(p for p in points if p.global_batch == first)
    pending = [cm.PointCost(**{**p.__dict__, "seconds": None, "eval_seconds": None})
               for p in points if p is not done]
    model = cm.fit([done] + pending)
    assert model.fitted_on == 1 and model.per_step == 0.0
    for truth, p in zip([p for p in points if p is not done], pending):
        assert model.predict(p) == pytest.approx(truth.seconds, rel=0.25), p.global_batch
    remaining = cm.predict_remaining([done] + pending)
    assert remaining == pytest.approx(sum(p.seconds for p in points if p is not done),
                                      rel=0.25)


def test_one_point_with_images_when_flops_are_unknown():
    points = [cm.PointCost(**{**p.__dict__, "step_flops": None}) for p in sweep_points()]
    points = timed(points, a=0.0, b=2e-4, c=0.0, unit="image")
    model = cm.fit([points[3]] + [cm.PointCost(**{**p.__dict__, "seconds": None})
                                  for p in points[:3]])
    assert model.unit == "image"
    assert model.predict(points[0]) == pytest.approx(points[0].seconds, rel=1e-9)


def test_nothing_finished_means_no_estimate():
    assert cm.fit(sweep_points()) is None
    assert cm.predict_remaining(sweep_points()) is None


def test_repeated_batch_size_does_not_invent_a_per_step_cost():
    """Two seeds of one batch size cannot separate a from b: a stays 0."""
    p = timed(sweep_points(), a=0.0, b=1.0 / 60e9, c=4.0, noise=0.02)[3]
    model = cm.fit([p, cm.PointCost(**{**p.__dict__, "seconds": p.seconds * 1.02})])
    assert model.per_step == 0.0 and model.per_work > 0


def test_calibrate_from_two_batch_sizes():
    a, b, c = 0.03, 1.0 / 80e9, 5.0
    work = {bs: FLOPS_PER_IMAGE_STEP * bs for bs in (8, 256)}
    model = cm.calibrate({bs: a + b * w for bs, w in work.items()}, work, eval_seconds=c,
                         setup_seconds=12.0)
    assert model.per_step == pytest.approx(a) and model.per_work == pytest.approx(b)
    point = sweep_points()[3]
    assert model.predict(point) == pytest.approx(
        12.0 + a * point.steps + b * point.work("flop") + c * point.evaluations)
    one = cm.calibrate({64: 0.5}, {64: 64 * FLOPS_PER_IMAGE_STEP})
    assert one.per_step == 0.0 and one.per_work == pytest.approx(0.5 / (64 * 0.74e9))
    with pytest.raises(ValueError):
        cm.calibrate({64: 0.5}, {})


def test_evaluations_for_matches_run_point():
    # run_point scores at every multiple of `every` below `steps`, then once at the end.
    assert cm.evaluations_for(300, 75) == 4
    assert cm.evaluations_for(200, 50) == 4
    assert cm.evaluations_for(199, 50) == 4
    assert cm.evaluations_for(10, 0) == 1


def test_cost_of_a_sweep_point():
    from experiments.configs import preset
    from sngan import flops
    cfg = preset("fashion_mnist", {"train.steps": 300, "eval.every": 75})
    p = cm.PointCost.for_point(cfg, seconds=144.1, eval_seconds=18.2)
    assert p.step_flops == flops.train_step_flops(cfg.model, 64, 2)
    # 4 curve evaluations (75, 150, 225, final 300) + 2 replicates of the final checkpoint
    assert (p.steps, p.global_batch, p.n_dis, p.evaluations) == (300, 64, 2, 6)
    assert p.finished and p.images == 300 * 64 * 3


def test_imports_no_tensorflow():
    code = ("import sys, experiments.running.cost_model; "
            "sys.exit('tensorflow' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def _truth_with_overhead():
    """A small-channel model's timings: 25 ms per step of overhead (batch 8 runs at ~0.3 of
    the rate of batch 512), 12 s of set-up per point, 4 s per evaluation."""
    a, b, c, setup = 0.025, 1.0 / 190e9, 4.0, 12.0
    points = []
    for p in sweep_points(steps=200, every=40):
        train = a * p.steps + b * p.work("flop") + setup
        ev = c * p.evaluations
        points.append(cm.PointCost(**{**p.__dict__, "seconds": train + ev, "eval_seconds": ev}))
    return points, (a, b, c, setup)


def test_a_calibrated_prior_fixes_the_eta_after_a_small_first_point():
    points, (a, b, c, setup) = _truth_with_overhead()
    done, rest = points[0], points[1:]  # batch 8 first, as the sweep runs them
    pending = [cm.PointCost(**{**p.__dict__, "seconds": None, "eval_seconds": None})
               for p in rest]
    truth = sum(p.seconds for p in rest)
    # without a prior one point must scale by FLOPs alone: far too high
    assert cm.predict_remaining([done] + pending) > 1.5 * truth
    # a calibration that measured the right shape on a machine running 30% faster than now
    prior = cm.calibrate({8: (a + b * done.step_flops) / 1.3,
                          512: (a + b * rest[-1].step_flops) / 1.3},
                         {8: done.step_flops, 512: rest[-1].step_flops},
                         eval_seconds=c / 1.3, setup_seconds=setup)
    assert cm.fit(pending, prior) is prior  # before any point: the calibration as is
    assert cm.predict_remaining(pending, prior=prior) == pytest.approx(truth / 1.3, rel=0.1)
    model = cm.fit([done] + pending, prior)
    assert model.fitted_on == 1 and model.per_point == setup
    assert model.per_eval == pytest.approx(c)  # measured, not the calibration's
    assert model.per_step / model.per_work == pytest.approx(a / b)  # the prior's shape
    assert model.per_work == pytest.approx(b)  # its scale, fitted on the finished point
    assert cm.predict_remaining([done] + pending, prior=prior) == pytest.approx(truth)


def test_the_prior_scale_uses_every_finished_point_and_its_eval_time_when_unrecorded():
    points, (a, b, c, setup) = _truth_with_overhead()
    prior = cm.CostModel(a, b, per_eval=3.0, per_point=setup)
    done = [cm.PointCost(**{**p.__dict__, "seconds": p.seconds * (1.2 if i else 1.0),
                            "eval_seconds": None}) for i, p in enumerate(points[:2])]
    model = cm.fit(done + [cm.PointCost(**{**points[2].__dict__, "seconds": None})], prior)
    assert model.fitted_on == 2 and model.per_eval == 3.0  # no eval clock: the prior's
    train = [p.seconds - 3.0 * p.evaluations - setup for p in done]
    shape = [a * p.steps + b * p.work("flop") for p in done]
    assert model.per_work == pytest.approx(b * sum(train) / sum(shape))
    assert model.per_step == pytest.approx(a * sum(train) / sum(shape))
