"""Writing a calibration to a folder: the grounded world, the report, a figure and the raw records.

``DIR/world.json`` (grounded WorldParams), ``DIR/ungrounded.json`` (the world the report compares
with), ``DIR/report.md`` + ``DIR/report.json`` (the mismatch report), ``DIR/scene.png`` (the held-out
scene: lab, grounded, ungrounded, per camera) and ``DIR/records/``: ``excitation.npz`` (every drive
run), ``views.npz`` (board views per camera: joints, flange poses, corners, kept images),
``scenes.npz`` (the photometric and the check scenes) and ``measurements.json`` (factory files,
probed fingertip centres, belt tracks, scale readings, stage times). Every file is written
atomically; the world file last, so a folder with ``world.json`` holds a complete calibration.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np

from r2s2r import atomic
from r2s2r.calibrate.photometric import SceneCapture, scene_engine
from r2s2r.calibrate.report import mismatch_report, report_markdown
from r2s2r.calibrate.run import Calibration
from r2s2r.world.params import WorldParams
from r2s2r.world.sheet import contact_sheet


def _npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic.write_bytes(path, buf.getvalue())


def _scene_arrays(prefix: str, scene: SceneCapture) -> dict[str, np.ndarray]:
    out = {f"{prefix}/{k}": v for k, v in scene.images.items()}
    out |= {f"{prefix}/q_{s}": q for s, q in scene.q.items()}
    return out


def _scene_figure(cal: Calibration, ungrounded: WorldParams) -> bytes:
    scene = cal.checks.scene
    columns = {"lab": {k: v[0] for k, v in scene.images.items()}}
    for name, world in (("grounded", cal.world), ("ungrounded", ungrounded)):
        eng = scene_engine(world, scene)
        try:
            columns[name] = {k: eng.render(k, None, None) for k in scene.images}
        finally:
            eng.close()
    return contact_sheet(columns, f"held-out scene ({scene.object_name}): {cal.lab} vs simulated worlds")


def write_calibration(cal: Calibration, ungrounded: WorldParams, out: Path) -> dict:
    """Write everything to ``out``; returns the mismatch report."""
    out = Path(out)
    rec = out / "records"
    rec.mkdir(parents=True, exist_ok=True)
    runs = cal.arm.runs
    _npz(
        rec / "excitation.npz",
        {f"run{i}/{k}": getattr(r, k) for i, r in enumerate(runs) for k in ("t", "q_cmd", "q", "hand_q")},
    )
    views = {}
    for v in cal.views.views:
        for k in ("q", "T_base_flange", "corners", "view_ids"):
            views[f"{v.camera}/{k}"] = getattr(v, k)
        if v.images is not None:
            views[f"{v.camera}/images"] = v.images
    _npz(rec / "views.npz", views)
    _npz(rec / "scenes.npz", _scene_arrays("photometric", cal.scene) | _scene_arrays("check", cal.checks.scene))
    measurements = {
        "lab": cal.lab,
        "factory": {s: dataclasses.asdict(k) for s, k in cal.factory.items()},
        "excitation_runs": [{"side": r.side, "joint": r.joint, "kind": r.kind} for r in runs],
        "probes": {
            p.name: {"labels": list(p.labels), "tips_m": [list(t) for t in p.tips]} for p in cal.registration.parts()
        },
        "belt": {
            name: {"commanded_speed": b.commanded_speed, "times": list(b.track.times), "pixels": list(b.track.pixels)}
            for name, b in (("fit", cal.belt), ("check", cal.checks.belt))
        },
        "masses_kg": {"fit": dict(cal.masses.masses), "check": dict(cal.checks.masses.masses)},
        "scenes": {
            name: {"object": s.object_name, "placement": list(s.placement)}
            for name, s in (("photometric", cal.scene), ("check", cal.checks.scene))
        },
        "seconds": cal.seconds,
    }
    atomic.write_json(rec / "measurements.json", measurements)
    report = mismatch_report(cal, ungrounded)
    atomic.write_json(out / "report.json", report)
    atomic.write_text(out / "report.md", report_markdown(report))
    atomic.write_bytes(out / "scene.png", _scene_figure(cal, ungrounded))
    ungrounded.save(out / "ungrounded.json")
    cal.world.save(out / "world.json")
    return report
