"""The grounding mismatch report: how far a simulated world is from the lab, per parameter group,
measured on the lab's own data (in the spirit of the study's Appendix A).

Every number compares a world's prediction with a lab measurement; the same measurements score the
ungrounded and the grounded world:

============ ======================================================================== ======
group        metric                                                                   unit
============ ======================================================================== ======
cameras      corner reprojection error on the calibration views, per camera (RMS)     px
registration probed fingertip distance from the world's conveyor/bin planes (RMS)     mm
arm          joint-tracking error replaying the excitation runs (RMS, 7 joints)       mrad
belt         belt speed error against a check track at another commanded speed        %
masses       largest mass error against a second weighing                             g
images       mean absolute error of renders of a held-out still scene, per camera     levels
image colour worst channel-mean error of the same renders, per camera                 %
blur         edge width error on held-out board views, per camera                     px
noise        sensor noise std error against the held-out scene's captures             levels
============ ======================================================================== ======

Lower is better everywhere. Camera reprojection, registration and tracking residuals of the
grounded world are in-sample (the fits saw those data); belt, masses, images, blur and noise are checked
on measurements the fits never saw.
"""

from __future__ import annotations

import math

import numpy as np

from r2s2r.calibrate.arm import tracking_rmse
from r2s2r.calibrate.cameras import reprojection_errors
from r2s2r.calibrate.photometric import image_mismatch, temporal_noise_std
from r2s2r.calibrate.registration import probe_residuals_mm
from r2s2r.calibrate.run import Calibration
from r2s2r.world.params import WorldParams

UNITS = {
    "cameras": "px",
    "registration": "mm",
    "arm": "mrad",
    "belt": "%",
    "masses": "g",
    "images": "levels",
    "image colour": "%",
    "blur": "px",
    "noise": "levels",
}


def _world_rows(world: WorldParams, cal: Calibration) -> dict[tuple[str, str], float]:
    rows: dict[tuple[str, str], float] = {}
    for cam, px in reprojection_errors(world, cal.views).items():
        rows[("cameras", cam)] = px
    for part, res in probe_residuals_mm(world, cal.registration).items():
        rows[("registration", part)] = float(np.sqrt(np.mean(res**2)))
    rows[("arm", "right arm")] = 1000 * tracking_rmse(world, cal.arm.runs)
    check = cal.checks.belt.speed_scale
    rows[("belt", "speed scale")] = 100 * abs(world.conveyor.speed_scale - check) / check
    rows[("masses", "all objects")] = 1000 * max(abs(world.object(n).mass - m) for n, m in cal.checks.masses.masses)
    for cam, m in image_mismatch(world, cal.checks.scene).items():
        rows[("images", cam)] = m["mae_levels"]
        rows[("image colour", cam)] = m["channel_mean_error_pct"]
    for c in cal.photometry.cameras:
        blur = world.camera(c.name).effects.blur_sigma
        rows[("blur", c.name)] = abs(math.hypot(c.check_sigma_sim, blur) - c.check_sigma_lab)
        lab_noise = temporal_noise_std(*cal.checks.scene.images[c.name])
        rows[("noise", c.name)] = abs(world.camera(c.name).effects.noise_std - lab_noise)
    return rows


def mismatch_report(cal: Calibration, ungrounded: WorldParams) -> dict:
    """Rows ``{group, item, unit, ungrounded, grounded}`` and per group whether the grounded world
    is closer to the lab on every item, plus the calibration's stage times and fit diagnostics."""
    ung, gro = _world_rows(ungrounded, cal), _world_rows(cal.world, cal)
    rows = [
        {"group": g, "item": i, "unit": UNITS[g], "ungrounded": ung[(g, i)], "grounded": gro[(g, i)]} for (g, i) in gro
    ]
    groups = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r["grounded"] < r["ungrounded"])
    photo = cal.photometry
    return {
        "lab": cal.lab,
        "rows": rows,
        "grounded_closer": {g: all(v) for g, v in groups.items()},
        "seconds": cal.seconds,
        "world_hash": {"grounded": cal.world.content_hash(), "ungrounded": ungrounded.content_hash()},
        "diagnostics": {
            "stereo_disagreement_mm": 1000 * cal.cameras.stereo.disagreement_m,
            "belt_speed_scale": cal.belt.speed_scale,
            "belt_check_speed_scale": cal.checks.belt.speed_scale,
            "photometric_fit_rms_levels": photo.fit_rms,
            "photometric_evaluations": photo.evaluations,
            "edge_sigma_lab_px": {c.name: c.edge_sigma_lab for c in photo.cameras},
            "edge_sigma_sim_px": {c.name: c.edge_sigma_sim for c in photo.cameras},
            "tracking_rmse_mrad": {"nominal": 1000 * cal.arm.rmse_nominal, "grounded": 1000 * cal.arm.rmse_grounded},
        },
    }


def report_markdown(report: dict) -> str:
    """The report as a markdown page: one table of every row, then a line per group."""
    lines = [
        f"# Grounding mismatch report: {report['lab']}",
        "",
        "Each row compares a world's prediction with a lab measurement (lower is better). Camera, "
        "registration and arm rows of the grounded world are in-sample; belt, masses, images, blur and "
        "noise are checked on measurements the fits never saw.",
        "",
        "| group | item | unit | ungrounded | grounded | grounded closer |",
        "| --- | --- | --- | ---: | ---: | :---: |",
    ]
    for r in report["rows"]:
        closer = "yes" if r["grounded"] < r["ungrounded"] else "**no**"
        lines.append(
            f"| {r['group']} | {r['item']} | {r['unit']} | {r['ungrounded']:.3g} | {r['grounded']:.3g} | {closer} |"
        )
    lines += ["", "## Per group", ""]
    for g, ok in report["grounded_closer"].items():
        lines.append(f"- {g}: grounded world {'closer on every item' if ok else 'NOT closer on every item'}")
    lines += ["", "## Stage times", ""]
    lines += [f"- {k}: {v:.1f} s" for k, v in report["seconds"].items()]
    d = report["diagnostics"]
    lines += [
        "",
        "## Diagnostics",
        "",
        f"- head stereo pair: stereoCalibrate vs robot-frame poses disagree by {d['stereo_disagreement_mm']:.2f} mm",
        f"- belt speed scale {d['belt_speed_scale']:.4f} (check track {d['belt_check_speed_scale']:.4f})",
        f"- photometric scene fit: {d['photometric_fit_rms_levels']:.2f} levels RMS after "
        f"{d['photometric_evaluations']} renders",
        f"- world hashes: grounded {report['world_hash']['grounded']}, ungrounded {report['world_hash']['ungrounded']}",
        "",
    ]
    return "\n".join(lines)
