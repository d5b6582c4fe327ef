"""``PolicyConfig``: the architecture and the flow-matching settings of a chunk policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r.data.features import DEFAULT_CAMERAS
from r2s2r.data.stats import MODES
from r2s2r.errors import ConfigError, UnknownNameError


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"PolicyConfig.{name}: expected a positive integer, got {value!r}")


@dataclass(frozen=True)
class PolicyConfig:
    """A flow-matching transformer over camera tokens and a proprio token.

    Each camera has its own convolutional encoder: ``len(conv_channels)`` stride-2 3x3 convolutions
    (GroupNorm, GELU), then average pooling to a ``token_grid`` x ``token_grid`` map whose cells
    become tokens. With the proprio token they pass ``encoder_layers`` transformer layers: the
    observation tokens. The action head is a transformer decoder (``decoder_layers``) over the
    ``action_horizon`` noisy action tokens, each conditioned on the flow time, cross-attending to
    the observation tokens; it predicts the flow velocity.

    Flow matching (t=0 is data, t=1 is noise): x_t = (1 - t) a + t e, velocity target e - a; training
    times t = t_min + (1 - t_min) Beta(time_alpha, time_beta) as in openpi (more weight near noise);
    sampling integrates ``euler_steps`` Euler steps from t=1 to t=0, starting from the noise draw
    times ``noise_scale`` (1: the trained distribution; 0: every chunk from the noise's mean, a
    deterministic policy that does not hop between modes from one re-plan to the next, measured
    better in closed loop, docs/benchmarks.md). Actions and proprio are
    normalised with the training data's statistics (``normalization``: "zscore" or "quantile").

    ``past_frame`` = d > 0 adds the observation of d control steps earlier (clamped at the episode's
    start): its camera tokens (the same encoders) and proprio token, each plus a learned "past"
    embedding. A single frame does not show the belt's speed (0.05-0.10 m/s in nominal trials), which
    decides where the object will be when the hand arrives; two frames do. ``past_proprio = False``
    leaves the earlier joint positions out (the earlier images stay): with them the policy can read
    its own arm's velocity and continue it, the "copycat" shortcut of behaviour cloning from
    observation histories (Wen et al. 2020), instead of following the object. ``past_cameras`` names
    the cameras whose earlier frame is read (None: every camera): a camera that never moves (the head,
    the static left arm's wrist) shows the belt's motion; the moving right wrist's earlier frame shows
    mostly the arm's own motion and costs as much as the others (each earlier frame is one more pass
    of its encoder and ``token_grid**2`` more tokens through the transformer).

    ``object_state`` = w > 0 adds an auxiliary loss: a small head predicts the object's state
    (``r2s2r.data.object_state``: position in the belt frame, yaw, belt speed, which object) from the
    mean of the observation tokens, trained on the frames whose dataset labels it, weighted w against
    the flow loss. The policy still acts from its cameras and joints alone; the head makes its
    encoder find the object.

    ``delta_arm``: the chunk's arm targets are predicted as offsets from the arm's joint positions
    at the observation, a[t + i] - q[t] (openpi's delta actions; the hand's stay absolute), and
    normalised with the statistics of those offsets over the training chunks. Absolute targets are
    normalised over the whole workspace (about +-1.5 rad per joint), so a given error of the network
    is several times larger in radians than on offsets, which span a chunk's motion (a few tenths).
    ``Policy`` still returns absolute targets.
    """

    cameras: tuple[str, ...] = DEFAULT_CAMERAS
    image_size: int = 64  # px, square RGB frames the encoders take
    proprio_dim: int = 27  # joint positions, rad (7 arm + 20 hand)
    action_dim: int = 27  # absolute joint targets, rad
    action_horizon: int = 16  # H: actions per chunk (at the control rate)
    execute_steps: int = 8  # k <= H executed per chunk (receding horizon)
    conv_channels: tuple[int, ...] = (16, 32, 64)
    token_grid: int = 4  # tokens per camera: token_grid ** 2
    width: int = 128  # transformer model dimension
    heads: int = 4
    encoder_layers: int = 2
    decoder_layers: int = 2
    mlp_ratio: int = 4
    euler_steps: int = 10  # K
    noise_scale: float = 1.0  # the sampler's initial noise is N(0, noise_scale^2 I); 0: deterministic
    time_alpha: float = 1.5
    time_beta: float = 1.0
    time_min: float = 0.001
    normalization: str = "quantile"
    past_frame: int = 0
    past_proprio: bool = True  # with past_frame: also the earlier joint positions
    past_cameras: tuple[str, ...] | None = None  # with past_frame: the cameras whose earlier frame is read (None: all)
    keypoints: int = 0  # K spatial-softmax keypoints per camera, one more token (see CameraEncoder)
    object_state: float = 0.0  # weight of the auxiliary object-state loss (0: none)
    delta_arm: bool = False  # arm targets predicted relative to the current arm joints

    def __post_init__(self) -> None:
        # no cameras: a proprio-only policy (the privileged-state diagnostic puts the object's state there)
        if not isinstance(self.cameras, tuple) or not all(isinstance(c, str) for c in self.cameras):
            raise ConfigError(f"PolicyConfig.cameras: expected a tuple of names, got {self.cameras!r}")
        if len(set(self.cameras)) != len(self.cameras):
            raise ConfigError(f"PolicyConfig.cameras: duplicate camera in {self.cameras!r}")
        for name in (
            "image_size",
            "proprio_dim",
            "action_dim",
            "action_horizon",
            "execute_steps",
            "token_grid",
            "width",
            "heads",
            "encoder_layers",
            "decoder_layers",
            "mlp_ratio",
            "euler_steps",
        ):
            _positive(name, getattr(self, name))
        if isinstance(self.past_frame, bool) or not isinstance(self.past_frame, int) or self.past_frame < 0:
            raise ConfigError(f"PolicyConfig.past_frame: expected an integer >= 0, got {self.past_frame!r}")
        if self.past_cameras is not None:
            if not isinstance(self.past_cameras, tuple) or not set(self.past_cameras) <= set(self.cameras):
                raise ConfigError(
                    f"PolicyConfig.past_cameras: expected a tuple of cameras among {self.cameras!r} (or None for all), "
                    f"got {self.past_cameras!r}"
                )
            if len(set(self.past_cameras)) != len(self.past_cameras):
                raise ConfigError(f"PolicyConfig.past_cameras: duplicate camera in {self.past_cameras!r}")
            if not self.past_frame:
                raise ConfigError("PolicyConfig.past_cameras: set only with past_frame > 0 (an earlier frame to read)")
        if not isinstance(self.delta_arm, bool):
            raise ConfigError(f"PolicyConfig.delta_arm: expected true or false, got {self.delta_arm!r}")
        if not isinstance(self.past_proprio, bool):
            raise ConfigError(f"PolicyConfig.past_proprio: expected true or false, got {self.past_proprio!r}")
        if isinstance(self.keypoints, bool) or not isinstance(self.keypoints, int) or self.keypoints < 0:
            raise ConfigError(f"PolicyConfig.keypoints: expected an integer >= 0, got {self.keypoints!r}")
        if isinstance(self.object_state, bool) or not isinstance(self.object_state, int | float):
            raise ConfigError(f"PolicyConfig.object_state: expected a weight >= 0, got {self.object_state!r}")
        if not self.object_state >= 0 or self.object_state == float("inf"):
            raise ConfigError(f"PolicyConfig.object_state: expected a finite weight >= 0, got {self.object_state!r}")
        if self.object_state and not self.cameras:
            raise ConfigError("PolicyConfig.object_state: the object-state head needs cameras to see the object")
        if isinstance(self.noise_scale, bool) or not isinstance(self.noise_scale, int | float):
            raise ConfigError(f"PolicyConfig.noise_scale: expected a number >= 0, got {self.noise_scale!r}")
        if not 0 <= self.noise_scale < float("inf"):
            raise ConfigError(f"PolicyConfig.noise_scale: expected a finite number >= 0, got {self.noise_scale!r}")
        if self.execute_steps > self.action_horizon:
            raise ConfigError(
                f"PolicyConfig.execute_steps: {self.execute_steps} exceeds action_horizon {self.action_horizon}"
            )
        if not self.conv_channels:
            raise ConfigError("PolicyConfig.conv_channels: expected at least one convolution")
        for c in self.conv_channels:
            _positive("conv_channels", c)
        feature = self.image_size // 2 ** len(self.conv_channels)
        if feature < self.token_grid:
            raise ConfigError(
                f"PolicyConfig: {len(self.conv_channels)} stride-2 convolutions leave a {feature}x{feature} map of "
                f"a {self.image_size} px image, smaller than token_grid {self.token_grid}"
            )
        if self.width % self.heads:
            raise ConfigError(f"PolicyConfig.width {self.width} must be divisible by heads {self.heads}")
        if self.width % 2:
            raise ConfigError(f"PolicyConfig.width {self.width} must be even (sinusoidal time embedding)")
        if not (self.time_alpha > 0 and self.time_beta > 0):
            raise ConfigError(
                f"PolicyConfig: time_alpha, time_beta must be > 0, got {self.time_alpha}, {self.time_beta}"
            )
        if not 0 <= self.time_min < 1:
            raise ConfigError(f"PolicyConfig.time_min: expected a value in [0, 1), got {self.time_min}")
        if self.normalization not in MODES:
            raise UnknownNameError("normalisation mode", self.normalization, MODES)

    @property
    def past_images(self) -> tuple[str, ...]:
        """The cameras whose earlier frame the policy reads, in ``cameras`` order (none without past_frame)."""
        if not self.past_frame:
            return ()
        return self.cameras if self.past_cameras is None else tuple(c for c in self.cameras if c in self.past_cameras)

    @property
    def tokens_per_camera(self) -> int:
        return self.token_grid**2 + (1 if self.keypoints else 0)
