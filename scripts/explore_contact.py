"""Measure a contact-aware body candidate on the built-in avatar (research script, not the product).

Candidate measured here ("bisector projection"): every body part (the vertices whose largest skin
weight is one bone) gets a signed distance field of its own triangles, baked once on a grid in
the rest frame (sign from the part's winding number, so the open cut at the joint closes along
the w = 0.5 surface). After linear blend skinning, each vertex of part A that comes closer to
another part B than ``gap`` is moved along ``grad(f_B) - grad(f_A)`` (both fields moved rigidly
by their bone) until ``f_B - f_A`` reaches ``min(gap, rest value - band)``, with a smooth maximum
over ``band`` so the contact boundary has no kink and the rest pose is unchanged. The displacement
is then smoothed by Jacobi passes over the one-ring and projected once more.

Run: ``python scripts/explore_contact.py [--candidate bisector|plane|projection|combined] [--cell 0.01] [--gap 0.006] [--band 0.01]``.
It prints, per pose, plain skinning against the candidate: body_buried, body_self_crossings,
body_volume_change, the largest move from plain skinning and the triangles flipped relative to
plain skinning. docs/contact.md reports the numbers and why this candidate is not the answer.
"""

from __future__ import annotations

import argparse
import warnings

import numba
import numpy as np
import scipy.sparse as sp
from numba.core.errors import NumbaPerformanceWarning

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import JointPlanes, contact_planes_numpy
from kisekae.avatar.poses import named_pose
from kisekae.geom.bvh import build_bvh, refit
from kisekae.geom.closest import surface_distance
from kisekae.geom.normals import face_normals, vertex_normals
from kisekae.geom.winding import winding_number
from kisekae.qa.selfcontact import BodySelfContact, signed_volume

warnings.filterwarnings("ignore", category=NumbaPerformanceWarning)

POSES = ("stand", "leg_raise", "crouch", "knee_bend", "sit", "lunge", "arms_forward", "arms_up", "twist")


def bake_part_fields(rest, faces, owner_bone, cell, margin=0.03, min_vertices=20):
    """Per-bone signed distance grids of the bone's own triangles in the rest frame."""
    grids, lows, dims, bones = [], [], [], []
    for b in np.unique(owner_bone):
        sel = owner_bone == b
        if sel.sum() < min_vertices:
            continue
        part = faces[sel[faces].sum(1) >= 2]
        lo = rest[sel].min(0) - margin
        n = np.ceil((rest[sel].max(0) + margin - lo) / cell).astype(int) + 1
        axes = [lo[k] + cell * np.arange(n[k]) for k in range(3)]
        pts = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
        bvh = build_bvh(rest, part)
        state = refit(bvh, rest, part)
        d, _ = surface_distance(pts, bvh, state)
        grids.append(np.where(winding_number(pts, bvh, state) > 0.5, -d, d))
        lows.append(lo)
        dims.append(n)
        bones.append(b)
    offsets = np.concatenate([[0], np.cumsum([g.size for g in grids])])
    return np.concatenate(grids), offsets, np.array(lows), np.array(dims), np.array(bones)


@numba.njit(cache=True)
def _sample(flat, off, lo, dim, h, s, y0, y1, y2):
    fx = (y0 - lo[s, 0]) / h
    fy = (y1 - lo[s, 1]) / h
    fz = (y2 - lo[s, 2]) / h
    nx, ny, nz = dim[s, 0], dim[s, 1], dim[s, 2]
    if fx < 0 or fy < 0 or fz < 0 or fx > nx - 1 or fy > ny - 1 or fz > nz - 1:
        return 1e9, 0.0, 0.0, 0.0, False
    ix, iy, iz = min(int(fx), nx - 2), min(int(fy), ny - 2), min(int(fz), nz - 2)
    tx, ty, tz = fx - ix, fy - iy, fz - iz
    i0 = off[s] + (ix * ny + iy) * nz + iz
    sx, sy = ny * nz, nz
    c0, c1, c2, c3 = flat[i0], flat[i0 + 1], flat[i0 + sy], flat[i0 + sy + 1]
    c4, c5, c6, c7 = flat[i0 + sx], flat[i0 + sx + 1], flat[i0 + sx + sy], flat[i0 + sx + sy + 1]
    a00, a01 = c0 * (1 - tz) + c1 * tz, c2 * (1 - tz) + c3 * tz
    a10, a11 = c4 * (1 - tz) + c5 * tz, c6 * (1 - tz) + c7 * tz
    b0, b1 = a00 * (1 - ty) + a01 * ty, a10 * (1 - ty) + a11 * ty
    gz0 = (c1 - c0) * (1 - ty) + (c3 - c2) * ty
    gz1 = (c5 - c4) * (1 - ty) + (c7 - c6) * ty
    return (b0 * (1 - tx) + b1 * tx, (b1 - b0) / h, ((a01 - a00) * (1 - tx) + (a11 - a10) * tx) / h,
            (gz0 * (1 - tx) + gz1 * tx) / h, True)


@numba.njit(cache=True)
def bisector_projection(x, rest, own, flat, off, lo, dim, h, minv, rot, gap, band, iters):
    """Move each vertex of its part out of every other part's field to the offset bisector."""
    out = x.copy()
    nf = len(off) - 1
    for i in range(len(x)):
        a = own[i]
        if a < 0:
            continue
        p = out[i].copy()
        for _ in range(iters):
            moved = False
            for b in range(nf):
                if b == a:
                    continue
                yb = minv[b, :3, :3] @ p + minv[b, :3, 3]
                fb, bx, by, bz, ok = _sample(flat, off, lo, dim, h, b, yb[0], yb[1], yb[2])
                if not ok or fb > gap + band + 0.05:
                    continue
                ya = minv[a, :3, :3] @ p + minv[a, :3, 3]
                fa, ax, ay, az, ok_a = _sample(flat, off, lo, dim, h, a, ya[0], ya[1], ya[2])
                fbr, _, _, _, ok_br = _sample(flat, off, lo, dim, h, b, rest[i, 0], rest[i, 1], rest[i, 2])
                far, _, _, _, ok_ar = _sample(flat, off, lo, dim, h, a, rest[i, 0], rest[i, 1], rest[i, 2])
                if not ok_a:
                    continue
                g = fb - fa
                target = min(gap, (fbr - far if ok_br and ok_ar else 1e9) - band - 1e-6)
                if g >= target + band:
                    continue
                t = max(band - abs(g - target), 0.0) / band
                step = max(g, target) + t * t * band / 4 - g
                d = rot[b] @ np.array([bx, by, bz]) - rot[a] @ np.array([ax, ay, az])
                d2 = d @ d
                if d2 < 1e-6:
                    continue
                p += min(step / np.sqrt(d2), 0.02) / np.sqrt(d2) * d
                moved = True
            if not moved:
                break
        out[i] = p
    return out


def rest_body_grid(rest, faces, cell, margin=0.05):
    """Signed distance of the whole rest body on a regular grid: (values (nx, ny, nz), lower corner)."""
    lo = rest.min(0) - margin
    n = np.ceil((rest.max(0) + margin - lo) / cell).astype(int) + 1
    pts = np.stack(np.meshgrid(*[lo[k] + cell * np.arange(n[k]) for k in range(3)], indexing="ij"), -1).reshape(-1, 3)
    bvh = build_bvh(rest, faces)
    state = refit(bvh, rest, faces)
    d, _ = surface_distance(pts, bvh, state)
    return np.where(winding_number(pts, bvh, state) > 0.5, -d, d).reshape(n), lo


@numba.njit(cache=True)
def _grid_sample(g, lo, h, y):
    nx, ny, nz = g.shape
    fx = min(max((y[0] - lo[0]) / h, 0.0), nx - 1.001)
    fy = min(max((y[1] - lo[1]) / h, 0.0), ny - 1.001)
    fz = min(max((y[2] - lo[2]) / h, 0.0), nz - 1.001)
    ix, iy, iz = int(fx), int(fy), int(fz)
    tx, ty, tz = fx - ix, fy - iy, fz - iz
    c00 = g[ix, iy, iz] * (1 - tz) + g[ix, iy, iz + 1] * tz
    c01 = g[ix, iy + 1, iz] * (1 - tz) + g[ix, iy + 1, iz + 1] * tz
    c10 = g[ix + 1, iy, iz] * (1 - tz) + g[ix + 1, iy, iz + 1] * tz
    c11 = g[ix + 1, iy + 1, iz] * (1 - tz) + g[ix + 1, iy + 1, iz + 1] * tz
    c0, c1 = c00 * (1 - ty) + c01 * ty, c10 * (1 - ty) + c11 * ty
    dz0 = (g[ix, iy, iz + 1] - g[ix, iy, iz]) * (1 - ty) + (g[ix, iy + 1, iz + 1] - g[ix, iy + 1, iz]) * ty
    dz1 = (g[ix + 1, iy, iz + 1] - g[ix + 1, iy, iz]) * (1 - ty) + (g[ix + 1, iy + 1, iz + 1] - g[ix + 1, iy + 1, iz]) * ty
    return (c0 * (1 - tx) + c1 * tx, (c1 - c0) / h, ((c01 - c00) * (1 - tx) + (c11 - c10) * tx) / h,
            (dz0 * (1 - tx) + dz1 * tx) / h)


@numba.njit(cache=True)
def blended_projection(x, rest, idx, wts, minv, rot, grid, lo, h, iters, cap):
    """Candidate 4: move each blended vertex to its rest level of ``sum_k w_k f_rest(M_k^-1 x)``."""
    out = x.copy()
    for i in range(len(x)):
        if wts[i].max() > 0.999:
            continue
        p = x[i].copy()
        for _ in range(iters):
            f = 0.0
            f0 = 0.0
            g = np.zeros(3)
            for k in range(idx.shape[1]):
                if wts[i, k] == 0:
                    continue
                b = idx[i, k]
                y = minv[b, :3, :3] @ p + minv[b, :3, 3]
                fk, gx, gy, gz = _grid_sample(grid, lo, h, y)
                f += wts[i, k] * fk
                f0 += wts[i, k] * _grid_sample(grid, lo, h, rest[i])[0]
                g += wts[i, k] * (rot[b] @ np.array([gx, gy, gz]))
            g2 = g @ g
            if g2 < 1e-8:
                break
            p += (f0 - f) / g2 * g
        d = p - x[i]
        ln = np.sqrt(d @ d)
        out[i] = x[i] + d * min(1.0, cap / ln) if ln > 0 else p
    return out


def plane_contact(x, m, planes, gap, band):
    """Candidate 3, as landed in ``kisekae.avatar.contact`` (NumPy reference)."""
    return contact_planes_numpy(x, planes, m, gap=gap, band=band)


def cap_moves(x, y, cap):
    """``y`` with every vertex at most ``cap`` metres from ``x``."""
    d = y - x
    ln = np.linalg.norm(d, axis=1, keepdims=True)
    return x + d * np.minimum(1.0, cap / np.maximum(ln, 1e-12))


def bulge(x, y, faces, weld, adj, deg, rest_volume, orientation, contact):
    """Give back the rest volume: move the vertices the solve moved out along their normals, then ``contact``."""
    for _ in range(3):
        deficit = rest_volume - signed_volume(y[weld], faces) * orientation
        normals = vertex_normals(y, faces, weld).astype(np.float64)
        w = jacobi(np.clip(np.linalg.norm(y - x, axis=1) / 0.01, 0, 1)[:, None], adj, deg, 20)[:, 0]
        tri = y[faces]
        area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
        vertex_area = np.zeros(len(y))
        np.add.at(vertex_area, faces.ravel(), np.repeat(area / 3, 3))
        y = contact(y + (deficit / max((w * vertex_area).sum(), 1e-9) * w)[:, None] * normals)
    return y


def jacobi(disp, adj, deg, passes):
    """``passes`` Jacobi smoothing passes of a displacement field over the one-ring."""
    for _ in range(passes):
        disp = 0.5 * disp + 0.5 * (adj @ disp) / deg[:, None]
    return disp


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cell", type=float, default=0.01, help="grid cell, metres")
    ap.add_argument("--gap", type=float, default=0.006, help="contact gap left for cloth, metres")
    ap.add_argument("--band", type=float, default=0.01, help="smooth-maximum band, metres")
    ap.add_argument("--smooth", type=int, default=10, help="Jacobi passes over the displacement")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the combined candidate")
    ap.add_argument("--cap", type=float, default=0.0, help="combined: cap every round's move from plain skinning, "
                                                           "metres (0: only the projection's own 5 cm cap)")
    ap.add_argument("--bulge", action="store_true", help="combined: give back the rest volume at the end")
    ap.add_argument("--candidate", choices=("bisector", "plane", "projection", "combined", "solve", "solve+plane"),
                    default="bisector",
                    help="bisector: per-part distance grids (candidate 1); plane: joint bisector planes (3); "
                         "projection: blended rest-level projection (4); combined: 4 and 3 alternated with "
                         "smoothing of the displacement (5); solve: the continuation from rest "
                         "(kisekae.avatar.contact_solve, 7); solve+plane: 7 then 3")
    args = ap.parse_args()
    av = load_builtin_avatar()
    body = av.body
    rest = body.mesh.vertices.astype(np.float64)
    faces = body.mesh.faces
    owner_bone = body.skin.indices[np.arange(len(rest)), np.argmax(body.skin.weights, 1)]
    flat, off, lo, dim, bones = bake_part_fields(rest, faces, owner_bone, args.cell)
    slot = np.full(len(av.skeleton.names), -1)
    slot[bones] = np.arange(len(bones))
    own = slot[owner_bone]
    e = body.mesh.edges
    n = len(rest)
    adj = sp.coo_matrix((np.ones(2 * len(e)), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])), (n, n)).tocsr()
    deg = np.maximum(np.asarray(adj.sum(1)).ravel(), 1)
    measure = BodySelfContact(rest, faces, body.mesh.weld)
    if args.candidate in ("projection", "combined"):
        grid, grid_lo = rest_body_grid(rest, faces, 0.01)
        order = np.argsort(-body.skin.weights, 1)
        idx = np.take_along_axis(body.skin.indices, order, 1)
        wts = np.take_along_axis(body.skin.weights, order, 1).astype(np.float64)
    if args.candidate.startswith("solve"):
        from kisekae.avatar.contact_solve import body_contact_solve
        solver = body_contact_solve(av)
    sk = av.skeleton
    planes = JointPlanes.from_skin(sk.parents, sk.rest, body.skin.indices, body.skin.weights, rest)
    print(f"{'pose':10s} {'buried':>12s} {'crossings':>12s} {'volume %':>16s} {'max move mm':>11s} {'flipped':>7s}")
    for name in POSES:
        m = named_pose(av.skeleton, name).skinning_matrices(av.skeleton)
        x = body.posed(m).astype(np.float64)
        mb = m[bones]
        minv, rot = np.linalg.inv(mb), np.ascontiguousarray(mb[:, :3, :3])
        if args.candidate == "plane":
            y = plane_contact(x, m, planes, 0.004, args.band)
        elif args.candidate.startswith("solve"):
            y = solver(x, m)
            if args.candidate == "solve+plane":
                y = plane_contact(y, m, planes, 0.004, args.band)
        elif args.candidate in ("projection", "combined"):
            minv, rot = np.linalg.inv(m), np.ascontiguousarray(m[:, :3, :3])
            y = x
            for _ in range(args.rounds if args.candidate == "combined" else 1):
                y = blended_projection(y, rest, idx, wts, minv, rot, grid, grid_lo, 0.01, 3, 0.05)
                if args.candidate == "projection":
                    break
                y = x + jacobi(plane_contact(y, m, planes, 0.004, args.band) - x, adj, deg, args.smooth)
                y = cap_moves(x, y, args.cap) if args.cap else y
            if args.candidate == "combined":
                def contact(z):
                    z = plane_contact(z, m, planes, 0.004, args.band)
                    return cap_moves(x, z, args.cap) if args.cap else z
                y = contact(y)
                if args.bulge:
                    y = bulge(x, y, faces, body.mesh.weld, adj, deg, measure.rest_volume, measure.topology.orientation,
                              contact)
        else:
            y = x
            for _ in range(3):
                disp = bisector_projection(y, rest, own, flat, off, lo, dim, args.cell, minv, rot, args.gap, args.band, 3)
                y = x + jacobi(disp - x, adj, deg, args.smooth)
            y = bisector_projection(y, rest, own, flat, off, lo, dim, args.cell, minv, rot, args.gap, args.band, 3)
        y = y[body.mesh.weld]
        r0, r1 = measure.measure(x), measure.measure(y)
        flipped = int((np.einsum("ij,ij->i", face_normals(y, faces), face_normals(x, faces)) < 0).sum())
        print(f"{name:10s} {r0['body_buried']:5d} -> {r1['body_buried']:4d} "
              f"{r0['body_self_crossings']:5d} -> {r1['body_self_crossings']:4d} "
              f"{100 * r0['body_volume_change']:+6.2f} -> {100 * r1['body_volume_change']:+6.2f} "
              f"{1e3 * np.linalg.norm(y - x, axis=1).max():11.1f} {flipped:7d}")

if __name__ == "__main__":
    main()
