"""Contact sheets: every camera of a simulated cell and of the lab, side by side."""

from __future__ import annotations

import io

import numpy as np


def contact_sheet(columns: dict[str, dict[str, np.ndarray]], title: str, tile: float = 3.2) -> bytes:
    """PNG bytes of a grid: one row per camera, one column per source (e.g. ``sim``, ``lab``).

    ``columns[source][camera]`` is an (H, W, 3) uint8 image; missing images leave a blank cell.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sources = list(columns)
    cameras = list(dict.fromkeys(c for src in columns.values() for c in src))
    fig, axes = plt.subplots(
        len(cameras), len(sources), figsize=(tile * len(sources), tile * 0.8 * len(cameras)), squeeze=False
    )
    for i, cam in enumerate(cameras):
        for j, src in enumerate(sources):
            ax = axes[i][j]
            img = columns[src].get(cam)
            if img is not None:
                ax.imshow(img)
                h, w = img.shape[:2]
                ax.set_title(f"{src}: {cam} ({w}x{h})", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()
