"""Sample grids: the [-1, 1] -> uint8 conversion, one labelled row per entry, and figures that
re-render to the same bytes."""
import matplotlib.image
import numpy as np

from experiments import grids


def test_to_uint8_maps_the_model_range_onto_pixels_and_clips():
    images = np.array([-1.0, -0.5, 0.0, 0.999, 1.0, -3.0, 2.0])
    # (x + 1) * 127.5 rounded half to even: -0.5 -> 63.75 -> 64, 0 -> 127.5 -> 128
    np.testing.assert_array_equal(grids.to_uint8(images), [0, 64, 128, 255, 255, 0, 255])
    assert grids.to_uint8(images).dtype == np.uint8


def test_grid_has_one_labelled_row_per_entry_and_blank_cells_past_a_short_row():
    grey = np.linspace(-1, 1, 3 * 4 * 4).reshape(3, 4, 4, 1)
    rgb = np.zeros((2, 4, 4, 3), np.uint8) + np.uint8([10, 20, 30])
    fig = grids.grid_figure([grey, rgb], ["batch 64", "batch 512"], title="t",
                            col_labels=["a", "b", "c", "d"])
    try:
        axes = np.array(fig.axes).reshape(2, 3)
        assert [axes[i, 0].get_ylabel() for i in range(2)] == ["batch 64", "batch 512"]
        assert [ax.get_title() for ax in axes[0]] == ["a", "b", "c"]  # one per column only
        assert fig.get_suptitle() == "t"
        assert not axes[1, 2].axison and not axes[1, 2].images  # the short row's empty cell
        for j in range(3):  # grey floats are shown as the uint8 pixels stored on disk
            np.testing.assert_array_equal(axes[0, j].images[0].get_array(),
                                          grids.to_uint8(grey[j])[..., 0])
            assert axes[0, j].images[0].get_clim() == (0, 255)
        np.testing.assert_array_equal(axes[1, 0].images[0].get_array(), rgb[0])
    finally:
        grids.plt.close(fig)


def test_class_grid_is_written_as_png_and_reproducible_pdf(tmp_path):
    grid = np.stack([np.full((2, 8, 8, 1), v, np.float32) for v in (-1.0, 1.0)])
    path = str(tmp_path / "grid.png")
    grids.save_class_grid(grid, path, title="classes")
    pdf = (tmp_path / "grid.pdf").read_bytes()
    png = matplotlib.image.imread(path)
    assert png.ndim == 3 and png.shape[0] > 50 and png.shape[1] > 50
    assert not grids.plt.get_fignums()  # the figure was closed
    grids.save_class_grid(grid, path, title="classes")
    assert (tmp_path / "grid.pdf").read_bytes() == pdf  # no creation date inside
    grids.save_class_grid(grid, path, title="other")
    assert (tmp_path / "grid.pdf").read_bytes() != pdf


def test_comparison_figure_orders_rows_by_batch_size(tmp_path, monkeypatch):
    saved = []
    monkeypatch.setattr(grids, "save_figure", lambda fig, path, formats: saved.append(fig))
    rows = {512: np.ones((2, 4, 4, 1)), 64: -np.ones((2, 4, 4, 1))}
    grids.comparison_figure(rows, str(tmp_path / "cmp.png"), "Bag")
    [fig] = saved
    try:
        axes = np.array(fig.axes).reshape(2, 2)
        assert [axes[i, 0].get_ylabel() for i in range(2)] == ["batch 64", "batch 512"]
        assert np.all(axes[0, 0].images[0].get_array() == 0)  # batch 64's row: -1 -> black
        assert np.all(axes[1, 0].images[0].get_array() == 255)
        assert "'Bag'" in fig.get_suptitle()
    finally:
        grids.plt.close(fig)
