"""The fix-clipping and check operators (body + selected garments), with their report."""

from __future__ import annotations

import json
import os

import bpy
import numpy as np

from ...errors import KisekaeError
from ...outputs import check_outputs
from ...qa.check import json_record
from .. import compute
from ..frames import to_blender
from ..pc2 import write_pc2
from . import meshio

SHAPE_KEY = "kisekae_fix"
CACHE_MODIFIER = "kisekae_cache"


def _params(s, name):
    return compute.fix_params(name, s.use_defaults, margin=s.margin, stiffness=s.stiffness, max_push=s.max_push,
                              skirt_bias=s.skirt_bias, tightness=s.tightness, softness=s.softness)


def _record(rec, garment, stage, frame):
    out = {"garment": garment, "stage": stage, "frame": frame}
    out.update(json_record(rec))
    return out


def _mute_results(garments):
    """Switch off earlier kisekae results so the garments are evaluated as skinning alone leaves them."""
    for g in garments:
        keys = g.data.shape_keys
        if keys is not None and SHAPE_KEY in keys.key_blocks:
            keys.key_blocks[SHAPE_KEY].value = 0.0
        mod = g.modifiers.get(CACHE_MODIFIER)
        if mod is not None:
            mod.show_viewport = False
            mod.show_render = False


def _body_query(body, dg):
    return compute.body_query(meshio.kisekae_mesh(body), meshio.posed_kisekae(body, dg))


def _fix_frame(settings, body, garments, dg, frame):
    """Fix every garment at the evaluated frame; returns ({name: (fixed local, rest-space delta)}, records)."""
    query = _body_query(body, dg)
    results, records = {}, []
    for g in garments:
        mesh = meshio.kisekae_mesh(g)
        posed = meshio.posed_kisekae(g, dg)
        blend_local, blend_k = meshio.armature_blend_kisekae(g)
        fixed, before, after = compute.fix_and_check(query, mesh, posed, _params(settings, g.name), blend_k)
        delta_world = to_blender(fixed.astype(np.float64) - posed.astype(np.float64))
        r = np.array(g.matrix_world, dtype=np.float64)[:3, :3]
        delta_local = delta_world @ np.linalg.inv(r).T
        local_fixed = meshio.to_local(g, to_blender(fixed.astype(np.float64)))
        results[g.name] = (local_fixed, compute.rest_offsets(delta_local, blend_local))
        records += [_record(before, g.name, "before", frame), _record(after, g.name, "after", frame)]
    return results, records


def _write_shape_key(g, rest_delta):
    if g.data.shape_keys is None:
        g.shape_key_add(name="Basis", from_mix=False)
    keys = g.data.shape_keys.key_blocks
    key = keys.get(SHAPE_KEY) or g.shape_key_add(name=SHAPE_KEY, from_mix=False)
    base = meshio.rest_local(g).astype(np.float64)
    key.data.foreach_set("co", (base + rest_delta).astype(np.float32).ravel())
    key.value = 1.0
    key.mute = False


def _apply(g, rest_delta):
    me = g.data
    d = rest_delta.astype(np.float32)
    blocks = list(me.shape_keys.key_blocks) if me.shape_keys is not None else []
    for block in blocks:
        co = meshio._coords(block.data, len(me.vertices))
        block.data.foreach_set("co", (co + d).ravel())
    co = meshio._coords(me.vertices, len(me.vertices))
    me.vertices.foreach_set("co", (co + d).ravel())
    me.update()


def _cache_paths(settings, garments):
    folder = bpy.path.abspath(settings.cache_dir or "//")
    if not folder:
        raise KisekaeError("save the .blend file or choose an absolute cache folder", "Cache folder")
    return [os.path.join(folder, f"kisekae_{bpy.path.clean_name(g.name)}.pc2") for g in garments]


def _add_cache_modifier(g, path, start):
    mod = g.modifiers.get(CACHE_MODIFIER) or g.modifiers.new(CACHE_MODIFIER, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = path
    mod.deform_mode = "OVERWRITE"
    mod.play_mode = "SCENE"
    mod.time_mode = "FRAME"
    mod.frame_start = float(start)
    mod.forward_axis = "POS_Y"
    mod.up_axis = "POS_Z"
    mod.show_viewport = True
    mod.show_render = True


def _selection(context, settings):
    body = meshio.require_mesh(settings.body, "Body")
    garments = meshio.mesh_objects(context, exclude=body)
    if not garments:
        raise KisekaeError("select one or more garment meshes (the body is chosen in the panel)", "Garments")
    return body, garments


class KISEKAE_OT_fix_clipping(bpy.types.Operator):
    """Push the selected garments out of the body with kisekae's exact solver; report before and after"""

    bl_idname = "kisekae.fix_clipping"
    bl_label = "Fix Clipping"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        s = context.scene.kisekae
        try:
            records = self._run(context, s)
        except KisekaeError as exc:
            self.report({"ERROR"}, f"kisekae: {exc}")
            return {"CANCELLED"}
        s.report = json.dumps(records)
        after = [r for r in records if r["stage"] == "after"]
        self.report({"INFO"}, f"kisekae: fixed {len(after)} garment-frames; inside after: "
                              f"{sum(r['inside_count'] for r in after)}")
        return {"FINISHED"}

    def _run(self, context, s):
        scene = context.scene
        body, garments = _selection(context, s)
        if s.output == "CACHE" and s.frame_end < s.frame_start:
            raise KisekaeError("End is before Start", "Bake frames")
        paths = _cache_paths(s, garments) if s.output == "CACHE" else []
        if paths:
            check_outputs(paths, force=s.overwrite)
        _mute_results(garments)
        if s.output != "CACHE":
            results, records = _fix_frame(s, body, garments, context.evaluated_depsgraph_get(), scene.frame_current)
            for g in garments:
                (_apply if s.output == "APPLY" else _write_shape_key)(g, results[g.name][1])
            return records
        frame0 = scene.frame_current
        frames = {g.name: [] for g in garments}
        records = []
        try:
            for f in range(s.frame_start, s.frame_end + 1):
                results, recs = _fix_frame(s, body, garments, meshio.frame_set(scene, f, context), f)
                records += recs
                for g in garments:
                    frames[g.name].append(results[g.name][0])
        finally:
            scene.frame_set(frame0)
        for g, path in zip(garments, paths):
            write_pc2(path, np.stack(frames[g.name]), float(s.frame_start), force=s.overwrite)
            _add_cache_modifier(g, path, s.frame_start)
        return records


class KISEKAE_OT_check(bpy.types.Operator):
    """Measure the selected garments against the body (as kisekae check) and select the offending vertices"""

    bl_idname = "kisekae.check"
    bl_label = "Check"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        s = context.scene.kisekae
        try:
            body, garments = _selection(context, s)
            dg = context.evaluated_depsgraph_get()
            query = _body_query(body, dg)
            records = []
            for g in garments:
                mesh = meshio.kisekae_mesh(g)
                posed = meshio.posed_kisekae(g, dg)
                rec = compute.check_garment(query, mesh, posed, posed)
                meshio.select_vertices(g, compute.offending_vertices(rec, mesh.edges))
                records.append(_record(rec, g.name, "check", context.scene.frame_current))
        except KisekaeError as exc:
            self.report({"ERROR"}, f"kisekae: {exc}")
            return {"CANCELLED"}
        s.report = json.dumps(records)
        self.report({"INFO"}, "kisekae: " + ", ".join(f"{r['garment']} {r['inside_count']} inside, "
                                                      f"{r['edge_crossings']} crossings" for r in records))
        return {"FINISHED"}


CLASSES = (KISEKAE_OT_fix_clipping, KISEKAE_OT_check)


register, unregister = bpy.utils.register_classes_factory(CLASSES)
