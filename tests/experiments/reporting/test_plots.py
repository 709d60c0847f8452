"""The figures hold the numbers they claim: lines and bands read back from the axes."""
import numpy as np
import pytest
from fake_results import fake_point, make_point

from experiments import grids, records
from experiments.reporting.lib import plots
from experiments.reporting.sections import batch_table


@pytest.fixture
def captured(monkeypatch):
    """Figures handed to save_figure, kept open for inspection instead of written."""
    figures = []
    monkeypatch.setattr(grids, "save_figure", lambda fig, path: figures.append((fig, path)))
    yield figures
    for fig, _ in figures:
        grids.plt.close(fig)


def test_equal_images_curves_mean_and_seed_band(captured):
    small = [make_point(64, s, 0, 30.0, steps=800, budget="equal_images", accuracy=0.6,
                        curve=[1.0 + s, 2.0 + s, 3.0 + s, 4.0 + 2 * s]) for s in range(3)]
    large = [make_point(512, s, 0, 20.0, accuracy=0.7, curve=[2.0, 5.0 + s]) for s in range(2)]
    plots.equal_images_curves([small, large], "/tmp/unused/equal_images.png")
    [(fig, path)] = captured
    assert path.endswith("equal_images.png")
    is_ax, acc_ax = fig.axes
    lines = is_ax.get_lines()
    assert [line.get_label() for line in lines] == ["batch 64 x 800 steps (seeds: 3)",
                                                    "batch 512 x 100 steps (seeds: 2)"]
    x, y = lines[0].get_data()
    assert list(x) == [200 * 128, 400 * 128, 600 * 128, 800 * 128]  # images seen
    assert list(y) == pytest.approx([2.0, 3.0, 4.0, 6.0])  # mean over seeds
    band = is_ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(1.0) and band[:, 1].max() == pytest.approx(8.0)
    assert list(lines[1].get_data()[1]) == pytest.approx([2.0, 5.5])
    acc_x, acc_y = acc_ax.get_lines()[0].get_data()
    assert list(acc_y) == pytest.approx([0.15, 0.3, 0.45, 0.6])


def test_plot_vs_batch_draws_the_table_rows(captured):
    points = [make_point(b, s, v + 0.2 * s, f, accuracy=0.5)
              for s in range(2) for b, v, f in ((16, 3.0, 80.0), (64, 4.0, 40.0))]
    rows = batch_table.summarise(points, 64)
    plots.plot_vs_batch(rows, "x.png")
    [(fig, _)] = captured
    x, y = fig.axes[0].get_lines()[0].get_data()
    assert list(x) == [16, 64] and list(y) == pytest.approx([3.1, 4.1])
    plots.plot_vs_batch([dict(rows[0], is_mean=None)], "y.png")  # nothing to draw
    assert len(captured) == 1


def test_curves_and_comparison_figures(tmp_path):
    root = str(tmp_path)
    for batch in (16, 64):
        fake_point(root, batch, 0, 4.0, 40.0, evals=3)
    points = records.load_points(root)
    plots.plot_curves(points, "images_seen", str(tmp_path / "c.png"), "images")
    plots.comparison(points, str(tmp_path / "cmp.png"))
    for name in ("c", "cmp"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
        assert (tmp_path / f"{name}.pdf").stat().st_size > 1000
    with np.load(points[0].samples_path) as z:
        assert z["comparison"].shape == (8, 32, 32, 1)
