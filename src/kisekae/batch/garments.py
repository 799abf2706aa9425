"""Garments from glTF/GLB files, put on another avatar by bone name.

A catalogue garment may live in its own ``.glb``/``.gltf`` file (for example one exported by
``kisekae`` with a fixed garment, or by an outfit maker for a base avatar). The file is read with
:func:`kisekae.io.gltf.load_gltf`; its garment keeps its vertices and weights, and its joints are
renamed onto the target body's skeleton. This is only meaningful when both skeletons share the
bind pose, so the rest matrices of every bone the garment uses must agree (translation within
``tolerance`` metres, rotation within ``1e-3``); otherwise the garment is refused with an error
naming the worst bone.
"""

from __future__ import annotations

import numpy as np

from ..avatar.avatar import Avatar, SkinnedMesh
from ..avatar.mesh import Mesh
from ..avatar.skinning import Skin
from ..errors import KisekaeError


def load_gltf_garment(path, avatar: Avatar, *, name: str, part: str | None = None,
                      tolerance: float = 1e-3) -> SkinnedMesh:
    """Read one garment of a glTF/GLB file and bind it to ``avatar``'s skeleton by bone name.

    Parameters
    ----------
    path : str or PathLike
        ``.glb`` or ``.gltf`` file.
    avatar : Avatar
        The body the garment is checked on (not modified).
    name : str
        Name of the returned garment.
    part : str, optional
        The garment's part name in the file; default: the file's only garment.
    tolerance : float
        Largest allowed difference of bone rest positions between the two skeletons, metres.

    Returns
    -------
    SkinnedMesh
        Vertices (N, 3) float32 in metres (the file's bind pose), skin indices into
        ``avatar.skeleton``.

    Raises
    ------
    KisekaeError
        Unreadable file, no or ambiguous garment, bones missing from the body, or rest poses that
        differ by more than ``tolerance``.
    """
    from ..io.gltf import load_gltf

    if not np.isfinite(tolerance) or tolerance <= 0:
        raise KisekaeError(f"tolerance must be > 0 metres, got {tolerance!r}", "tolerance")
    src = load_gltf(path).avatar
    if part is None:
        if len(src.garments) != 1:
            raise KisekaeError(f"the file has {len(src.garments)} garments ({', '.join(src.garments) or 'none'}); "
                               "name one with mesh = \"...\" in the catalogue", path)
        part = next(iter(src.garments))
    if part not in src.garments:
        raise KisekaeError(f"no garment {part!r} in the file (garments: {', '.join(src.garments) or 'none'})", path)
    g = src.garments[part]
    target = avatar.skeleton
    remap = np.array([target.index.get(n, -1) for n in src.skeleton.names], dtype=np.int64)
    live = g.skin.weights > 0
    used = np.unique(g.skin.indices[live])
    missing = [src.skeleton.names[i] for i in used if remap[i] < 0]
    if missing:
        raise KisekaeError(f"{len(missing)} bone(s) of the garment are not in the body's skeleton "
                           f"(e.g. {', '.join(missing[:4])})", path)
    a = np.asarray(src.skeleton.rest, np.float64)[used]
    b = np.asarray(target.rest, np.float64)[remap[used]]
    dt = np.linalg.norm(a[:, :3, 3] - b[:, :3, 3], axis=1)
    dr = np.abs(a[:, :3, :3] - b[:, :3, :3]).max(axis=(1, 2))
    if len(used) and (dt.max() > tolerance or dr.max() > 1e-3):
        worst = int(np.argmax(dt / tolerance + dr / 1e-3))
        raise KisekaeError(f"the garment's skeleton is not in the body's rest pose (bone "
                           f"{src.skeleton.names[used[worst]]!r} differs by {dt[worst] * 1e3:.1f} mm, "
                           f"rotation {dr[worst]:.2g})", path)
    indices = np.where(live, remap[g.skin.indices], 0).astype(np.int32)
    m = g.mesh
    mesh = Mesh(m.vertices, m.faces, m.quads, dict(m.uvs), m.uv_faces, m.uv_coords, name)
    return SkinnedMesh(mesh, Skin(indices, g.skin.weights))
