"""The report's figures (PNG bytes), drawn from ``results.json``: success per policy with Wilson
intervals (overall, nominal, shifted; like the study's Fig. 2(a)) and the training loss curves."""

from __future__ import annotations

import io
from typing import Any

SUBSETS = ("overall", "nominal", "shifted")


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def success_figure(s: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(s["policies"])
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(names) + 2), 3.6))
    width = 0.8 / len(SUBSETS)
    x = np.arange(len(names))
    for j, sub in enumerate(SUBSETS):
        rates = [s["policies"][n][sub] for n in names]
        y = np.array([100 * r["rate"] if r else np.nan for r in rates])
        lo = np.array([100 * (r["rate"] - r["low"]) if r else 0 for r in rates])
        hi = np.array([100 * (r["high"] - r["rate"]) if r else 0 for r in rates])
        ax.bar(x + (j - 1) * width, y, width, yerr=[lo, hi], capsize=3, label=sub)
    ax.set_xticks(x, names, rotation=15)
    ax.set_ylim(0, 100)
    ax.set_ylabel("success on the lab (%)")
    ax.set_title(f"{s['profile']['name']} profile, lab {s['profile']['lab']}: success with 95% Wilson intervals")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def training_figure(s: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    for name, t in s["training"].items():
        h = t["history"]
        ax.plot([r["step"] for r in h], [r["loss"] for r in h], label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("flow-matching loss")
    ax.set_yscale("log")
    ax.set_title("training loss (mean over each log window)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)
