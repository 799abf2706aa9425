"""The tension operator and the frame-change handler that keeps live tension maps up to date."""

from __future__ import annotations

import time

import bpy
from bpy.app.handlers import persistent

from ...errors import KisekaeError
from ...tension.edge import TensionPlan
from . import meshio

#: Per-object tension plans (rest-pose set-up), keyed by the object's full name.
_PLANS: dict = {}
#: The parameters last given to a plan (keyed by id of the plan; one entry).
_PARAMS: dict = {}


def rest_positions(obj, settings, context):
    """(N, 3) float32 object-space rest positions for the chosen rest source."""
    n = len(obj.data.vertices)
    if settings.rest_source == "BASIS":
        return meshio.rest_local(obj)
    if settings.rest_source == "OBJECT":
        ref = meshio.require_mesh(settings.rest_object, f"{obj.name}: Reference")
        rest = meshio.evaluated_local(ref, context.evaluated_depsgraph_get())
        if len(rest) != n:
            raise KisekaeError(f"has {len(rest)} vertices, {obj.name} has {n}", ref.name)
        return rest
    scene = context.scene
    frame = scene.frame_current
    try:
        rest = meshio.evaluated_local(obj, meshio.frame_set(scene, 0, context))
    finally:
        scene.frame_set(frame)
    return rest


def build_plan(obj, context) -> TensionPlan:
    """Build (and keep) the object's plan from its rest source and Blender edges (no welding, as Blender)."""
    s = obj.kisekae_tension
    plan = TensionPlan(rest_positions(obj, s, context), edges=meshio.edges(obj), weld=False)
    _PARAMS.clear()  # (a new plan may reuse a freed plan's id)
    _PLANS[obj.name_full] = plan
    return plan


def update_tension(obj, depsgraph, plan: TensionPlan) -> None:
    """Evaluate the plan on the object's evaluated positions and write compress, stretch and the colour."""
    s = obj.kisekae_tension
    params = (s.falloff, s.stretch_area, s.compress_area, s.weight_limit)
    if _PARAMS.get(id(plan)) != params:  # validating them costs 0.1 ms; do it when they change
        plan.set_params(*params)
        _PARAMS.clear()
        _PARAMS[id(plan)] = params
    out = plan.evaluate(meshio.evaluated_local(obj, depsgraph), name=obj.name)
    me = obj.data
    meshio.write_point_float(me, "compress", out.compress)
    meshio.write_point_float(me, "stretch", out.stretch)
    meshio.write_point_color(me, s.color_name or "Tension Map", out.color)
    me.update()


class KISEKAE_OT_tension(bpy.types.Operator):
    """Write the compress and stretch maps and a tension colour on the active mesh, like cgvirus's "Tension Map" node group"""

    bl_idname = "kisekae.tension"
    bl_label = "Compute Tension"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "MESH"

    def execute(self, context):
        obj = context.object
        t0 = time.perf_counter()
        try:
            plan = build_plan(obj, context)
            update_tension(obj, context.evaluated_depsgraph_get(), plan)
        except KisekaeError as exc:
            self.report({"ERROR"}, f"kisekae: {exc}")
            return {"CANCELLED"}
        obj.kisekae_tension.last_ms = (time.perf_counter() - t0) * 1e3
        sync_handler()
        self.report({"INFO"}, f"kisekae: tension on {obj.name} ({len(obj.data.vertices)} vertices)")
        return {"FINISHED"}


_BUSY = []


@persistent
def on_frame_change(scene, depsgraph=None):
    """Recompute every object whose tension is live (playback, scrubbing, renders).

    Building a plan with the rest from frame 0 changes the frame itself; the handler ignores
    the frame changes it causes.
    """
    if _BUSY:
        return
    _BUSY.append(True)
    try:
        _update_live(scene, depsgraph or bpy.context.evaluated_depsgraph_get())
    finally:
        _BUSY.clear()


def _update_live(scene, dg):
    for obj in scene.objects:
        if obj.type != "MESH" or not obj.kisekae_tension.live:
            continue
        plan = _PLANS.get(obj.name_full)
        try:
            if plan is None or plan.n_vertices != len(obj.data.vertices):
                plan = build_plan(obj, bpy.context)
            t0 = time.perf_counter()
            update_tension(obj, dg, plan)
            obj.kisekae_tension.last_ms = (time.perf_counter() - t0) * 1e3
        except KisekaeError as exc:
            print(f"kisekae: live tension off for {obj.name}: {exc}")
            obj.kisekae_tension.live = False


def sync_handler() -> None:
    """Install the frame-change handler when some object is live, remove it when none is."""
    handlers = bpy.app.handlers.frame_change_post
    live = any(o.type == "MESH" and o.kisekae_tension.live for o in bpy.data.objects)
    if live and on_frame_change not in handlers:
        handlers.append(on_frame_change)
    elif not live and on_frame_change in handlers:
        handlers.remove(on_frame_change)


CLASSES = (KISEKAE_OT_tension,)


def register():
    for c in CLASSES:
        bpy.utils.register_class(c)


def unregister():
    if on_frame_change in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(on_frame_change)
    _PLANS.clear()
    for c in reversed(CLASSES):
        bpy.utils.unregister_class(c)
