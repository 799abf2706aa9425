"""MakeHuman / MPFB2 import: base mesh groups, rigs (bone strategies, Blender roll) and weights.

Conventions: MakeHuman's base mesh is in decimetres with +Y up and the character facing +Z.
kisekae uses metres in the glTF frame, which has the same axes, so positions are scaled by 0.1.
MPFB2 rigs give each bone's head and tail as a *strategy* on the mesh:

- ``CUBE``: the mean of the vertices of the OBJ group ``cube_name`` (a ``joint-*`` helper cube);
- ``MEAN``: the mean of ``vertex_indices``;
- ``VERTEX``: the single vertex ``vertex_index``.

Each bone also has a Blender ``roll``. The rest orientation is Blender's
:func:`~kisekae.avatar.skeleton.vec_roll_to_mat3`, evaluated in Blender's armature space (Z up)
and brought into the glTF frame, so bone-local axes and Euler angles match Blender's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..avatar.skeleton import Skeleton, rest_from_joints
from ..errors import KisekaeError
from .obj import ObjData

#: MakeHuman decimetres to metres.
MH_SCALE = 0.1


def _load_json(src, what: str):
    if isinstance(src, dict):
        return src, what
    path = Path(src)
    try:
        return json.loads(path.read_text(encoding="utf-8")), str(path)
    except FileNotFoundError:
        raise KisekaeError("file not found", path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KisekaeError(f"not valid JSON: {exc}", path) from None


def strategy_vertices(spec: dict, obj: ObjData, source: str, bone: str, end: str) -> np.ndarray:
    """The base-mesh vertex ids whose mean is a bone's head or tail, from an MPFB2 strategy entry."""
    strategy = spec.get("strategy")
    n = len(obj.vertices)
    try:
        if strategy == "CUBE":
            ids = obj.group_vertices(spec["cube_name"])
        elif strategy == "MEAN":
            ids = np.asarray(spec["vertex_indices"], dtype=np.int64)
        elif strategy == "VERTEX":
            ids = np.asarray([spec["vertex_index"]], dtype=np.int64)
        else:
            raise KisekaeError(f"bone {bone!r} {end}: unknown strategy {strategy!r}", source)
    except KeyError as exc:
        raise KisekaeError(f"bone {bone!r} {end}: strategy {strategy} lacks {exc}", source) from None
    except KisekaeError as exc:
        raise KisekaeError(f"bone {bone!r} {end}: {exc.message}", source) from None
    if len(ids) == 0 or ids.min() < 0 or ids.max() >= n:
        raise KisekaeError(f"bone {bone!r} {end}: vertex indices outside the mesh (0..{n - 1})", source)
    return ids


def joint_position(spec: dict, obj: ObjData, source: str, bone: str, end: str) -> np.ndarray:
    """Head or tail position (OBJ units) from an MPFB2 strategy entry."""
    return obj.vertices[strategy_vertices(spec, obj, source, bone, end)].mean(axis=0)


def read_rig(rig, obj: ObjData, *, offset=(0.0, 0.0, 0.0)) -> Skeleton:
    """Build a :class:`Skeleton` from an MPFB2 ``rig.<name>.json`` (path or parsed dict).

    Parameters
    ----------
    rig : path or dict
    obj : ObjData, the MakeHuman base mesh (decimetres) the strategies refer to
    offset : (3,) metres added to every position after scaling (e.g. to put the feet on y = 0)
    """
    data, source = _load_json(rig, "rig")
    if not isinstance(data, dict) or not data:
        raise KisekaeError("a rig file must be a non-empty JSON object of bones", source)
    offset = np.asarray(offset, dtype=np.float64)
    # Order bones so parents precede children (stable: file order among siblings).
    order, placed = [], set()
    pending = list(data)
    while pending:
        progressed = False
        for name in list(pending):
            parent = data[name].get("parent") or ""
            if parent and parent not in data:
                raise KisekaeError(f"bone {name!r} has unknown parent {parent!r}", source)
            if not parent or parent in placed:
                order.append(name)
                placed.add(name)
                pending.remove(name)
                progressed = True
        if not progressed:
            raise KisekaeError(f"parent cycle among bones {pending[:5]}", source)
    heads = np.zeros((len(order), 3))
    tails = np.zeros((len(order), 3))
    rolls = np.zeros(len(order))
    parents = []
    for i, name in enumerate(order):
        bone = data[name]
        try:
            heads[i] = joint_position(bone["head"], obj, source, name, "head") * MH_SCALE + offset
            tails[i] = joint_position(bone["tail"], obj, source, name, "tail") * MH_SCALE + offset
            rolls[i] = float(bone.get("roll", 0.0))
        except (KeyError, TypeError) as exc:
            raise KisekaeError(f"bone {name!r}: missing or malformed {exc}", source) from None
        parent = bone.get("parent") or ""
        parents.append(order.index(parent) if parent else -1)
    rest = rest_from_joints(heads, tails, rolls, order, source)
    return Skeleton(order, np.asarray(parents), rest, tails)


def read_weights(weights, skeleton: Skeleton, n_vertices: int) -> np.ndarray:
    """Dense ``(n_vertices, B)`` float32 weights from an MPFB2 ``weights.<name>.json``."""
    data, source = _load_json(weights, "weights")
    table = data.get("weights") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise KisekaeError("expected an object with a 'weights' mapping of bone -> [[vertex, weight], ...]", source)
    dense = np.zeros((n_vertices, skeleton.n_bones), np.float32)
    for bone, pairs in table.items():
        j = skeleton.bone(bone, source)
        if not pairs:
            continue
        arr = np.asarray(pairs, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != 2 or not np.all(np.isfinite(arr)):
            raise KisekaeError(f"bone {bone!r}: weights must be [vertex, weight] pairs", source)
        v = arr[:, 0].astype(np.int64)
        if v.min() < 0 or v.max() >= n_vertices:
            raise KisekaeError(f"bone {bone!r}: vertex index out of range 0..{n_vertices - 1}", source)
        dense[v, j] += arr[:, 1].astype(np.float32)
    return dense
