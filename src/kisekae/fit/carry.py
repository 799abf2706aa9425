"""The per-frame correction with a memory: each frame starts from the previous frame's correction.

A per-frame push that sees only the current pose must guess, for a garment vertex that skinning left
inside the body, which surface it belongs outside of. In a bent knee, a hip crease or a crouch the nearest
surface changes from one frame to the next (thigh, then calf), and the push flips with it: the cloth
pops by centimetres between frames and single edges spike (measured in docs/fit.md). The previous frame
knows the answer: there the vertex was already outside, next to the surface it belongs to. So each
frame starts the surface push (:func:`kisekae.fit.surface.surface_runtime`) from

    start = skinned + keep * previous correction            (:func:`carry_start`)

where ``previous correction`` is the last frame's corrected minus skinned position of the same vertex (in
the body's space; the skinned position already follows the bones). ``keep`` < 1 lets a correction that
the body no longer needs fade (the cloth settles back onto the skin when a leg straightens), about a
tenth per frame by default (measured at 30 fps; at another frame rate the same fading in time is
``KEEP ** (30 / fps)`` per frame). The push, smoothing, stretch limit and maxPush cap then run as in the
stateless path, against the skinned positions.

An engine keeps one float3 buffer per garment vertex (the correction), reads it before the first push
pass and writes it after the last. In the HLSL core: ``KisekaeCarryStart`` (kisekae_surface.hlsl).

Where no previous frame exists (the first frame of a clip, a teleport, a single pose in ``kisekae check``),
the state warms up along the path from the rest pose (:func:`kisekae.avatar.contact_solve.pose_path`), in
steps of at most :data:`STEP_DEGREES` of any bone's rotation; between two frames farther apart than that
(clip frames sampled sparsely) the same in-between steps are taken. :class:`CarryState` holds the
corrections and the pose they belong to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import KisekaeError
from ..validate import as_points

#: Share of the previous frame's correction each frame starts from (a step of :data:`STEP_DEGREES` or one frame).
KEEP = 0.9
#: Largest change of any bone's local rotation between two steps of the correction, degrees (warm-up and
#: sparse frames are split into in-between steps no coarser than this).
STEP_DEGREES = 6.0


def check_keep(keep) -> float:
    """``keep`` as a float in [0, 1], or :class:`KisekaeError` naming it."""
    if isinstance(keep, bool) or not isinstance(keep, (int, float, np.floating, np.integer)):
        raise KisekaeError(f"must be a number in [0, 1], got {keep!r}", "carry keep")
    keep = float(keep)
    if not (np.isfinite(keep) and 0.0 <= keep <= 1.0):
        raise KisekaeError(f"must lie in [0, 1], got {keep!r}", "carry keep")
    return keep


def carry_start(skinned, previous_correction, keep: float = KEEP) -> np.ndarray:
    """Where this frame's first push starts: ``skinned + keep * previous_correction``.

    Parameters
    ----------
    skinned : (N, 3) the garment skinned in this frame, metres
    previous_correction : (N, 3) last frame's corrected minus skinned positions, metres (zeros: no memory)
    keep : float in [0, 1]

    Returns
    -------
    (N, 3) float64 metres
    """
    x = as_points(skinned, "skinned garment").astype(np.float64)
    c = as_points(previous_correction, "previous correction").astype(np.float64)
    if c.shape != x.shape:
        raise KisekaeError(f"{len(c)} corrections for {len(x)} garment vertices", "previous correction")
    return x + check_keep(keep) * c


@dataclass
class CarryState:
    """What the per-frame correction remembers between frames (an engine's correction buffers).

    Attributes
    ----------
    keep : float, :data:`KEEP`
    step_degrees : float, :data:`STEP_DEGREES`
    skin_matrices : (B, 4, 4) of the last frame, or None before the first
    corrections : dict garment name -> (N, 3) float64 corrected minus skinned positions of the last frame
    """

    keep: float = KEEP
    step_degrees: float = STEP_DEGREES
    skin_matrices: np.ndarray | None = None
    corrections: dict = field(default_factory=dict)

    def check(self) -> None:
        check_keep(self.keep)
        if not (np.isfinite(self.step_degrees) and self.step_degrees > 0):
            raise KisekaeError(f"must be a positive angle, got {self.step_degrees!r}", "carry step degrees")

    def reset(self) -> None:
        """Forget the last frame (a teleport or a cut): the next frame warms up from the rest pose."""
        self.skin_matrices = None
        self.corrections.clear()

    def path(self, skeleton, skin_matrices) -> list:
        """Skinning matrices of the steps from the remembered pose (or the rest pose) to this one, this one last."""
        from ..avatar.contact_solve import path_steps, pose_path

        if self.skin_matrices is not None and np.array_equal(self.skin_matrices, skin_matrices):
            return [np.asarray(skin_matrices, dtype=np.float64)]
        n = path_steps(skeleton, skin_matrices, self.skin_matrices, self.step_degrees)
        return pose_path(skeleton, skin_matrices, n, start=self.skin_matrices)

    def correction(self, name: str, n: int) -> np.ndarray:
        """The remembered correction of garment ``name`` ((n, 3) zeros if there is none)."""
        c = self.corrections.get(name)
        return np.zeros((n, 3)) if c is None or c.shape != (n, 3) else c
