"""Fix garments on a posed avatar: the exact-skin push-out, optionally as a layered outfit.

This is what ``kisekae check --fix`` and ``kisekae fit`` run, and what the renderer, the batch
runner and the demo call::

    from kisekae.fit.fix import fix_pose
    results = fix_pose(avatar, pose, ["tights", "skirt"], layered=True)
    results["skirt"].positions, results["skirt"].metrics["max_push_m"]
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..avatar.avatar import Avatar
from ..errors import KisekaeError
from ..validate import as_points
from ..qa.check import body_topology
from ..qa.penetration import BodyQuery
from ..qa.shape import flips_and_strain, zero_area_faces
from .crossing_repair import repair_crossings
from .exact import UNNECESSARY, push_out_exact, signed_body_distance
from .layers import LayerSurface, layer_stats, push_out_layers
from .pushout import PushParams, cap_displacement
from .shape_solve import solve_shape_preserving

#: Fix methods: ``"exact"`` (per-vertex projections onto the union, :mod:`kisekae.fit.exact`),
#: ``"shape"`` (the shape-preserving solve, :mod:`kisekae.fit.shape_solve`), ``"path"`` (the garment carried from
#: the rest pose, :mod:`kisekae.fit.path_fix`, then shape and exact from there), ``"runtime"`` (the per-frame path's
#: result, :func:`kisekae.fit.runtime.runtime_pose`, then shape and exact from there) and ``"auto"`` (the default:
#: the runtime start where it and its finishes leave no vertex inside the body, with the fewest visible defects; else
#: also the shape-preserving solve, and where that clips too the exact solver from the skinned garment and from the
#: shape result (``"shape+exact"``) and ``"path"``: the candidate with the fewest visible defects, vertices inside
#: counted with them (:func:`_defects`); ``FixResult.metrics["fix_method"]`` says which). Likewise a start's finish
#: runs the exact solver from the start itself (``"runtime+exact"``) only where every candidate from it that keeps
#: the shape left a vertex inside. Over the 68 cells of ``benchmarks/bench_runtime_cells.py`` (17 poses x 4 garments)
#: on the contact body and the 34 of tights and skirt on the plain body, none of the skipped candidates had won, and
#: in the hardest cells they took most of the time (the work suit's deep squat 21 s; docs/fit.md).
METHODS = ("auto", "exact", "shape", "path", "runtime")

#: Edge strain above which a fix's edge counts as a spike when fixes are compared (twice its skinned length).
SPIKE_STRAIN = 1.0

#: skirt_bias of the default parameters for skirt-like garments (the seed note's 0-0.7 range).
SKIRT_BIAS = 0.3
#: Garment names that default to skirt mode (skirt_bias), matched as substrings.
SKIRT_NAMES = ("skirt", "dress", "kilt")
#: Default cloth thickness of a layer, metres.
THICKNESS = 0.0005


@dataclass
class FixResult:
    """One fixed garment in one pose.

    positions : (N, 3) float32 fixed positions, metres
    metrics : dict with ``max_push_m``, ``moved_fraction``, ``moved_unnecessarily``, ``time_ms``,
        ``unresolved`` (contact vertices still inside after the solver)
    info : the solver's per-vertex arrays (``push``, ``d_before``, ``contact``, ...)
    """

    positions: np.ndarray
    metrics: dict
    info: dict = field(default_factory=dict)


def skinned_normals(part, skin_matrices) -> np.ndarray:
    """(N, 3) rest normals of a skinned part carried into the pose by its blended skinning rotation."""
    a = np.einsum("nk,nkij->nij", part.skin.weights.astype(np.float64),
                  np.asarray(skin_matrices, dtype=np.float64)[part.skin.indices][:, :, :3, :3])
    return blended_normals(part.mesh.normals, a)


def params_for(name: str, params: PushParams | None) -> PushParams:
    """``params`` or the defaults, with skirt mode on for skirt-like garment names."""
    if params is not None:
        return params
    if any(s in name.lower() for s in SKIRT_NAMES):
        return PushParams(skirt_bias=SKIRT_BIAS)
    return PushParams()


def fix_pose(avatar: Avatar, pose, garments, params: PushParams | dict | None = None, *, layered: bool = False,
             masks: dict | None = None, thickness: dict | None = None, query: BodyQuery | None = None,
             method: str = "auto") -> dict:
    """Fix every garment in one pose.

    Parameters
    ----------
    avatar : Avatar
    pose : Pose
    garments : list of garment names; with ``layered``, innermost first
    params : PushParams, or dict name -> PushParams, or None for the defaults (skirt mode for skirts)
    layered : bool
        Also keep each garment outside the fixed garments before it in the list.
    masks : dict name -> {"tightness": ..., "softness": ...} (per-vertex arrays or UV textures)
    thickness : dict name -> cloth thickness in metres (default :data:`THICKNESS`)
    query : BodyQuery, optional, the posed body if already built
    method : ``"auto"`` (default), ``"exact"``, ``"shape"``, ``"path"`` or ``"runtime"`` (:data:`METHODS`;
        ``"path"``: the garment carried from the rest pose, :mod:`kisekae.fit.path_fix`, ``"runtime"``: the per-frame
        path's result, each then finished by the shape-preserving and the exact solver where it still clips; over
        layers the per-frame result of the stack, :func:`_runtime_layered`; ``"runtime"`` refuses per-vertex masks,
        ``"auto"`` then goes without it)

    Returns
    -------
    dict name -> FixResult
    """
    if method not in METHODS:
        raise KisekaeError(f"unknown fix method {method!r}; choose one of {', '.join(METHODS)}", "method")
    m = pose.skinning_matrices(avatar.skeleton)
    if query is None:
        query = BodyQuery(body_topology(avatar), avatar.body.posed(m))
    masks = masks or {}
    thickness = thickness or {}
    out = {}
    fixed_layers = []
    stack = {name: params_for(name, params.get(name) if isinstance(params, dict) else params) for name in garments}
    for name in garments:
        part = avatar.part(name)
        p = stack[name]
        t0 = time.perf_counter()
        x = part.posed(m)
        mk = masks.get(name, {})
        dirs = skinned_normals(part, m)
        new, info = _fix_garment(avatar, pose, name, query, x, p, dirs, mk, method, fixed_layers, stack)
        out[name] = _result(new, x, info, t0)
        if layered:
            fixed_layers.append(LayerSurface(new, part.mesh.faces, thickness.get(name, THICKNESS), name=name,
                                             outward_hint=lambda pts: signed_body_distance(query, pts)[1]))
    if layered:
        for i, name in enumerate(garments):
            out[name].metrics.update(layer_stats(out[name].positions, avatar.part(name).mesh.edges,
                                                 fixed_layers[:i]))
    return out


def _fix_garment(avatar, pose, name, query, x, params, directions, masks, method, fixed_layers, stack=None):
    """One garment's ``(positions, info)`` by ``method`` (:data:`METHODS`), against the body and ``fixed_layers``
    (``stack``: name -> PushParams of every garment worn, for the layered per-frame start)."""
    part = avatar.part(name)
    started = None
    if method in ("runtime", "auto") and not masks:
        if fixed_layers:
            started = _runtime_layered(avatar, pose, name, query, part, x, directions, fixed_layers, stack or {})
        else:
            started = _runtime(avatar, pose, name, query, part, x, params, directions, masks)
        if method == "runtime" or _clean(query, part, started[0], fixed_layers) or _nothing_inside(query, part, x, started,
                                                                                               fixed_layers):
            return started
    if method == "runtime":
        raise KisekaeError("the per-frame start takes no per-vertex masks; use method 'auto' or 'shape'", "method")
    if method == "path":
        return _path(avatar, pose, name, query, part, x, params, directions, masks)
    if method in ("shape", "auto"):
        shaped = _shape(query, part, x, params, directions, masks, fixed_layers)
        if method == "shape" or _clean(query, part, shaped[0], fixed_layers):
            return _best(query, part, x, [shaped] + ([started] if started is not None else []), fixed_layers)
    exact = _push(query, part.mesh, x, params, directions, masks)
    exact[1]["method"] = "exact"
    if fixed_layers:
        exact = _exact_layers(query, part, x, *exact, params, directions, fixed_layers)
        if method == "exact":
            return exact
        return _best(query, part, x, [exact, shaped] + ([started] if started is not None else []), fixed_layers)
    if method == "exact":
        return exact
    # auto, where the shape solve (and the per-frame start) still clip: every candidate, the fewest defects
    finished = _finish(query, part, x, params, directions, masks, shaped, exact)
    carried = _path(avatar, pose, name, query, part, x, params, directions, masks)
    return _best(query, part, x, [finished, carried, shaped] + ([started] if started is not None else []))


def _best(query, part, skinned, candidates, layers=()):
    """The ``(positions, info)`` of ``candidates`` with the fewest defects (:func:`_score`; the earlier on ties)."""
    if len(candidates) == 1:
        return candidates[0]
    scores = [_score(query, part, skinned, c, layers) for c in candidates]
    return candidates[min(range(len(candidates)), key=lambda k: scores[k])]


def _score(query, part, skinned, candidate, layers=()):
    """:func:`_defects` of a ``(positions, info)`` candidate, computed once and kept in ``info["defects"]`` (a
    candidate meets several comparisons; its positions never change after it is made; one garment's candidates all
    meet the same ``layers``)."""
    positions, info = candidate
    if "defects" not in info:
        info["defects"] = _defects(query, part, skinned, positions, layers)
    return info["defects"]


def _shape(query, part, x, params, directions, masks, layers):
    new, info = solve_shape_preserving(query, x, part.mesh, params, directions=directions, layers=layers,
                                       tightness=masks.get("tightness"), softness=masks.get("softness"))
    info["unresolved"] = query.inside(new) & info["contact"]
    info["method"] = "shape"
    return new, info


def _path(avatar, pose, name, query, part, x, params, directions, masks):
    """The garment carried from the rest pose (:func:`kisekae.fit.path_fix.path_fix_garment`), finished where it
    still clips (:func:`_finished`)."""
    from .path_fix import PathParams, path_fix_garment

    carried = path_fix_garment(avatar, pose, name, PathParams(need=max(0.75 * params.margin, 1e-4)))
    return _finished(query, part, x, params, directions, masks, carried, "path")


def _runtime(avatar, pose, name, query, part, x, params, directions, masks):
    """The per-frame path's result (:func:`kisekae.fit.runtime.runtime_pose`, carried from the rest pose in steps of
    at most 6 degrees, as a pose without a previous frame is), finished where it still clips (:func:`_finished`).

    It starts from what an engine shows, so a fix from it changes the per-frame result only where that clips; and
    it is fast (0.1-0.25 s a pose for both built-in garments, after the surface candidates are baked once per body
    and garment, :func:`kisekae.fit.runtime.garment_candidates`). It is what ``runtime_pose`` returns by default (the
    edge lift on, capped at :data:`~kisekae.fit.surface.FINISH_STEP` a frame). Where that still clips after its
    finishes, the per-frame result with the lift uncapped (``finish_step=None``, labelled ``"runtime-lift"``: a single
    pose has no next frame to take up what the cap leaves) is finished the same way and the one with fewer defects
    kept (docs/fit.md)."""
    from .runtime import runtime_pose

    best = None
    for label, kw in (("runtime", {}), ("runtime-lift", {"finish_step": None})):
        y = runtime_pose(avatar, pose, [name], {name: params}, **kw)[name][0]
        done = _finished(query, part, x, params, directions, masks, y.astype(np.float64), label)
        best = done if best is None else _best(query, part, x, [best, done])
        if _clean(query, part, best[0], []):
            break
    return best


def _runtime_layered(avatar, pose, name, query, part, x, directions, fixed_layers, stack):
    """The per-frame path's result for garment ``name`` worn over the garments of ``fixed_layers`` (innermost first;
    :func:`kisekae.fit.runtime.runtime_pose` with ``layers=True``: the layer push against each inner garment's
    per-frame result, which is what ``auto`` keeps for the inner garment wherever that is clean), capped at
    ``max_push``; where it still clips the body or crosses a fixed layer beneath, also the shape-preserving solve with
    the layers from it and the exact layer pass from it: the one with the fewest defects, layer crossings counted.

    On the crouch the layered per-frame skirt has no flipped face and a largest strain of 0.55 where the
    shape-preserving solve from the skinned skirt flips 29 faces at a strain of 3.9 (docs/fit.md)."""
    from .runtime import runtime_pose

    names = [layer.name for layer in fixed_layers] + [name]
    params = stack.get(name) or params_for(name, None)
    y = runtime_pose(avatar, pose, names, {n: stack.get(n) or params_for(n, None) for n in names}, layers=True)[name][0]
    y = _over_fixed(avatar, name, y.astype(np.float64), params, fixed_layers)
    best = (cap_displacement(y, x, params.max_push),
            {"contact": np.zeros(len(x), dtype=bool), "method": "runtime-layered"})
    if _clean(query, part, best[0], fixed_layers):
        best[1]["unresolved"] = query.inside(best[0])
        return best
    shaped, info = _shape(query, part, best[0].astype(np.float32), params, directions, {}, fixed_layers)
    info["method"] = "runtime-layered+shape"
    tried = [best, (cap_displacement(shaped.astype(np.float64), x, params.max_push), info)]
    fin, info = _push(query, part.mesh, best[0].astype(np.float32), params, directions, {})
    info["method"] = "runtime-layered+exact"
    tried.append(_exact_layers(query, part, x, fin, info, params, directions, fixed_layers))
    best = _best(query, part, x, tried, fixed_layers)
    best[1]["unresolved"] = query.inside(best[0])
    return best


def _over_fixed(avatar, name, points, params, fixed_layers):
    """The per-frame layer push (:func:`kisekae.fit.layer_push.layer_push`, the pair's baked candidates and edge lift)
    of garment ``name``'s ``points`` out of each fixed layer in turn, once more: it takes up what the per-frame layer
    push left (on the stand the skirt's last 3 edges through the tights, which made the fix fall back to the
    shape-preserving solve) and follows an inner garment that the fix finished where its per-frame result clipped."""
    from .layer_push import layer_push
    from .runtime import garment_ring, layer_candidates, layer_lift

    ring = garment_ring(avatar, name)
    for layer in fixed_layers:
        inner = avatar.part(layer.name).mesh
        points = layer_push(points, layer_candidates(avatar, name, layer.name), ring, layer.vertices, inner.faces,
                            params, inner_weld=inner.weld, lift=layer_lift(avatar, name, layer.name))[0]
    return points


def _finished(query, part, x, params, directions, masks, start, label):
    """``start`` capped at ``max_push`` from skinning; where it still clips, first the local repair of its last edges
    through the body (:func:`_repaired`), kept when that is clean with fewer defects than the start (the crouch's
    tights and skirt: 0.1 s instead of 1.8 s, the per-frame shape kept); else also the shape-preserving solve from it
    (its shape terms keep the start's shape), the exact solver from it and, where the shape result still clips, the
    exact solver from that (each moves only what still clips): of these the one with the fewest defects
    (:func:`_defects`; the earlier wins ties), every one capped at ``max_push``. ``info["method"]`` names the
    stages, e.g. ``"path+shape+exact"`` or ``"runtime+repair"``."""
    best = (cap_displacement(np.asarray(start, dtype=np.float64), x, params.max_push),
            {"contact": np.zeros(len(x), dtype=bool), "method": label})
    tried = [best]
    if not _clean(query, part, best[0], []):
        tried.append(_repaired(query, part, x, params, best))
    if len(tried) > 1 and not (_clean(query, part, tried[1][0], [])
                               and _score(query, part, x, tried[1])[0] < _score(query, part, x, best)[0]):
        # the local repair did not clear it without a new defect: the whole chain
        shaped, info = _shape(query, part, best[0].astype(np.float32), params, directions, masks, [])
        info["method"] = label + "+shape"
        tried.append((cap_displacement(shaped.astype(np.float64), x, params.max_push), info))
        # the exact solver from the start itself only where every candidate that keeps the shape left a vertex inside
        # (measured: elsewhere it never had the fewest defects, and it took much of the time)
        bases = ([best] if not any(_nothing_inside(query, part, x, t) for t in tried) else []) + (
            [tried[2]] if not _clean(query, part, tried[2][0], []) else [])
        for base in bases:
            fin, info = _push(query, part.mesh, base[0].astype(np.float32), params, directions, masks)
            info["contact"] = info["contact"] | base[1]["contact"]
            info["method"] = base[1]["method"] + "+exact"
            tried.append((cap_displacement(fin.astype(np.float64), x, params.max_push), info))
    best = _best(query, part, x, tried)
    best[1]["unresolved"] = query.inside(best[0])  # whatever is still inside is unresolved, contact or not
    return best


def _nothing_inside(query, part, skinned, candidate, layers=()) -> bool:
    """True where a ``(positions, info)`` candidate leaves no vertex inside the body (:func:`_score`): ``auto`` then
    runs no solver from the skinned garment and no exact solver from the start itself (:data:`METHODS`)."""
    return _score(query, part, skinned, candidate, layers)[2] == 0


def _repaired(query, part, x, params, base):
    """``base`` with its last edges through the body and vertices inside lifted out locally
    (:func:`kisekae.fit.crossing_repair.repair_crossings`), capped at ``max_push``; ``"+repair"`` in its method."""
    mesh = part.mesh
    new, info = repair_crossings(query, base[0], mesh.edges, params.margin, weld=mesh.weld)
    return (cap_displacement(new, x, params.max_push),
            {"contact": base[1]["contact"] | info["moved"], "method": base[1]["method"] + "+repair"})


def _finish(query, part, x, params, directions, masks, shaped, exact):
    """``auto`` where the shape-preserving solve left clipping: the exact solver also runs from the shape result
    (it moves only what still clips); of that and the exact solver's own result, the one with fewer defects
    (:func:`_defects`) wins. A finish that moves any vertex farther than ``max_push`` from skinning is not a
    candidate."""
    fin, fin_info = _push(query, part.mesh, shaped[0], params, directions, masks)
    if np.linalg.norm(fin.astype(np.float64) - x, axis=1).max(initial=0.0) > params.max_push + 1e-9:
        return exact
    if _score(query, part, x, (fin, fin_info)) < _score(query, part, x, exact):
        fin_info["contact"] = fin_info["contact"] | shaped[1]["contact"]
        fin_info["method"] = "shape+exact"
        return fin, fin_info
    return exact


#: How many clipping defects (a vertex inside, an edge through the body) one shape defect (a flipped face, a spike,
#: a shard) counts as in :func:`_defects`: a crumple draws the eye more than the clipping it clears.
SHAPE_WEIGHT = 2


def _defects(query, part, skinned, pos, layers=()) -> tuple:
    """(visible defects, largest edge strain, vertices inside) of fixed positions, for choosing between fixes: the
    smaller tuple wins.

    The visible defects are the vertices inside the body, the edges through it, the flipped faces, the spikes
    (edges stretched past twice their skinned length) and the shards (faces collapsed to less than
    :func:`kisekae.qa.shape.zero_area_faces`), flips and strain as :func:`kisekae.qa.shape.shape_stats`
    counts them: skin showing through the cloth, a crumple and a spike are what a user sees, one about as much as
    another. Counting the vertices inside first instead picked, on the packaged clip's last frame, an exact finish
    with 0 inside but 21 flipped faces and a strain of 4 over the shape solve's 2 vertices inside, 14 crossings and 2
    flipped faces at a strain of 0.2: a fix that clears the last vertex by crumpling the cloth looks worse than the
    clipping it removes. A flip, a spike or a shard counts :data:`SHAPE_WEIGHT` times: on a heavy body's crouch the
    exact finish's 4 inside, 33 crossings and 97 flipped faces (strain p99 2.4) had outscored the per-frame result's
    127 inside, 154 crossings and no flip (strain p99 0.46) one for one. With ``layers`` beneath, the edges through
    each of them count too."""
    mesh = part.mesh
    faces = np.asarray(mesh.weld)[mesh.faces]
    flipped, _turned, strain = flips_and_strain(mesh.vertices, skinned, pos, faces, mesh.edges)
    crossings = int(query.crossing_edges(pos, mesh.edges).sum())
    inside = int(query.inside(pos).sum())
    shards = zero_area_faces(np.asarray(pos, dtype=np.float64), faces)
    visible = inside + crossings + SHAPE_WEIGHT * (int(flipped.sum()) + int((strain > SPIKE_STRAIN).sum()) + shards)
    visible += sum(int(layer.crossing_edges(pos, mesh.edges).sum()) for layer in layers)
    return visible, float(strain.max(initial=0.0)), inside


def _clean(query, part, new, layers) -> bool:
    """No vertex inside the body, no edge through it, no edge through a layer beneath."""
    e = part.mesh.edges
    if query.inside(new).any() or query.crossing_edges(new, e).any():
        return False
    return not any(layer.crossing_edges(new, e).any() for layer in layers)


def _exact_layers(query, part, x, new, info, p, dirs, fixed_layers):
    """The exact solver's layer pass: alternate clearing the layers beneath and the body."""
    contact = info["contact"].copy()
    body_only = new.astype(np.float64).copy()
    # Alternate: clear the layers beneath, then the body again; the total move stays capped.
    for _ in range(2):
        before = new.astype(np.float64)
        for layer in fixed_layers:
            s, _n = layer.signed_distance(before)
            contact |= (s - layer.thickness) < p.margin
        new, touched = push_out_layers(before, part.mesh.edges, fixed_layers, p)
        contact |= touched
        new, info2 = push_out_exact(query, new, part.mesh.edges, p, directions=dirs)
        contact |= info2["contact"]
        new = cap_displacement(new.astype(np.float64), x, p.max_push)
        # Never trade the body for a layer: a vertex the cap left inside the body goes
        # back to where the body-only solve had it (outside the body, maybe under a layer).
        back = query.inside(new)
        new[back] = body_only[back]
    info["contact"] = contact
    info["unresolved"] = query.inside(new) & contact
    return new, info


def _push(query, mesh, x, params, directions, masks):
    return push_out_exact(query, x, mesh.edges, params, tightness=masks.get("tightness"),
                          softness=masks.get("softness"), uvs=mesh.uvs.get("uv0"), directions=directions,
                          garment_faces=mesh.faces)


def _result(new, x, info, t0) -> FixResult:
    push = np.linalg.norm(new.astype(np.float64) - x, axis=1)
    info["push"] = push
    elapsed = (time.perf_counter() - t0) * 1e3
    clear = ~info["contact"]
    metrics = {
        "max_push_m": float(push.max(initial=0.0)),
        "moved_fraction": float(np.mean(push > 1e-5)) if len(push) else 0.0,
        "moved_unnecessarily": int(np.sum(clear & (push >= UNNECESSARY))),
        "unresolved": int(info["unresolved"].sum()),
        "time_ms": elapsed,
        "fix_method": info.get("method", "exact"),
    }
    return FixResult(new.astype(np.float32), metrics, info)


def blended_normals(normals, blend) -> np.ndarray:
    """Rest normals carried by per-vertex blended skinning rotations, as unit vectors.

    Parameters
    ----------
    normals : (N, 3) float
        Rest vertex normals.
    blend : (N, 3, 3) float
        Each vertex's weighted sum of its bones' skinning matrices (upper-left 3x3).

    Returns
    -------
    (N, 3) float64 unit vectors (zero vectors stay zero).
    """
    n = np.einsum("nij,nj->ni", np.asarray(blend, dtype=np.float64), np.asarray(normals, dtype=np.float64))
    return n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)


def fix_garment(query: BodyQuery, mesh, posed, params: PushParams | None = None, *, directions=None,
                masks: dict | None = None) -> FixResult:
    """Fix one garment against one posed body, from plain arrays (no avatar, no layers).

    :func:`fix_pose` runs the same solver for each garment of an avatar; the Blender extension
    calls this with meshes read from Blender.

    Parameters
    ----------
    query : BodyQuery
        The posed body.
    mesh : kisekae.avatar.mesh.Mesh
        The garment at rest (metres): welded edges (quad sides), triangles, UVs for texture masks.
    posed : (N, 3) float
        The garment in the pose, metres.
    params : PushParams, optional
        Defaults: :class:`PushParams` (no skirt mode; see :func:`params_for`).
    directions : (N, 3) float, optional
        Preferred outward directions (the rest normals carried by skinning, :func:`blended_normals`).
    masks : dict, optional
        ``{"tightness": ..., "softness": ...}`` per-vertex arrays or UV textures.

    Returns
    -------
    FixResult
    """
    t0 = time.perf_counter()
    x = as_points(posed, "posed garment vertices", dtype=np.float32)
    if len(x) != mesh.n_vertices:
        raise KisekaeError(f"has {len(x)} vertices but the rest mesh has {mesh.n_vertices}", "posed garment")
    new, info = _push(query, mesh, x, params or PushParams(), directions, masks or {})
    return _result(new, x, info, t0)
