"""Shape of a corrected garment against the garment as skinning left it.

A fix that leaves no vertex inside the body but flips faces, folds the cloth or stretches edges
looks worse than no fix. These numbers judge the cloth by its shape, beside the clipping numbers:

- ``flipped_faces``: faces whose normal turned more than 90° from the skinned garment's, not
  counting faces that skinning itself had already turned more than 90° from the rest pose; those
  are reported apart as ``skinning_turned_faces``.
- ``folded_pairs``: pairs of faces sharing an edge whose normals disagree by more than 90°.
- ``strain_p99``, ``strain_max``: percentile 99 and maximum over edges of ``|l / l_skinned - 1|``.
- ``self_crossings``: garment edges through the same garment's faces that they do not touch.
- ``zero_area_faces``: faces with less than :data:`ZERO_AREA_M2` of area.
"""

from __future__ import annotations

import numpy as np

from ..geom.bvh import build_bvh, refit
from ..geom.crossings import edge_crossings
from ..geom.edges import face_edges
from ..geom.normals import face_normals
from ..validate import as_faces, as_points

#: Faces below this area (m²) count as zero-area (a 0.1 mm × 0.1 mm triangle has 5e-9 m²).
ZERO_AREA_M2 = 1e-10


def face_adjacency(faces) -> np.ndarray:
    """(P, 2) int pairs of faces that share an edge (each interior edge once).

    Parameters
    ----------
    faces : (F, 3) int triangles; seam duplicates should be welded beforehand
    """
    f = np.asarray(faces, dtype=np.int64)
    e = np.sort(face_edges(f), axis=1)
    owner = np.repeat(np.arange(len(f)), f.shape[1])
    order = np.lexsort((e[:, 1], e[:, 0]))
    e, owner = e[order], owner[order]
    same = np.all(e[1:] == e[:-1], axis=1)
    return np.stack([owner[:-1][same], owner[1:][same]], axis=1)


def folded_pairs(vertices, faces, adjacency=None) -> int:
    """Number of edge-adjacent face pairs whose normals point more than 90° apart."""
    n = face_normals(vertices, faces)
    adj = face_adjacency(faces) if adjacency is None else adjacency
    return int((np.einsum("ij,ij->i", n[adj[:, 0]], n[adj[:, 1]]) < 0).sum())


def self_crossings(vertices, faces, edges) -> int:
    """Edges ``(E, 2)`` of a mesh that pass through one of its own faces they do not touch."""
    v = np.asarray(vertices, dtype=np.float64)
    bvh = build_bvh(v, faces)
    return int(edge_crossings(v, edges, bvh, refit(bvh, v, faces), exclude_incident=faces).sum())


def zero_area_faces(vertices, faces) -> int:
    """Faces of ``vertices`` (N, 3, metres) with less than :data:`ZERO_AREA_M2` of area: collapsed to a line or a
    point (shards)."""
    return int((0.5 * np.linalg.norm(face_normals(vertices, faces, unit=False), axis=1) < ZERO_AREA_M2).sum())


def flips_and_strain(rest, skinned, after, faces, edges):
    """Per-face flips and per-edge strain of corrected positions against the skinned ones.

    Parameters
    ----------
    rest, skinned, after : (N, 3) float positions, metres
    faces : (F, 3) int triangles (welded); edges : (E, 2) int

    Returns
    -------
    flipped : (F,) bool, normal turned more than 90° from the skinned one, not counting ``turned``
    turned : (F,) bool, faces skinning had already turned more than 90° from the rest pose
    strain : (E',) float, ``|l / l_skinned − 1|`` over edges of non-zero skinned length
    """
    rest, skinned, after = (np.asarray(v, dtype=np.float64) for v in (rest, skinned, after))
    e = np.asarray(edges, dtype=np.int64)
    n_rest, n_skin, n_after = (face_normals(v, faces) for v in (rest, skinned, after))
    turned = np.einsum("ij,ij->i", n_skin, n_rest) < 0
    flipped = (np.einsum("ij,ij->i", n_after, n_skin) < 0) & ~turned
    l0 = np.linalg.norm(skinned[e[:, 0]] - skinned[e[:, 1]], axis=1)
    l1 = np.linalg.norm(after[e[:, 0]] - after[e[:, 1]], axis=1)
    keep = l0 > 0
    return flipped, turned, np.abs(l1[keep] / l0[keep] - 1.0)


def shape_stats(rest, skinned, after, faces, edges, weld=None) -> dict:
    """Shape fields of a corrected garment relative to its skinned shape.

    Parameters
    ----------
    rest, skinned, after : (N, 3) rest, skinned and corrected positions, metres
    faces : (F, 3) int triangles
    edges : (E, 2) int unique edges (quad sides where the mesh has quads)
    weld : (N,) int or None, representative vertex of each position (seam duplicates)

    Returns
    -------
    dict with ``flipped_faces``, ``skinning_turned_faces``, ``folded_pairs``, ``strain_p99``,
    ``strain_max``, ``self_crossings`` and ``zero_area_faces``.
    """
    rest = as_points(rest, "garment rest vertices")
    skinned = as_points(skinned, "skinned garment vertices")
    after = as_points(after, "corrected garment vertices")
    if not (len(rest) == len(skinned) == len(after)):
        raise ValueError(f"vertex counts differ: rest {len(rest)}, skinned {len(skinned)}, after {len(after)}")
    f = as_faces(faces, len(rest), "garment faces")
    if weld is not None:
        f = np.asarray(weld)[f]
    e = np.asarray(edges, dtype=np.int64)
    flipped, turned, strain = flips_and_strain(rest, skinned, after, f, e)
    return {
        "flipped_faces": int(flipped.sum()),
        "skinning_turned_faces": int(turned.sum()),
        "folded_pairs": folded_pairs(after, f),
        "strain_p99": float(np.percentile(strain, 99)) if len(strain) else 0.0,
        "strain_max": float(strain.max()) if len(strain) else 0.0,
        "self_crossings": self_crossings(after, f, e),
        "zero_area_faces": zero_area_faces(after, f),
    }
