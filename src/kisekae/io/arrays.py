"""A mesh file as plain arrays, for tools that take any triangle mesh (the wound bake, for one).

``.obj`` (metres, through :mod:`kisekae.io.obj`) or ``.npz`` (arrays ``vertices``, ``faces`` and
optional ``uv0``, ``uv1``, ``parts``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from .obj import obj_to_mesh, read_obj


def load_mesh(path) -> dict:
    """Read a mesh for the command line: ``.obj`` (metres) or ``.npz`` (arrays ``vertices``, ``faces``,
    optional ``uv0``, ``uv1``, ``parts``).

    Returns
    -------
    dict with ``vertices`` (N, 3) float64, ``faces`` (F, 3) int32 and optional ``uv0``/``uv1``/``parts``.
    """
    p = Path(path)
    if not p.exists():
        raise KisekaeError("file not found", str(p))
    if p.suffix.lower() == ".npz":
        with np.load(p) as z:
            if "vertices" not in z or "faces" not in z:
                raise KisekaeError("an .npz mesh needs arrays 'vertices' and 'faces'", str(p))
            return {k: z[k] for k in ("vertices", "faces", "uv0", "uv1", "parts") if k in z}
    if p.suffix.lower() == ".obj":
        return _load_obj(p)
    raise KisekaeError("unsupported mesh format (use .obj or .npz)", str(p))


def _load_obj(p: Path) -> dict:
    """OBJ through :mod:`kisekae.io.obj` (same parser and errors as the rest of kisekae), metres as stored.

    Quads are split like :func:`kisekae.avatar.mesh.triangulate_quads`. When every face has UVs,
    vertices are split at UV seams (one vertex per distinct position/UV pair), so ``uv0`` is exact on
    both sides of a seam, which the UV correspondence needs.
    """
    obj = read_obj(p)
    if not obj.polygons:
        raise KisekaeError("no faces", str(p))
    mesh, _src = obj_to_mesh(obj, name=p.stem)
    faces = np.asarray(mesh.faces, dtype=np.int64)
    verts = np.asarray(mesh.vertices, dtype=np.float64)
    if mesh.uv_faces is None or mesh.uv_coords is None:
        return {"vertices": verts, "faces": faces.astype(np.int32)}
    uvf = np.asarray(mesh.uv_faces, dtype=np.int64)
    pairs = np.stack([faces.ravel(), uvf.ravel()], 1)
    keys, inverse = np.unique(pairs, axis=0, return_inverse=True)
    return {"vertices": verts[keys[:, 0]], "faces": inverse.reshape(-1, 3).astype(np.int32),
            "uv0": np.asarray(mesh.uv_coords, dtype=np.float64)[keys[:, 1]]}
