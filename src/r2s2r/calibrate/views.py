"""Checkerboard capture sessions for camera calibration: plan safe views, move, capture, detect.

Head stereo pair: the board is a paddle on the right flange (a machined fixture, so its pose on the
flange ``T_flange_board`` is known by design); the right arm shows it to both head cameras in
varied, tilted poses. Wrist fisheyes: the board lies on a fixture in the world and the arm carrying
the camera looks at it from varied poses.

Views are planned on the robot's own model (drawing layout, factory kinematics, spec-sheet
cameras): a candidate is kept when its IK converges, the lab's safety filter (run on that same
model) would pass every pose of the joint-space move to it, and the spec-sheet camera would see
every corner of the board unoccluded by the arms. What was measured is recorded per view: the
flange pose ``T_base_flange`` (factory forward kinematics at the encoder readings after the arm
settled, in the moving arm's base frame) and the detected corners (px).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from r2s2r.behavior.ik import ArmIK, IKConfig
from r2s2r.calibrate.cell_model import (
    SIDES,
    CellModel,
    go_to,
    in_image,
    mount_target,
    project_points,
    rest_pose,
    start_at_rest,
    unmount_target,
)
from r2s2r.calibrate.corners import detect_corners
from r2s2r.errors import R2S2RError
from r2s2r.geometry import axis_angle_quat, inv_T, look_at_cv, make_T, mat_to_quat, quat_to_mat
from r2s2r.lab.real_cell import RealCell
from r2s2r.world import rizon
from r2s2r.world.params import CameraParams
from r2s2r.world.scene import TargetMount
from r2s2r.world.target import Checkerboard

_HAND_BOX = ((-0.01, 0.20), (-0.07, 0.07), (0.0, 0.05))  # flange-frame box around the hand, m


@dataclass(frozen=True)
class ViewConfig:
    """How a capture session plans its views. Lengths in m, angles in deg, pixels full-resolution."""

    n_views: int = 20  # board poses per session
    min_views: int = 8  # fewer planned (or detected) views than this is an unusable capture
    max_candidates: int = 600  # sampled poses before giving up
    head_board: Checkerboard = Checkerboard(cols=9, rows=6, square=0.045, border=0.03)
    head_offset: float = 0.30  # the paddle's board centre lies this far along flange +x
    head_depth: tuple[float, float] = (0.75, 1.05)  # board centre distance from head_left
    tilt_deg: tuple[float, float] = (20.0, 40.0)  # board normal away from the camera direction
    heading_deg: float = 50.0  # paddle heading within this of pointing away from the base
    wrist_board: Checkerboard = Checkerboard(cols=8, rows=5, square=0.035)
    # board centre of each wrist camera's fixture, world frame (lying flat, printed face up)
    right_fixture: tuple[float, float, float] = (0.45, -0.30, 0.80)
    left_fixture: tuple[float, float, float] = (0.42, 0.12, 0.80)
    wrist_distance: tuple[float, float] = (0.25, 0.40)  # camera to board centre
    wrist_elevation_deg: tuple[float, float] = (45.0, 88.0)  # camera direction above the board plane
    wrist_offaxis_deg: float = 40.0  # board centre up to this far off the optical axis
    wrist_roll_deg: float = 60.0  # camera roll about the vertical within this of the rest pose's
    wrist_max_theta_deg: float = 62.0  # every corner within this angle of the fisheye's axis
    # a pinhole view's grid that a smooth cubic map misses by more than this is corrupted (fisheye
    # grids bend too much for a cubic: their fits drop bad corners instead)
    max_grid_fit_px: float = 1.0
    margin_px: float = 25.0  # corners this far inside the image (and off the hand)
    occlusion_margin: float = 0.03  # clearance between camera rays and arm links
    max_joint_travel: float = 2.0  # rad from the rest pose: no view needs the arm swung around
    settle: float = 0.25  # s held before reading encoders and capturing
    speed_fraction: float = 0.6  # peak joint speed of a move / rated joint speed
    min_move: float = 1.0  # s
    keep_images: int = 6  # images of the first detected views kept per camera (photometric calibration)


@dataclass(frozen=True, eq=False)
class BoardViews:
    """One camera's detected board views.

    ``T_base_flange`` (N, 4, 4): the moving arm's flange in its own base frame (factory FK at the
    encoders), per detected view. ``T_flange_board``: the board's known pose on that flange, or
    None for a board on a world fixture (its pose is then unknown). ``corners`` (N, K, 2) px in
    ``board.object_points()`` order. ``view_ids`` index the session's captures (pairs stereo views).
    ``images`` (M, H, W, 3) uint8: the captures of the first M detected views (M <= ``keep_images``),
    for the photometric calibration.
    """

    camera: str
    kind: str  # "pinhole" or "fisheye"
    size: tuple[int, int]  # (width, height), px
    board: Checkerboard
    side: str  # the arm that moved
    T_flange_board: np.ndarray | None
    q: np.ndarray  # (N, 7) the moving arm's encoder readings at each view, rad
    T_base_flange: np.ndarray
    corners: np.ndarray
    view_ids: np.ndarray
    n_captured: int
    images: np.ndarray | None = None


def board_centre_T(board: Checkerboard) -> np.ndarray:
    """T_board_centre: the board's centre, axes as the board's."""
    return make_T(((board.cols - 1) * board.square / 2, (board.rows - 1) * board.square / 2, 0.0), (1, 0, 0, 0))


def head_mount_T(config: ViewConfig) -> np.ndarray:
    """T_flange_board of the head paddle: face toward flange -z (away from the palm), board rows
    along flange +x, centre ``head_offset`` ahead of the flange, 2 mm behind the flange plane."""
    R = np.column_stack([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # board x, y, z in the flange
    T_flange_centre = np.eye(4)
    T_flange_centre[:3, :3] = R
    T_flange_centre[:3, 3] = (config.head_offset, 0.0, -0.002)
    return T_flange_centre @ inv_T(board_centre_T(config.head_board))


def _rot_perp(n: np.ndarray, angle: float, rng: np.random.Generator) -> np.ndarray:
    """Rotation by ``angle`` about a random axis perpendicular to ``n``."""
    a = np.cross(n, rng.normal(size=3))
    return quat_to_mat(axis_angle_quat(a / np.linalg.norm(a), angle))


def _plan(candidate, config: ViewConfig, rng: np.random.Generator, what: str) -> list:
    """Up to ``n_views`` accepted candidates (joint targets, expected corners per camera)."""
    plans = []
    for _ in range(config.max_candidates):
        if len(plans) >= config.n_views:
            break
        found = candidate(rng)
        if found is not None:
            plans.append(found)
    if len(plans) < config.min_views:
        raise R2S2RError(
            f"{what}: only {len(plans)} of {config.max_candidates} sampled board poses were reachable, safe and "
            f"showed the whole board unoccluded; at least {config.min_views} are needed (is the target mounted "
            "where this camera can see it?)"
        )
    return plans


def _execute(
    lab: RealCell, model: CellModel, side: str, plans: list, cams: list[CameraParams], board: Checkerboard
) -> tuple[np.ndarray, list[list[np.ndarray | None]], list[list[np.ndarray]]]:
    """Visit the planned poses (nearest next, by move time) and capture every camera at each.

    Returns the encoder readings (N, 7) at each capture, the detected corners per view and camera,
    and per camera the images of its first ``keep_images`` detected views.
    """
    vmax, fit_px = np.asarray(rizon.VELOCITY_LIMIT), model.config.max_grid_fit_px
    q_now, left = lab.read_encoders(side)[:7], list(range(len(plans)))
    qs, corners, kept = [], [], [[] for _ in cams]
    while left:
        k = min(left, key=lambda i: float(np.max(np.abs(plans[i][0] - q_now) / vmax)))
        left.remove(k)
        q, expected = plans[k]
        go_to(lab, model, side, q)
        lab.hold(model.config.settle)
        q_now = lab.read_encoders(side)[:7]
        qs.append(q_now)
        found = []
        for j, (c, e) in enumerate(zip(cams, expected, strict=True)):
            image = lab.capture(c.name)
            found.append(detect_corners(image, board, e, fit_px if c.lens.kind == "pinhole" else None))
            if found[-1] is not None and len(kept[j]) < model.config.keep_images:
                kept[j].append(image)
        corners.append(found)
    return np.asarray(qs).reshape(-1, 7), corners, kept


def _board_views(
    model: CellModel,
    cam: CameraParams,
    j: int,
    board: Checkerboard,
    side: str,
    T_fb: np.ndarray | None,
    qs,
    corners,
    kept,
) -> BoardViews:
    ids = np.array([i for i, c in enumerate(corners) if c[j] is not None], dtype=int)
    k = board.cols * board.rows
    return BoardViews(
        camera=cam.name,
        kind=cam.lens.kind,
        size=(cam.lens.width, cam.lens.height),
        board=board,
        side=side,
        T_flange_board=T_fb,
        q=qs[ids],
        T_base_flange=np.array([model.kin[side].forward(q) for q in qs[ids]]).reshape(-1, 4, 4),
        corners=np.asarray([corners[i][j] for i in ids]).reshape(-1, k, 2),
        view_ids=ids,
        n_captured=len(corners),
        images=np.asarray(kept[j], np.uint8) if kept[j] else None,
    )


def capture_head_views(lab: RealCell, config: ViewConfig, rng: np.random.Generator) -> tuple[BoardViews, ...]:
    """Show the flange-mounted board to both head cameras; (head_left, head_right) views."""
    model = CellModel(lab, config)
    board = config.head_board
    cams = [model.nominal.camera("head_left"), model.nominal.camera("head_right")]
    T_fb = head_mount_T(config)
    ik = ArmIK.from_kinematics(model.kin["right"], T_fb @ board_centre_T(board), IKConfig(max_iters=200, dt=0.1))
    pts = (inv_T(board_centre_T(board)) @ np.c_[board.object_points(), np.ones(board.cols * board.rows)].T).T
    eyes = [model.camera_T(c)[:3, 3] for c in cams]
    T_wc0, lens0 = model.camera_T(cams[0]), cams[0].lens
    home = np.asarray(rizon.HOME_Q)
    q_all = {s: lab.read_encoders(s) for s in SIDES}
    base_xy = model.T_world_base["right"][:2, 3]

    def candidate(rng: np.random.Generator):
        # a board centre seen at a random pixel of head_left at a random depth, facing the pair,
        # tilted; the paddle points roughly away from the arm's base (the arm stays behind it)
        px = [[rng.uniform(0.15, 0.85) * lens0.width, rng.uniform(0.15, 0.85) * lens0.height]]
        centre = (T_wc0 @ np.r_[lens0.unproject(np.array(px))[0] * rng.uniform(*config.head_depth), 1.0])[:3]
        n = np.mean(eyes, axis=0) - centre
        n /= np.linalg.norm(n)
        radial = np.r_[centre[:2] - base_xy, 0.0]
        heading = quat_to_mat(axis_angle_quat((0, 0, 1), np.radians(rng.uniform(-1, 1) * config.heading_deg)))
        y = heading @ (radial / np.linalg.norm(radial))
        y -= n * (y @ n)
        y /= np.linalg.norm(y)
        T_wc = np.eye(4)
        T_wc[:3, :3] = _rot_perp(n, np.radians(rng.uniform(*config.tilt_deg)), rng) @ np.column_stack(
            [np.cross(y, n), y, n]
        )
        T_wc[:3, 3] = centre
        corners_w = (T_wc @ pts.T).T[:, :3]
        expected = [project_points(c, model.camera_T(c), corners_w) for c in cams]
        if not all(
            in_image(e, (c.lens.width, c.lens.height), config.margin_px) for e, c in zip(expected, cams, strict=True)
        ):
            return None
        sol = ik.solve(inv_T(model.T_world_base["right"]) @ T_wc, home)
        if not sol.ok or np.abs(sol.q - home).max() > config.max_joint_travel:
            return None
        q = sol.q
        caps = model.capsules({"right": q, "left": q_all["left"][:7]}, hands=("left",))
        if any(model.occluded(e, corners_w, caps) for e in eyes) or not model.path_is_safe("right", home, q, q_all):
            return None
        return q, expected

    start_at_rest(lab, model, "right")
    plans = _plan(candidate, config, rng, "head_left/head_right")
    mount_target(lab, TargetMount(board, "right_flange", tuple(T_fb[:3, 3]), tuple(mat_to_quat(T_fb[:3, :3]))))
    try:
        qs, corners, kept = _execute(lab, model, "right", plans, cams, board)
    finally:
        unmount_target(lab, model, "right")
    return tuple(_board_views(model, c, j, board, "right", T_fb, qs, corners, kept) for j, c in enumerate(cams))


def capture_wrist_views(lab: RealCell, side: str, config: ViewConfig, rng: np.random.Generator) -> BoardViews:
    """Look at the fixture board with arm ``side``'s wrist camera from varied poses."""
    model = CellModel(lab, config)
    board = config.wrist_board
    cam = model.nominal.camera(f"{side}_wrist")
    ik = ArmIK.from_kinematics(model.kin[side], make_T(cam.pose.pos, cam.pose.quat), IKConfig(max_iters=200, dt=0.1))
    centre = np.asarray(config.right_fixture if side == "right" else config.left_fixture, float)
    T_world_board = make_T(centre, (1, 0, 0, 0)) @ inv_T(board_centre_T(board))
    corners_w = (T_world_board @ np.c_[board.object_points(), np.ones(board.cols * board.rows)].T).T[:, :3]
    rest = rest_pose(side)
    hull = _hand_hull(cam)
    q_all = {s: lab.read_encoders(s) for s in SIDES}
    other = tuple(s for s in SIDES if s != side)
    # image "up" at the rest pose, horizontal: views roll around it (short moves, near-rest IK)
    up = -model.camera_T(cam, side, rest)[:3, 1]
    roll0 = float(np.arctan2(up[1], up[0]))

    def candidate(rng: np.random.Generator):
        # the camera on a sphere around the board, the board's centre up to wrist_offaxis_deg
        # off its optical axis, any roll
        el, az = np.radians(rng.uniform(*config.wrist_elevation_deg)), rng.uniform(0, 2 * np.pi)
        eye = centre + rng.uniform(*config.wrist_distance) * np.array(
            [np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)]
        )
        roll = roll0 + np.radians(rng.uniform(-1, 1) * config.wrist_roll_deg)
        T_wc = np.eye(4)
        T_wc[:3, :3] = quat_to_mat(look_at_cv(eye, centre, up=(np.cos(roll), np.sin(roll), 0.0)))
        T_wc[:3, :3] = T_wc[:3, :3] @ _rot_perp(
            np.array([0.0, 0, 1]), np.radians(rng.uniform(0, 1) * config.wrist_offaxis_deg), rng
        )
        T_wc[:3, 3] = eye
        expected = project_points(cam, T_wc, corners_w)
        if not in_image(expected, (cam.lens.width, cam.lens.height), config.margin_px):
            return None
        theta = np.degrees(np.arccos(np.clip(cam.lens.unproject(expected)[:, 2], -1, 1)))
        if theta.max() > config.wrist_max_theta_deg:
            return None
        if max(cv2.pointPolygonTest(hull, (float(u), float(v)), True) for u, v in expected) > -config.margin_px:
            return None
        sol = ik.solve(inv_T(model.T_world_base[side]) @ T_wc, rest)
        if not sol.ok or np.abs(sol.q - rest).max() > config.max_joint_travel:
            return None
        q = sol.q
        # the wrist's own last links sit beside the camera (its hand is the image region ``hull``)
        q7 = {s: (q if s == side else q_all[s][:7]) for s in SIDES}
        caps = model.capsules(q7, hands=other, skip=((side, 5), (side, 6)))
        if model.occluded(eye, corners_w, caps) or not model.path_is_safe(side, rest, q, q_all):
            return None
        return q, [expected]

    start_at_rest(lab, model, side)
    plans = _plan(candidate, config, rng, cam.name)
    mount_target(lab, TargetMount(board, "world", tuple(T_world_board[:3, 3]), (1.0, 0.0, 0.0, 0.0)))
    try:
        qs, corners, kept = _execute(lab, model, side, plans, [cam], board)
    finally:
        unmount_target(lab, model, side)
    return _board_views(model, cam, 0, board, side, None, qs, corners, kept)


def _hand_hull(cam: CameraParams) -> np.ndarray:
    """Convex hull (px, float32 contour) of the hand as the spec-sheet wrist camera sees it."""
    axes = [np.linspace(lo, hi, 6) for lo, hi in _HAND_BOX]
    box = np.stack(np.meshgrid(*axes), axis=-1).reshape(-1, 3)
    px = project_points(cam, make_T(cam.pose.pos, cam.pose.quat), box)
    px = px[np.isfinite(px).all(axis=1)]
    return cv2.convexHull(px.astype(np.float32))
