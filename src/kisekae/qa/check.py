"""Run the penetration check over (pose, garment) pairs and format the results."""

from __future__ import annotations

import time

import numpy as np

from ..avatar.avatar import Avatar
from .penetration import BodyQuery, BodyTopology, penetration_stats
from .selfcontact import BodySelfContact, flipped_faces, inverted_mask
from .shape import shape_stats

#: The JSON fields of a check record, in table order.
RECORD_FIELDS = ("pose", "garment", "vertices", "inside_count", "inside_fraction", "max_depth_m", "p95_depth_m",
                 "edge_crossings", "flipped_faces", "skinning_turned_faces", "folded_pairs", "strain_p99", "strain_max",
                 "self_crossings", "zero_area_faces")


def body_topology(avatar: Avatar) -> BodyTopology:
    """The body's BVH topology, built once per avatar and cached on it."""
    topo = getattr(avatar, "_kisekae_body_topology", None)
    if topo is None:
        topo = BodyTopology.from_mesh(avatar.body.mesh.vertices, avatar.body.mesh.faces)
        avatar._kisekae_body_topology = topo
    return topo


def body_self_contact(avatar: Avatar) -> BodySelfContact:
    """The body's self-contact measure (rest winding, volume), built once per avatar and cached on it."""
    sc = getattr(avatar, "_kisekae_body_self_contact", None)
    if sc is None:
        mesh = avatar.body.mesh
        sc = BodySelfContact(mesh.vertices, mesh.faces, mesh.weld)
        avatar._kisekae_body_self_contact = sc
    return sc


def self_contact_pose(avatar: Avatar, pose, body_vertices=None) -> dict:
    """``body_buried``, ``body_self_crossings`` and ``body_volume_change`` of the body in one pose.

    Parameters
    ----------
    avatar : Avatar
    pose : Pose
    body_vertices : (N, 3) or None, posed body positions to measure instead of the avatar's own
        (its skinning, then its body ``deform`` such as the contact, if it has one)

    Returns
    -------
    dict with the fields of :meth:`kisekae.qa.selfcontact.BodySelfContact.measure` (``body_buried``,
    ``body_self_crossings``, ``body_volume_change``, ``body_dihedral_p99_deg``), ``pose``, and the per-vertex
    ``buried`` mask (not a JSON field), and ``body_inverted_faces`` (:func:`kisekae.qa.selfcontact.inverted_faces`).
    When the body has a ``deform`` and ``body_vertices`` is not given, also the same fields of plain skinning with
    the suffix ``_plain``, so the two can be compared, ``body_flipped_faces``: the body's triangles turned more
    than 90 degrees from plain skinning's, and ``body_new_inverted_faces``: those inside out on this body but not
    under plain skinning.
    """
    from ..avatar.correctives import blended_rotations

    measure = body_self_contact(avatar)
    out = {"pose": pose.name}
    m = pose.skinning_matrices(avatar.skeleton)
    blend = blended_rotations(avatar.body.skin, m)

    def inverted(v):
        return inverted_mask(v, measure.rest_vertices, measure.faces, blend)

    inside_out = None
    if body_vertices is None:
        body_vertices = avatar.body.posed(m)
        if avatar.body.deform is not None:
            skinned = avatar.body.skinned(m)
            inside_out = inverted(skinned)
            out.update({f"{k}_plain": v for k, v in measure.measure(skinned).items() if k.startswith("body_")})
            out["body_inverted_faces_plain"] = int(inside_out.sum())
            out["body_flipped_faces"] = flipped_faces(body_vertices, skinned, measure.faces)
    mine = inverted(body_vertices)
    if inside_out is not None:
        out["body_new_inverted_faces"] = int((mine & ~inside_out).sum())
    return {**out, **measure.measure(body_vertices), "body_inverted_faces": int(mine.sum())}


def check_garment(query: BodyQuery, mesh, skinned, points) -> dict:
    """The check fields of one garment against one posed body, from plain arrays.

    This is the record :func:`check_pose` makes for each garment, without the avatar: the
    Blender extension calls it with meshes read from Blender.

    Parameters
    ----------
    query : BodyQuery
        The posed body.
    mesh : kisekae.avatar.mesh.Mesh
        The garment at rest (metres): its vertices, triangles, welded edges (quad sides) and weld.
    skinned : (N, 3) float
        The garment in the pose before any correction, metres.
    points : (N, 3) float
        The positions to check (``skinned`` itself, or a fixed garment), metres.

    Returns
    -------
    dict
        The fields of :func:`kisekae.qa.penetration.penetration_stats` (with the per-vertex
        ``inside``, ``depth`` and per-edge ``crossing`` arrays) and of
        :func:`kisekae.qa.shape.shape_stats`.
    """
    stats = penetration_stats(query, points, mesh.edges)
    shape = shape_stats(mesh.vertices, skinned, points, mesh.faces, mesh.edges, mesh.weld)
    return {**stats, **shape}


def check_pose(avatar: Avatar, pose, garments, *, posed_garments: dict | None = None) -> list:
    """Check every garment in one pose.

    Parameters
    ----------
    avatar : Avatar
    pose : Pose
    garments : list of garment names
    posed_garments : dict name -> (N, 3), optional positions to check instead of plain skinning
        (for example the output of the push-out solver).

    Returns
    -------
    list of dict records with :data:`RECORD_FIELDS` plus ``time_ms`` and the arrays ``inside``,
    ``depth`` (dropped before JSON output). The shape fields (:mod:`kisekae.qa.shape`) compare the
    checked positions with plain skinning, so they read 0 flipped faces and 0 strain for plain skinning.
    """
    m = pose.skinning_matrices(avatar.skeleton)
    t0 = time.perf_counter()
    query = BodyQuery(body_topology(avatar), avatar.body.posed(m))
    body_ms = (time.perf_counter() - t0) * 1e3
    records = []
    for name in garments:
        part = avatar.part(name)
        t = time.perf_counter()
        skinned = part.posed(m)
        pts = posed_garments[name] if posed_garments and name in posed_garments else skinned
        rec = {"pose": pose.name, "garment": name, **check_garment(query, part.mesh, skinned, pts)}
        rec["time_ms"] = (time.perf_counter() - t) * 1e3 + body_ms / max(len(garments), 1)
        records.append(rec)
    return records


def json_record(rec: dict) -> dict:
    """A record without its per-vertex arrays, with plain Python numbers."""
    out = {}
    for k, v in rec.items():
        if isinstance(v, np.ndarray):
            continue
        out[k] = v.item() if isinstance(v, np.generic) else v
    return out


def format_table(records, columns=None) -> str:
    """A readable fixed-width table of check records (depths shown in millimetres)."""
    columns = columns or [c for c in ("pose", "garment", "stage", "vertices", "inside_count", "inside_fraction",
                                      "max_depth_m", "p95_depth_m", "edge_crossings", "flipped_faces", "folded_pairs",
                                      "strain_p99", "strain_max", "self_crossings", "max_push_m",
                                      "moved_fraction", "moved_unnecessarily", "under_lower_layers", "layer_crossings",
                                      "poke_through_pixels", "poke_through_pixels_culled",
                                      "culled_skin_seen_pixels", "pop_mm", "body_buried", "body_self_crossings",
                                      "body_volume_change", "body_dihedral_p99_deg", "body_flipped_faces",
                                      "body_inverted_faces", "body_new_inverted_faces", "body_buried_plain",
                                      "body_self_crossings_plain",
                                      "body_volume_change_plain", "body_dihedral_p99_deg_plain",
                                      "body_inverted_faces_plain", "time_ms")
                          if any(c in r for r in records)]
    heads = {"inside_fraction": "inside %", "max_depth_m": "max depth mm", "p95_depth_m": "p95 depth mm",
             "max_push_m": "max push mm", "moved_fraction": "moved %", "inside_count": "inside",
             "edge_crossings": "crossings", "moved_unnecessarily": "moved >margin", "time_ms": "ms",
             "poke_through_pixels": "poke px", "under_lower_layers": "under layers",
             "layer_crossings": "layer crossings", "body_buried": "body buried",
             "body_self_crossings": "body crossings", "body_volume_change": "body vol %",
             "body_buried_plain": "plain buried", "body_self_crossings_plain": "plain crossings",
             "body_volume_change_plain": "plain vol %", "body_dihedral_p99_deg": "body dihedral p99 deg",
             "body_flipped_faces": "body flipped", "body_dihedral_p99_deg_plain": "plain dihedral p99 deg",
             "body_inverted_faces": "body inverted", "body_inverted_faces_plain": "plain inverted",
             "body_new_inverted_faces": "new inverted",
             "flipped_faces": "| flipped", "folded_pairs": "folded", "strain_p99": "strain p99",
             "strain_max": "strain max", "self_crossings": "self-x", "pop_mm": "pop mm", "poke_through_pixels_culled": "poke px culled",
             "culled_skin_seen_pixels": "culled seen px"}

    def cell(c, v):
        if v is None or v == "":
            return ""
        if c in ("inside_fraction", "moved_fraction", "body_volume_change", "body_volume_change_plain"):
            return f"{100 * v:.2f}"
        if c.endswith("_m"):
            return f"{1000 * v:.1f}"
        if c == "time_ms":
            return f"{v:.1f}"
        if c in ("pop_mm", "body_dihedral_p99_deg", "body_dihedral_p99_deg_plain"):
            return f"{v:.1f}"
        if c.startswith("strain_"):
            return f"{v:.3f}"
        return str(v)

    rows = [[heads.get(c, c) for c in columns]] + [[cell(c, r.get(c)) for c in columns] for r in records]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns))]
    lines = ["  ".join(x.rjust(w) if j > 1 else x.ljust(w) for j, (x, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
