"""Sample grids: a class grid per run and the batch-size comparison figure (the 'orange' rows)."""
from __future__ import annotations

import os

import numpy as np

from common import files
from experiments.pyplot import plt


def to_uint8(images: np.ndarray) -> np.ndarray:
    """[-1, 1] floats -> uint8 pixels (how the images are stored and shown)."""
    return np.clip(np.round((np.asarray(images) + 1.0) * 127.5), 0, 255).astype(np.uint8)


def _show(ax, image: np.ndarray):
    image = to_uint8(image) if image.dtype != np.uint8 else image
    if image.shape[-1] == 1:
        ax.imshow(image[..., 0], cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    else:
        ax.imshow(image, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])


def save_figure(fig, path: str, formats: tuple[str, ...] = (".png", ".pdf")):
    """Writes PATH in each format (atomically; default .png and .pdf), closes the figure."""
    base, _ = os.path.splitext(path)
    for ext in formats:
        # no creation date in a PDF: the same figure gives the same bytes (reports re-render)
        metadata = {"CreationDate": None} if ext == ".pdf" else None
        with files.atomic_writer(base + ext, "wb", suffix=ext) as f:
            fig.savefig(f, format=ext[1:], dpi=150, bbox_inches="tight", metadata=metadata)
    plt.close(fig)


def image_rows(rows: list[np.ndarray], row_labels: list[str], path: str, title: str = "",
               col_labels: list[str] | None = None,
               formats: tuple[str, ...] = (".png", ".pdf")) -> None:
    """Saves a grid with one labelled row per entry of `rows` (each [n, H, W, C])."""
    save_figure(grid_figure(rows, row_labels, title, col_labels), path, formats)


def grid_figure(rows: list[np.ndarray], row_labels: list[str], title: str = "",
                col_labels: list[str] | None = None):
    """The figure of `image_rows`, for showing (e.g. in a notebook) rather than saving."""
    n_rows, n_cols = len(rows), max(len(r) for r in rows)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(1.1 * n_cols + 1.2, 1.1 * n_rows + 0.5),
                             squeeze=False)
    for i, row in enumerate(rows):
        for j in range(n_cols):
            ax = axes[i, j]
            if j < len(row):
                _show(ax, row[j])
            else:
                ax.axis("off")
        axes[i, 0].set_ylabel(row_labels[i], rotation=0, ha="right", va="center", fontsize=9)
    if col_labels:
        for j, label in enumerate(col_labels[:n_cols]):
            axes[0, j].set_title(label, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def save_class_grid(grid: np.ndarray, path: str, title: str = "",
                    class_names: list[str] | None = None) -> None:
    """grid: [classes, per_class, H, W, C]; one row per class."""
    names = class_names or [f"class {c}" for c in range(len(grid))]
    image_rows(list(grid), names[:len(grid)], path, title)


def comparison_figure(rows_by_batch: dict[int, np.ndarray], path: str, class_name: str) -> None:
    """One row per global batch size, same latents, same class: the article's orange figure."""
    sizes = sorted(rows_by_batch)
    image_rows([rows_by_batch[b] for b in sizes], [f"batch {b}" for b in sizes], path,
               title=f"Samples of class '{class_name}' by global batch size (same z per column)")
