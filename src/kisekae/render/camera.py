"""Pinhole cameras framed on a character, and the named views and resolutions the checks use.

Frame: glTF (metres, +Y up, right-handed, the character faces +Z). A camera looks from ``eye``
at ``target``; matrices act on column vectors and follow OpenGL clip conventions (NDC depth -1..1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import KisekaeError
from ..validate import as_points, positive

#: Named output sizes, ``(width, height)`` in pixels.
RESOLUTIONS: dict[str, tuple[int, int]] = {
    "720p": (1280, 720),
    "1080p": (1920, 1080),
    "1440p": (2560, 1440),
    "2160p": (3840, 2160),
    "square1024": (1024, 1024),
}

#: Full-body views: azimuth about +Y in degrees, measured from +Z (the character's front) toward +X
#: (the character's left), and elevation in degrees above the horizon.
BODY_VIEWS: dict[str, tuple[float, float]] = {
    "front": (0.0, 5.0),
    "three_quarter": (45.0, 8.0),
    "side": (90.0, 5.0),
    "three_quarter_back": (135.0, 8.0),
    "back": (180.0, 5.0),
    "side_right": (270.0, 5.0),
}

#: Close-ups: (azimuth, elevation, landmark height as a fraction of the bounding-box height when no
#: landmark is given, radius of the framed region around the landmarks in metres, half-width of the
#: framed region without landmarks in metres). Fractions measured on the built-in avatar's joints:
#: knees (calf heads) 0.27, hips (thigh heads) 0.52, waist (spine_02 head) 0.60, armpits (upper-arm heads) 0.81;
#: the armpits are seen from the front-left and a little from below, between the arm and the chest.
CLOSE_UPS: dict[str, tuple[float, float, float, float, float]] = {
    "knees": (25.0, 5.0, 0.27, 0.16, 0.30),
    "hips": (25.0, 5.0, 0.52, 0.17, 0.28),
    "waist": (25.0, 5.0, 0.60, 0.15, 0.25),
    "armpits": (55.0, -20.0, 0.78, 0.10, 0.30),
}

#: The close-ups of the poke-through check: with the six body views, the nine views of the seed note's verification.
POKE_CLOSE_UPS: tuple[str, ...] = ("knees", "hips", "waist")

#: The views of the poke-through check and the reports that pick a worst view, in report order.
VIEWS: tuple[str, ...] = tuple(BODY_VIEWS) + POKE_CLOSE_UPS

#: Every view :func:`named_camera` knows: :data:`VIEWS` and the close-ups outside the poke-through check.
ALL_VIEWS: tuple[str, ...] = VIEWS + tuple(v for v in CLOSE_UPS if v not in POKE_CLOSE_UPS)


@dataclass(frozen=True)
class Camera:
    """A perspective camera.

    Parameters
    ----------
    eye, target : (3,) float
        Camera position and the point it looks at, metres.
    up : (3,) float
        Approximate up direction (default +Y).
    fov_y : float
        Vertical field of view, degrees.
    near, far : float
        Clip distances, metres (``0 < near < far``).
    name : str
        Label used in reports and file names.
    """

    eye: tuple
    target: tuple
    up: tuple = (0.0, 1.0, 0.0)
    fov_y: float = 30.0
    near: float = 0.05
    far: float = 20.0
    name: str = "camera"

    def __post_init__(self):
        for field in ("eye", "target", "up"):
            v = np.asarray(getattr(self, field), dtype=np.float64)
            if v.shape != (3,) or not np.all(np.isfinite(v)):
                raise KisekaeError(f"expected 3 finite numbers, got {getattr(self, field)!r}", f"camera.{field}")
            object.__setattr__(self, field, tuple(float(x) for x in v))
        if np.linalg.norm(np.subtract(self.target, self.eye)) < 1e-9:
            raise KisekaeError("eye and target coincide", "camera")
        if not (0.0 < float(self.fov_y) < 179.0):
            raise KisekaeError(f"must be in (0, 179) degrees, got {self.fov_y!r}", "camera.fov_y")
        if not (0.0 < float(self.near) < float(self.far)) or not np.isfinite(self.far):
            raise KisekaeError(f"need 0 < near < far, got near={self.near!r}, far={self.far!r}", "camera")

    @property
    def forward(self) -> np.ndarray:
        """Unit viewing direction (eye toward target), (3,) float64."""
        f = np.subtract(self.target, self.eye)
        return f / np.linalg.norm(f)

    def basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Right, up and forward unit vectors of the camera, each (3,) float64."""
        f = self.forward
        r = np.cross(f, self.up)
        if np.linalg.norm(r) < 1e-9:  # looking straight along `up`: pick any perpendicular
            r = np.cross(f, [0.0, 0.0, 1.0] if abs(f[2]) < 0.9 else [1.0, 0.0, 0.0])
        r /= np.linalg.norm(r)
        u = np.cross(r, f)
        return r, u, f

    def view_matrix(self) -> np.ndarray:
        """World-to-camera matrix, (4,4) float64 (camera looks down its -Z, OpenGL style)."""
        r, u, f = self.basis()
        m = np.eye(4)
        m[0, :3], m[1, :3], m[2, :3] = r, u, -f
        m[:3, 3] = -m[:3, :3] @ np.asarray(self.eye)
        return m

    def projection_matrix(self, aspect: float) -> np.ndarray:
        """OpenGL perspective projection for ``aspect = width / height``, (4,4) float64."""
        aspect = positive(aspect, "aspect")
        t = 1.0 / np.tan(np.radians(self.fov_y) / 2.0)
        n, f = float(self.near), float(self.far)
        p = np.zeros((4, 4))
        p[0, 0] = t / aspect
        p[1, 1] = t
        p[2, 2] = (f + n) / (n - f)
        p[2, 3] = 2.0 * f * n / (n - f)
        p[3, 2] = -1.0
        return p

    def view_projection(self, aspect: float) -> np.ndarray:
        """``projection @ view``, (4,4) float64."""
        return self.projection_matrix(aspect) @ self.view_matrix()


def resolution(value) -> tuple[int, int]:
    """Parse a resolution: a name from :data:`RESOLUTIONS`, ``"WxH"``, or a ``(width, height)`` pair."""
    if isinstance(value, str):
        if value in RESOLUTIONS:
            return RESOLUTIONS[value]
        parts = value.lower().split("x")
        try:
            w, h = (int(p) for p in parts)
        except ValueError:
            raise KisekaeError(
                f"unknown resolution {value!r}: use WxH or one of {', '.join(RESOLUTIONS)}", "resolution"
            ) from None
    else:
        try:
            w, h = (int(v) for v in value)
        except (TypeError, ValueError):
            raise KisekaeError(f"expected (width, height), got {value!r}", "resolution") from None
    if not (1 <= w <= 16384 and 1 <= h <= 16384):
        raise KisekaeError(f"width and height must be in 1..16384, got {w}x{h}", "resolution")
    return w, h


def _direction(azimuth_deg: float, elevation_deg: float) -> np.ndarray:
    """Unit vector from the target toward the eye."""
    a, e = np.radians(azimuth_deg), np.radians(elevation_deg)
    return np.array([np.sin(a) * np.cos(e), np.sin(e), np.cos(a) * np.cos(e)])


def fit_camera(points, target, direction, aspect: float, *, fov_y: float = 30.0, margin: float = 0.06,
               name: str = "camera") -> Camera:
    """Place a camera on the ray ``target + d * direction`` so that every point is in view.

    Parameters
    ----------
    points : (N,3) float
        Points that must be visible, metres.
    target : (3,) float
        Point the camera looks at (the image centre), metres.
    direction : (3,) float
        Direction from the target toward the camera (normalised here).
    aspect : float
        Image ``width / height``.
    fov_y : float, default 30
        Vertical field of view, degrees.
    margin : float, default 0.06
        Fraction of the half-image left free around the points.

    Returns
    -------
    Camera
        The closest camera (smallest distance) that keeps all points inside the shrunk frustum.
    """
    pts = as_points(points, "points")
    if len(pts) == 0:
        raise KisekaeError("no points to frame", "points")
    aspect = positive(aspect, "aspect")
    target = np.asarray(target, dtype=np.float64)
    d = np.asarray(direction, dtype=np.float64)
    d = d / np.linalg.norm(d)
    probe = Camera(eye=tuple(target + d), target=tuple(target), fov_y=fov_y)
    r, u, f = probe.basis()
    ty = np.tan(np.radians(fov_y) / 2.0) * (1.0 - margin)
    tx = ty * aspect
    rel = pts - target
    x, y, z = rel @ r, rel @ u, rel @ f
    # depth of a point from an eye at distance dist: dist + z; need |x| <= tx*depth, |y| <= ty*depth
    dist = float(max(np.max(np.abs(x) / tx - z), np.max(np.abs(y) / ty - z)))
    extent = float(np.max(np.linalg.norm(rel, axis=1)))
    dist = max(dist, 1e-3)
    near = max(1e-3, 0.5 * (dist - extent)) if dist > extent else 1e-3 * max(dist, 1.0)
    far = dist + extent + 1.0
    return Camera(eye=tuple(target + dist * d), target=tuple(target), fov_y=fov_y, near=near, far=far, name=name)


def named_camera(view: str, points, aspect: float, *, landmarks: dict | None = None, fov_y: float = 30.0,
                 margin: float = 0.06) -> Camera:
    """A camera for one of :data:`VIEWS`, framed on ``points`` (usually the posed body).

    Parameters
    ----------
    view : str
        ``front``, ``three_quarter``, ``side`` (from the character's left, +X), ``three_quarter_back``,
        ``back``, ``side_right``, or a close-up ``knees``, ``hips``, ``waist``, ``armpits`` (:data:`ALL_VIEWS`).
    points : (N,3) float
        Body points (metres) to frame; for close-ups, the points within the framed height band.
    aspect : float
        Image ``width / height``.
    landmarks : dict, optional
        Close-up anchors ``{"knees": (3,) or (K,3), "hips": ..., "waist": ...}`` in metres, e.g. posed
        joint positions; the camera frames the points near any anchor, so it follows the pose.
        Without one, it frames a height band at a fixed fraction of the bounding-box height (see
        :data:`CLOSE_UPS`), right for a standing body.

    Returns
    -------
    Camera
    """
    pts = as_points(points, "points")
    if view in BODY_VIEWS:
        az, el = BODY_VIEWS[view]
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        return fit_camera(pts, (lo + hi) / 2.0, _direction(az, el), aspect, fov_y=fov_y, margin=margin, name=view)
    if view in CLOSE_UPS:
        az, el, frac, radius, half_w = CLOSE_UPS[view]
        if landmarks is not None and view in landmarks:
            marks = as_points(np.reshape(landmarks[view], (-1, 3)), f"landmarks[{view!r}]")
            d = np.min(np.linalg.norm(pts[:, None, :] - marks[None, :, :], axis=2), axis=1)
            region = pts[d <= radius]
            where = f"within {radius} m of the {view} landmarks"
        else:
            lo, hi = pts.min(axis=0), pts.max(axis=0)
            c = np.array([(lo[0] + hi[0]) / 2.0, lo[1] + frac * (hi[1] - lo[1]), (lo[2] + hi[2]) / 2.0])
            region = pts[(np.abs(pts[:, 1] - c[1]) <= radius) & (np.abs(pts[:, 0] - c[0]) <= half_w)]
            where = f"within {radius} m of the {view} height {c[1]:.3f} m"
        if len(region) == 0:
            raise KisekaeError(f"no points {where}", "points")
        blo, bhi = region.min(axis=0), region.max(axis=0)
        box = np.array([[x, y, z] for x in (blo[0], bhi[0]) for y in (blo[1], bhi[1]) for z in (blo[2], bhi[2])])
        return fit_camera(box, (blo + bhi) / 2.0, _direction(az, el), aspect, fov_y=fov_y, margin=margin, name=view)
    raise KisekaeError(f"unknown view {view!r}; known: {', '.join(ALL_VIEWS)}", "view")


def with_name(camera: Camera, name: str) -> Camera:
    """A copy of ``camera`` with another label."""
    return replace(camera, name=name)
