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
from r2s2r.errors import R2S2RError
from r2s2r.geometry import axis_angle_quat, inv_T, look_at_cv, make_T, mat_to_quat, quat_to_mat
from r2s2r.lab.real_cell import RealCell
from r2s2r.lab.safety import SafetyFilter
from r2s2r.world import rizon
from r2s2r.world.engine import LEFT_HOLD_Q
from r2s2r.world.hand import hand_open_pose
from r2s2r.world.params import ArmParams, CameraParams, WorldParams
from r2s2r.world.scene import LINK_RADIUS, TargetMount
from r2s2r.world.target import Checkerboard

SIDES = ("right", "left")
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


@dataclass(frozen=True, eq=False)
class BoardViews:
    """One camera's detected board views.

    ``T_base_flange`` (N, 4, 4): the moving arm's flange in its own base frame (factory FK at the
    encoders), per detected view. ``T_flange_board``: the board's known pose on that flange, or
    None for a board on a world fixture (its pose is then unknown). ``corners`` (N, K, 2) px in
    ``board.object_points()`` order. ``view_ids`` index the session's captures (pairs stereo views).
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


def detect_corners(
    image: np.ndarray,
    board: Checkerboard,
    expected: np.ndarray | None = None,
    max_fit_px: float | None = None,
    max_offset_px: float = 60.0,
) -> np.ndarray | None:
    """Sub-pixel inner corners (K, 2) in ``board.object_points()`` order, or None if not found, or
    if a smooth (cubic) map of the grid misses a corner by more than ``max_fit_px``: a corner pulled
    off the grid by a partly hidden square or clutter in its refinement window.

    ``expected`` (K, 2) predicted corners resolve which outer corner OpenCV's grid starts from, and
    reject a grid whose median corner lies over ``max_offset_px`` from them or whose size is off.
    """
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    size = (board.cols, board.rows)
    flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE  # (FAST_CHECK misses dim boards)
    found, corners = cv2.findChessboardCorners(gray, size, flags=flags)
    if not found:  # an arm's shadow across the board: equalise locally, then the sector-based detector
        found, corners = cv2.findChessboardCorners(cv2.createCLAHE(2.0, (8, 8)).apply(gray), size, flags=flags)
    if not found:
        sb = cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_EXHAUSTIVE | cv2.CALIB_CB_ACCURACY
        found, corners = cv2.findChessboardCornersSB(gray, size, flags=sb)
    if not found:
        return None
    pts = corners.reshape(-1, 2)
    grid = pts.reshape(board.rows, board.cols, 2)
    spacing = min(
        np.linalg.norm(np.diff(grid, axis=0), axis=2).min(), np.linalg.norm(np.diff(grid, axis=1), axis=2).min()
    )
    win = int(np.clip(0.3 * spacing, 2, 5))
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 50, 1e-3)
    pts = cv2.cornerSubPix(gray, pts.reshape(-1, 1, 2).astype(np.float32), (win, win), (-1, -1), criteria)
    pts = pts.reshape(-1, 2).astype(np.float64)
    if max_fit_px is not None and _grid_fit_residual(pts, board) > max_fit_px:
        return None
    if expected is not None:  # OpenCV may start the grid at any outer corner, mirrored or not
        grid = pts.reshape(board.rows, board.cols, 2)
        orders = [grid, grid[::-1, ::-1], grid[::-1], grid[:, ::-1]]
        pts = min(orders, key=lambda g: float(np.nanmean(np.linalg.norm(g.reshape(-1, 2) - expected, axis=1))))
        pts = pts.reshape(-1, 2).copy()
        # a grid far from where the board should be, or of another size, is some other pattern
        # (the belt's texture is a checkerboard too)
        span = np.linalg.norm(np.ptp(pts, axis=0)) / np.linalg.norm(np.ptp(expected, axis=0))
        if np.median(np.linalg.norm(pts - expected, axis=1)) > max_offset_px or not 0.7 < span < 1.4:
            return None
    return pts


def _grid_fit_residual(pts: np.ndarray, board: Checkerboard) -> float:
    """Largest distance (px) of a corner from a cubic polynomial map (col, row) -> pixel fitted to all."""
    c, r = np.meshgrid(np.arange(board.cols) / board.cols, np.arange(board.rows) / board.rows)
    c, r = c.ravel(), r.ravel()
    A = np.stack([c**i * r**j for i in range(4) for j in range(4 - i)], axis=1)
    coef, *_ = np.linalg.lstsq(A, pts, rcond=None)
    return float(np.linalg.norm(A @ coef - pts, axis=1).max())


def _link_frames(kin, q: np.ndarray) -> list[np.ndarray]:
    """T_base_link_i (i = 1..7) then T_base_flange, on kinematics ``kin``."""
    T, frames = np.eye(4), []
    for i in range(rizon.N_JOINTS):
        T = T @ make_T(kin.link_pos[i], rizon.LINK_QUAT[i])
        T = T @ make_T((0, 0, 0), axis_angle_quat(rizon.JOINT_AXIS[i], q[i] + kin.joint_zero[i]))
        frames.append(T)
    return frames + [T @ make_T(kin.flange_pos, (1, 0, 0, 0))]


class _CellModel:
    """The robot's own model of the cell: nominal layout, factory kinematics, spec-sheet cameras."""

    def __init__(self, lab: RealCell, config: ViewConfig) -> None:
        self.config = config
        self.nominal = WorldParams.nominal()
        self.kin = {s: lab.factory_calibration(s) for s in SIDES}
        arms = {
            f"{s}_arm": ArmParams(
                base=getattr(self.nominal, f"{s}_arm").base,
                link_pos=self.kin[s].link_pos,
                flange_pos=self.kin[s].flange_pos,
                joint_zero=self.kin[s].joint_zero,
            )
            for s in SIDES
        }
        self.safety = SafetyFilter(self.nominal.replace(**arms))
        base = {s: getattr(self.nominal, f"{s}_arm").base for s in SIDES}
        self.T_world_base = {s: make_T(base[s].pos, base[s].quat) for s in SIDES}

    def camera_T(self, cam: CameraParams, side: str | None = None, q: np.ndarray | None = None) -> np.ndarray:
        """Spec-sheet T_world_camera (flange cameras at arm ``side``'s joints ``q``)."""
        T = make_T(cam.pose.pos, cam.pose.quat)
        if cam.parent == "world":
            return T
        return self.T_world_base[side] @ self.kin[side].forward(q) @ T

    def path_is_safe(self, side: str, qa: np.ndarray, qb: np.ndarray, q_all: dict[str, np.ndarray]) -> bool:
        """Would the safety filter pass every pose of the straight joint move ``qa`` -> ``qb``?"""
        other = {s: q_all[s] for s in SIDES if s != side}
        hand = hand_open_pose()
        n = max(2, int(np.ceil(np.abs(qb - qa).max() / 0.02)) + 1)
        for s in np.linspace(0.0, 1.0, n):
            q = np.concatenate([qa + s * (qb - qa), hand])
            before = sum(self.safety.counts.values())
            self.safety.filter(side, q, q, 1.0, other)
            if sum(self.safety.counts.values()) != before:
                return False
        return True

    def capsules(self, q7: dict[str, np.ndarray], hands: tuple[str, ...], skip: tuple = ()) -> np.ndarray:
        """(M, 4) sample points (world) along the arms' links and ``hands``, with their radius;
        ``skip`` lists (side, link index 0..6) pairs to leave out."""
        out = []
        for s in SIDES:
            frames = _link_frames(self.kin[s], q7[s])
            for i in range(rizon.N_JOINTS):
                if (s, i) in skip:
                    continue
                child = self.kin[s].link_pos[i + 1] if i + 1 < rizon.N_JOINTS else self.kin[s].flange_pos
                for t in np.linspace(0.0, 1.0, 8):
                    p = self.T_world_base[s] @ frames[i] @ np.r_[t * np.asarray(child), 1.0]
                    out.append([*p[:3], LINK_RADIUS[i]])
            if s in hands:
                for t in np.linspace(0.0, 0.18, 6):
                    p = self.T_world_base[s] @ frames[-1] @ np.array([t, 0.0, 0.025, 1.0])
                    out.append([*p[:3], 0.06])
        return np.asarray(out)

    def occluded(self, eye: np.ndarray, points: np.ndarray, capsules: np.ndarray) -> bool:
        """Does any capsule sample lie on a ray from ``eye`` to one of ``points`` (world)?"""
        d = points - eye  # (K, 3)
        x = capsules[:, :3] - eye  # (M, 3)
        t = np.clip((x @ d.T) / (d * d).sum(axis=1), 0.0, 1.0)  # (M, K)
        closest = t[..., None] * d[None]
        dist = np.linalg.norm(closest - x[:, None], axis=2)
        hit = (dist < capsules[:, 3:4] + self.config.occlusion_margin) & (t < 0.97)
        return bool(hit.any())


def _in_image(px: np.ndarray, size: tuple[int, int], margin: float) -> bool:
    w, h = size
    return bool(
        np.all(np.isfinite(px))
        and px[:, 0].min() >= margin
        and px[:, 1].min() >= margin
        and px[:, 0].max() <= w - 1 - margin
        and px[:, 1].max() <= h - 1 - margin
    )


def _project(cam: CameraParams, T_world_cam: np.ndarray, points_world: np.ndarray) -> np.ndarray:
    p = (inv_T(T_world_cam) @ np.c_[points_world, np.ones(len(points_world))].T).T[:, :3]
    return cam.lens.project(p)


def _move(lab: RealCell, model: _CellModel, side: str, q_from: np.ndarray, q_to: np.ndarray) -> None:
    cfg = model.config
    speed = np.abs(q_to - q_from) / (np.asarray(rizon.VELOCITY_LIMIT) * cfg.speed_fraction)
    # a full command with the open hand: after a target is (un)mounted the held hand command is
    # the encoder reading, which can sit a hair past a finger's joint stop
    duration = max(cfg.min_move, 1.875 * float(speed.max()))  # min-jerk peak speed: 1.875x the mean
    lab.move_to(side, np.concatenate([q_to, hand_open_pose()]), duration)


def _rest(side: str) -> np.ndarray:
    """Where each arm waits: the picking arm at home, the camera arm at its hold pose."""
    return np.asarray(rizon.HOME_Q if side == "right" else LEFT_HOLD_Q)


def _go(lab: RealCell, model: _CellModel, side: str, q_to: np.ndarray) -> None:
    """Move arm ``side`` to ``q_to``: directly if safe, otherwise by way of its rest pose (planning
    checked the move from rest to every view pose)."""
    q_all = {s: lab.read_encoders(s) for s in SIDES}
    q_now = q_all[side][:7]
    if not model.path_is_safe(side, q_now, q_to, q_all):
        _move(lab, model, side, q_now, _rest(side))
        q_now = _rest(side)
    _move(lab, model, side, q_now, q_to)


def _start(lab: RealCell, model: _CellModel, side: str) -> None:
    """Bring arm ``side`` to rest before a session, refusing if no safe straight move gets it there."""
    q_all = {s: lab.read_encoders(s) for s in SIDES}
    if not model.path_is_safe(side, q_all[side][:7], _rest(side), q_all):
        raise R2S2RError(
            f"{side} arm: no safe straight joint move from its current pose "
            f"{np.round(q_all[side][:7], 3).tolist()} to its rest pose; bring it to rest before calibrating"
        )
    _move(lab, model, side, q_all[side][:7], _rest(side))


def _unmount(lab: RealCell, model: _CellModel, side: str) -> None:
    """Back to rest, target off. A remount holds the arms where their encoders read: settle
    before it, re-command the rest pose after it."""
    _go(lab, model, side, _rest(side))
    lab.hold(2 * model.config.settle)
    _mount(lab, None)
    _go(lab, model, side, _rest(side))
    lab.hold(2 * model.config.settle)


def _mount(lab: RealCell, mount: TargetMount | None) -> None:
    """(Un)mount the target, then re-command both open hands: a remount holds each joint where its
    encoder reads, which for a finger resting on its stop can be a hair outside its range."""
    lab.mount_target(mount)
    for side in SIDES:
        q = lab.read_encoders(side)
        q[7:] = hand_open_pose()
        lab.execute_trajectory(side, np.array([0.01]), q[None])


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
    lab: RealCell, model: _CellModel, side: str, plans: list, cams: list[CameraParams], board: Checkerboard
) -> tuple[np.ndarray, list[list[np.ndarray | None]]]:
    """Visit the planned poses (nearest next, by move time) and capture every camera at each.

    Returns the encoder readings (N, 7) at each capture and the detected corners per view and camera.
    """
    vmax, fit_px = np.asarray(rizon.VELOCITY_LIMIT), model.config.max_grid_fit_px
    q_now, left = lab.read_encoders(side)[:7], list(range(len(plans)))
    qs, corners = [], []
    while left:
        k = min(left, key=lambda i: float(np.max(np.abs(plans[i][0] - q_now) / vmax)))
        left.remove(k)
        q, expected = plans[k]
        _go(lab, model, side, q)
        lab.hold(model.config.settle)
        q_now = lab.read_encoders(side)[:7]
        qs.append(q_now)
        corners.append(
            [
                detect_corners(lab.capture(c.name), board, e, fit_px if c.lens.kind == "pinhole" else None)
                for c, e in zip(cams, expected, strict=True)
            ]
        )
    return np.asarray(qs).reshape(-1, 7), corners


def _board_views(
    model: _CellModel, cam: CameraParams, j: int, board: Checkerboard, side: str, T_fb: np.ndarray | None, qs, corners
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
    )


def capture_head_views(lab: RealCell, config: ViewConfig, rng: np.random.Generator) -> tuple[BoardViews, ...]:
    """Show the flange-mounted board to both head cameras; (head_left, head_right) views."""
    model = _CellModel(lab, config)
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
        expected = [_project(c, model.camera_T(c), corners_w) for c in cams]
        if not all(
            _in_image(e, (c.lens.width, c.lens.height), config.margin_px) for e, c in zip(expected, cams, strict=True)
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

    _start(lab, model, "right")
    plans = _plan(candidate, config, rng, "head_left/head_right")
    _mount(lab, TargetMount(board, "right_flange", tuple(T_fb[:3, 3]), tuple(mat_to_quat(T_fb[:3, :3]))))
    try:
        qs, corners = _execute(lab, model, "right", plans, cams, board)
    finally:
        _unmount(lab, model, "right")
    return tuple(_board_views(model, c, j, board, "right", T_fb, qs, corners) for j, c in enumerate(cams))


def capture_wrist_views(lab: RealCell, side: str, config: ViewConfig, rng: np.random.Generator) -> BoardViews:
    """Look at the fixture board with arm ``side``'s wrist camera from varied poses."""
    model = _CellModel(lab, config)
    board = config.wrist_board
    cam = model.nominal.camera(f"{side}_wrist")
    ik = ArmIK.from_kinematics(model.kin[side], make_T(cam.pose.pos, cam.pose.quat), IKConfig(max_iters=200, dt=0.1))
    centre = np.asarray(config.right_fixture if side == "right" else config.left_fixture, float)
    T_world_board = make_T(centre, (1, 0, 0, 0)) @ inv_T(board_centre_T(board))
    corners_w = (T_world_board @ np.c_[board.object_points(), np.ones(board.cols * board.rows)].T).T[:, :3]
    rest = _rest(side)
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
        expected = _project(cam, T_wc, corners_w)
        if not _in_image(expected, (cam.lens.width, cam.lens.height), config.margin_px):
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

    _start(lab, model, side)
    plans = _plan(candidate, config, rng, cam.name)
    _mount(lab, TargetMount(board, "world", tuple(T_world_board[:3, 3]), (1.0, 0.0, 0.0, 0.0)))
    try:
        qs, corners = _execute(lab, model, side, plans, [cam], board)
    finally:
        _unmount(lab, model, side)
    return _board_views(model, cam, 0, board, side, None, qs, corners)


def _hand_hull(cam: CameraParams) -> np.ndarray:
    """Convex hull (px, float32 contour) of the hand as the spec-sheet wrist camera sees it."""
    axes = [np.linspace(lo, hi, 6) for lo, hi in _HAND_BOX]
    box = np.stack(np.meshgrid(*axes), axis=-1).reshape(-1, 3)
    px = _project(cam, make_T(cam.pose.pos, cam.pose.quat), box)
    px = px[np.isfinite(px).all(axis=1)]
    return cv2.convexHull(px.astype(np.float32))
