"""Offscreen moderngl renderer over plain arrays: RGB images with MSAA, plus id and linear-depth buffers.

Usage::

    from kisekae.render import DrawItem, Renderer, named_camera, materials
    r = Renderer()
    items = [DrawItem(body_xyz, body_tris, materials.skin(), attributes={"tightness": t}, role="body"),
             DrawItem(skirt_xyz, skirt_tris, materials.cloth(), role="garment")]
    cam = named_camera("front", body_xyz, 16 / 9)
    frame = r.draw(items, cam, "720p", ids=True, depth=True)
    frame.rgb      # (720, 1280, 3) uint8, row 0 at the top
"""

from __future__ import annotations

from dataclasses import dataclass, field

import moderngl
import numpy as np

from ..errors import KisekaeError
from ..geom.edges import unique_edges
from ..geom.normals import vertex_normals
from ..validate import as_faces, as_per_vertex, as_points
from . import shading as _sh
from .camera import Camera, resolution as _resolution
from .context import shared_context
from .materials import Material, colormap_table

#: Per-vertex attribute names a :class:`DrawItem` may carry (all optional, default 0).
EFFECT_ATTRIBUTES = ("tightness", "pressure", "compress", "stretch", "ratio", "heat", "wound")
ROLES = ("body", "garment", "other")
#: Normal of a vertex on no (or only degenerate) triangles: lit like a floor, never black.
UP = (0.0, 1.0, 0.0)
_DRAW_ORDER = {"garment": 0, "other": 1, "body": 2}


@dataclass
class WoundMorph:
    """Wound morph inputs of a mesh, run by the shader core's vertex functions.

    Parameters
    ----------
    target_positions : (N,3) float
        Damaged shape per vertex, metres, posed like the mesh (e.g. the bake's target skinned with
        the same matrices).
    target_normals : (N,3) float, optional
        Unit normals of the damaged shape; computed from ``target_positions`` when omitted.
    parts : (N,) int, optional
        Body part id per vertex (hit loop), default 0.
    part_reach, part_gain : (P,) float, optional
        Per body part: hole-size multiplier for hits on the same part, damage multiplier (default 1).
    hits : (H,4) float, optional
        Posed hit points (metres) and the part id each hit landed on; at most 32. The vertex stage
        runs the core's hit loop and morphs by ``max(p, loop)``, ``p`` being the ``wound`` attribute.
    hole_size : float, default 0.03
        Fully damaged radius, metres.
    hole_intensity : float, default 40
        1 / fall-off width, 1/metres.
    tint_distance : float, default 0.01
        The wound tint is ``p * clip(|target - position| / tint_distance, 0, 1)``: only skin that the
        morph moves turns wound-coloured (metres; 0 tints by ``p`` alone).
    encoding : (int, (3,), (3,)), optional
        Set by :meth:`from_encoded`: the targets hold the baked data as a game reads it and the vertex
        stage decodes them with the core (``KISEKAE_WOUND_*`` code, bounds min, bounds max in metres).
    """

    target_positions: object
    target_normals: object = None
    parts: object = None
    part_reach: object = (1.0,)
    part_gain: object = (1.0,)
    hits: object = None
    hole_size: float = 0.03
    hole_intensity: float = 40.0
    tint_distance: float = 0.01
    encoding: tuple | None = None

    @classmethod
    def from_encoded(cls, encoded, **kwargs) -> "WoundMorph":
        """Wound morph read from a bake's encoding, decoded on the GPU by the shader core.

        Parameters
        ----------
        encoded : kisekae.wound.encode.Encoded
            One encoding of :func:`kisekae.wound.bake.bake` (``article8``, ``delta8``, ``delta16``,
            ``half`` or ``float``). Its vertex colours and texels are passed per vertex exactly as a GPU
            reads them (unorm values in 0..1, floats as stored); body part ids come from the colour alpha.
            The targets are in the bake's (bind) space: draw the mesh in that space (e.g. the rest pose).
        **kwargs
            Other :class:`WoundMorph` fields (hits, hole size, ...).
        """
        from ..wound.encode import ENCODINGS

        names = list(ENCODINGS)
        if encoded.name not in names:
            raise KisekaeError(f"unknown encoding {encoded.name!r}; known: {', '.join(names)}", "encoded")
        _, pos_store, nrm_store, _ = ENCODINGS[encoded.name]
        n = len(encoded.vertex_colors)

        def texels(tex, store):
            rows = np.asarray(tex).reshape(-1, 3)[:n]
            if store.startswith("unorm"):
                return (rows.astype(np.float64) / (255.0 if store == "unorm8" else 65535.0)).astype(np.float32)
            return rows.astype(np.float32)

        if pos_store == "vertex_color8":
            c = (encoded.vertex_colors[:, :3].astype(np.float64) / 255.0).astype(np.float32)
        else:
            c = texels(encoded.position_texture, pos_store)
        cn = texels(encoded.normal_texture, nrm_store)
        parts = encoded.vertex_colors[:, 3].astype(np.int64)
        kwargs.setdefault("part_reach", np.ones(int(parts.max()) + 1 if n else 1))
        kwargs.setdefault("part_gain", np.ones(int(parts.max()) + 1 if n else 1))
        code = {"article8": 0, "delta8": 1, "delta16": 2, "half": 3, "float": 4}[encoded.name]
        return cls(c, target_normals=cn, parts=parts,
                   encoding=(code, np.asarray(encoded.bounds_min, np.float32), np.asarray(encoded.bounds_max, np.float32)),
                   **kwargs)

    def check(self, n: int, faces, label: str) -> "WoundMorph":
        """Validate against a mesh of ``n`` vertices (returns self, arrays converted)."""
        from ..validate import positive
        from .shading import MAX_HITS

        self.target_positions = as_points(self.target_positions, f"{label}.wound.target_positions", dtype=np.float32)
        if len(self.target_positions) != n:
            raise KisekaeError(f"expected {n} target positions, got {len(self.target_positions)}",
                               f"{label}.wound.target_positions")
        if self.target_normals is None:
            self.target_normals = vertex_normals(self.target_positions, faces, fallback=UP)
        else:
            self.target_normals = as_per_vertex(self.target_normals, n, f"{label}.wound.target_normals",
                                                dtype=np.float32)
        reach = np.atleast_1d(np.asarray(self.part_reach, np.float32))
        gain = np.atleast_1d(np.asarray(self.part_gain, np.float32))
        if reach.ndim != 1 or gain.shape != reach.shape or not (np.all(np.isfinite(reach)) and np.all(np.isfinite(gain))):
            raise KisekaeError(f"part_reach and part_gain must be equal-length finite vectors, got {reach.shape} "
                               f"and {gain.shape}", f"{label}.wound")
        self.part_reach, self.part_gain = reach, gain
        parts = np.zeros(n, np.int64) if self.parts is None else np.asarray(self.parts)
        if parts.shape != (n,) or not np.issubdtype(parts.dtype, np.integer):
            raise KisekaeError(f"expected ({n},) integer part ids, got {parts.shape} {parts.dtype}", f"{label}.wound.parts")
        if n and (parts.min() < 0 or parts.max() >= len(reach)):
            raise KisekaeError(f"part ids must be in 0..{len(reach) - 1}", f"{label}.wound.parts")
        self.parts = parts.astype(np.int64)
        if self.hits is not None:
            h = np.asarray(self.hits, np.float32)
            if h.ndim != 2 or h.shape[1] != 4 or not np.all(np.isfinite(h)):
                raise KisekaeError(f"expected (H,4) finite hits (x, y, z, part), got {h.shape}", f"{label}.wound.hits")
            if len(h) > MAX_HITS:
                raise KisekaeError(f"at most {MAX_HITS} hits per draw, got {len(h)}", f"{label}.wound.hits")
            self.hits = h
        self.hole_size = positive(self.hole_size, f"{label}.wound.hole_size", allow_zero=True)
        self.hole_intensity = positive(self.hole_intensity, f"{label}.wound.hole_intensity")
        self.tint_distance = positive(self.tint_distance, f"{label}.wound.tint_distance", allow_zero=True)
        return self


@dataclass
class DrawItem:
    """One mesh to draw.

    Parameters
    ----------
    positions : (N,3) float
        Vertex positions, metres, world (glTF frame).
    faces : (F,3) int
        Triangles, counter-clockwise seen from outside (outward front faces).
    material : Material, default skin
    normals : (N,3) float, optional
        Unit vertex normals; computed (area-weighted) when omitted.
    attributes : dict[str, (N,) float], optional
        ``tightness`` (garment tightness mask) and ``pressure`` (body pressure map), 0..1: the skin's
        tight look; ``compress`` and ``stretch`` (0..1) or ``ratio`` (the tension ratio T, mapped by
        the shader core with the material's ``tension_params``; 0 = not given): tension colours and
        the wrinkle blend; ``wound`` (0..1): the wound morph parameter p; ``heat``: any scalar.
    edges : (E,2) int, optional
        Edges drawn by the ``wireframe`` material (e.g. quad edges); default: triangle edges.
    role : str, default ``"other"``
        ``body``, ``garment`` or ``other``; the poke-through check uses it.
    name : str
        Label.
    wound : WoundMorph, optional
        Damaged target (and optional hits) for the core's wound morph in the vertex stage.
    """

    positions: object
    faces: object
    material: Material = field(default_factory=Material)
    normals: object = None
    attributes: dict | None = None
    edges: object = None
    role: str = "other"
    name: str = ""
    wound: WoundMorph | None = None

    def __post_init__(self):
        label = self.name or "mesh"
        self.positions = as_points(self.positions, f"{label}.positions", dtype=np.float32)
        n = len(self.positions)
        self.faces = as_faces(self.faces, n, f"{label}.faces")
        if not isinstance(self.material, Material):
            raise KisekaeError(f"expected a kisekae.render.Material, got {type(self.material).__name__}",
                               f"{label}.material")
        if self.normals is not None:
            self.normals = as_per_vertex(self.normals, n, f"{label}.normals", dtype=np.float32)
            if self.normals.shape != (n, 3):
                raise KisekaeError(f"expected shape ({n}, 3), got {self.normals.shape}", f"{label}.normals")
        attrs = {}
        for key, value in (self.attributes or {}).items():
            if key not in EFFECT_ATTRIBUTES:
                raise KisekaeError(f"unknown attribute {key!r}; known: {', '.join(EFFECT_ATTRIBUTES)}",
                                   f"{label}.attributes")
            a = as_per_vertex(value, n, f"{label}.attributes[{key!r}]", dtype=np.float32)
            if a.ndim != 1:
                raise KisekaeError(f"expected shape ({n},), got {a.shape}", f"{label}.attributes[{key!r}]")
            attrs[key] = a
        self.attributes = attrs
        if self.edges is not None:
            self.edges = as_faces(self.edges, n, f"{label}.edges", corners=2)
        if self.role not in ROLES:
            raise KisekaeError(f"unknown role {self.role!r}; known: {', '.join(ROLES)}", f"{label}.role")
        if self.wound is not None:
            if not isinstance(self.wound, WoundMorph):
                raise KisekaeError(f"expected a WoundMorph, got {type(self.wound).__name__}", f"{label}.wound")
            self.wound.check(n, self.faces, label)

    def vertex_data(self) -> np.ndarray:
        """Interleaved vertex buffer, (N, :data:`~kisekae.render.shading.STRIDE`) float32."""
        n = len(self.positions)
        out = np.zeros((n, _sh.STRIDE), np.float32)
        normals = self.normals if self.normals is not None else vertex_normals(self.positions, self.faces, fallback=UP)
        out[:, 0:3] = self.positions
        out[:, 3:6] = normals
        for col, key in ((6, "tightness"), (7, "pressure"), (8, "compress"), (9, "stretch"), (10, "ratio"),
                         (11, "heat"), (12, "wound")):
            if key in self.attributes:
                out[:, col] = self.attributes[key]
        if self.wound is not None:
            w = self.wound
            out[:, 13] = w.parts
            out[:, 14:17] = w.target_positions
            out[:, 17:20] = w.target_normals
            out[:, 20] = w.part_reach[w.parts]
            out[:, 21] = w.part_gain[w.parts]
        else:
            out[:, 14:17] = self.positions
            out[:, 17:20] = normals
            out[:, 20:22] = 1.0
        return out


def as_item(item) -> DrawItem:
    """Accept a :class:`DrawItem` or a tuple ``(positions, normals, faces, material[, attributes])``."""
    if isinstance(item, DrawItem):
        return item
    if isinstance(item, (tuple, list)) and 4 <= len(item) <= 5:
        return DrawItem(positions=item[0], normals=item[1], faces=item[2], material=item[3],
                        attributes=item[4] if len(item) == 5 else None)
    raise KisekaeError("expected a DrawItem or (positions, normals, faces, material[, attributes])", "meshes")


@dataclass
class Frame:
    """A rendered image and, when asked for, its id and depth buffers (row 0 at the top).

    Attributes
    ----------
    rgb : (H,W,3) uint8
    ids : (H,W) int32 or None
        ``k + 1`` where item ``k`` is the nearest surface, negated where that surface is a back
        face, ``0`` for background. Sampled at pixel centres (no MSAA).
    depth : (H,W) float32 or None
        Linear view depth of the nearest surface, metres (``inf`` for background).
    camera : Camera
    """

    rgb: np.ndarray
    ids: np.ndarray | None
    depth: np.ndarray | None
    camera: Camera


class Renderer:
    """Offscreen renderer. Keeps GL programs and framebuffers between frames.

    Parameters
    ----------
    ctx : moderngl.Context, optional
        Defaults to the process-wide EGL context (:func:`kisekae.render.context.shared_context`).
    samples : int, default 4
        MSAA samples for colour images (clamped to what the driver offers; 0 disables MSAA).
    shading : CoreShading, optional
        The surface program, cross-compiled from the HLSL shader core (default
        :class:`~kisekae.render.shading.CoreShading` on the installed core).
    background : (3,) float, default light grey
        Clear colour, 0..1.
    """

    def __init__(self, ctx=None, *, samples: int = 4, shading=None, background=(0.93, 0.93, 0.94)):
        self.ctx = ctx or shared_context()
        self.samples = int(max(0, min(int(samples), self.ctx.max_samples)))
        self.shading = shading or _sh.CoreShading()
        self.background = tuple(float(c) for c in background)
        ctx = self.ctx
        self._programs: dict[tuple, object] = {}
        ref = self._program(_sh.ALL_FEATURES)
        self._vubo = ctx.buffer(reserve=ref[_sh.VERTEX_BLOCK].size)
        self._pubo = ctx.buffer(reserve=ref[_sh.PIXEL_BLOCK].size)
        self._wire = ctx.program(vertex_shader=_sh.WIRE_VS, fragment_shader=_sh.WIRE_FS)
        self._id = ctx.program(vertex_shader=_sh.ID_VS, fragment_shader=_sh.ID_FS)
        self._near = ctx.program(vertex_shader=_sh.ID_VS, fragment_shader=_sh.NEAREST_FS)
        self._poke = ctx.program(vertex_shader=_sh.FULLSCREEN_VS, fragment_shader=_sh.POKE_FS)
        self._poke_vao = ctx.vertex_array(self._poke, [])
        self._cmaps: dict[str, object] = {}
        self._targets: dict[tuple, dict] = {}
        self._meshes: dict[tuple, dict] = {}
        #: How many meshes' GL buffers stay cached (least recently used are freed first).
        self.mesh_cache_size = 16

    # ------------------------------------------------------------------ resources
    def _program(self, features):
        """The linked GL program of one fragment variant (see :func:`kisekae.render.shading.features_of`)."""
        prog = self._programs.get(features)
        if prog is None:
            src = self.shading.program(features)
            prog = self.ctx.program(vertex_shader=src.vertex_shader, fragment_shader=src.fragment_shader)
            if _sh.VERTEX_BLOCK in prog:
                prog[_sh.VERTEX_BLOCK].binding = _sh.VERTEX_BINDING
            if _sh.PIXEL_BLOCK in prog:
                prog[_sh.PIXEL_BLOCK].binding = _sh.PIXEL_BINDING
            if _sh.COLORMAP_SAMPLER in prog:
                prog[_sh.COLORMAP_SAMPLER].value = 0
            self._programs[features] = prog
        return prog

    def _cmap(self, name):
        tex = self._cmaps.get(name)
        if tex is None:
            table = colormap_table(name)
            tex = self.ctx.texture((256, 1), 3, table.tobytes())
            tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
            tex.repeat_x = tex.repeat_y = False
            self._cmaps[name] = tex
        return tex

    def _target(self, kind: str, size: tuple[int, int]):
        key = (kind, size, self.samples)
        t = self._targets.get(key)
        if t is not None:
            return t
        ctx = self.ctx
        if len(self._targets) > 6:  # keep memory bounded when many sizes are used (4K buffers are big)
            self.release_targets()
        if kind == "color":
            resolve = ctx.framebuffer(color_attachments=[ctx.renderbuffer(size, 4)],
                                      depth_attachment=ctx.depth_renderbuffer(size))
            if self.samples > 1:
                msaa = ctx.framebuffer(color_attachments=[ctx.renderbuffer(size, 4, samples=self.samples)],
                                       depth_attachment=ctx.depth_renderbuffer(size, samples=self.samples))
            else:
                msaa = resolve
            t = {"draw": msaa, "read": resolve}
        elif kind == "poke":  # nearest front/back depths of the body and of the garments, R8 verdict
            body = ctx.framebuffer(color_attachments=[ctx.texture(size, 2, dtype="f4")])
            solid = ctx.framebuffer(color_attachments=[ctx.texture(size, 2, dtype="f4")])
            garment = ctx.framebuffer(color_attachments=[ctx.texture(size, 2, dtype="f4")])
            verdict = ctx.framebuffer(color_attachments=[ctx.renderbuffer(size, 1)])
            t = {"draw": body, "read": body, "solid": solid, "garment": garment, "verdict": verdict}
        else:
            fbo = ctx.framebuffer(color_attachments=[ctx.renderbuffer(size, 2, dtype="f4")],
                                  depth_attachment=ctx.depth_renderbuffer(size))
            t = {"draw": fbo, "read": fbo}
        self._targets[key] = t
        return t

    def release_targets(self):
        """Free the cached framebuffers (they are re-created on demand)."""
        for t in self._targets.values():
            for fbo in {id(f): f for f in t.values()}.values():
                for att in list(fbo.color_attachments) + [fbo.depth_attachment]:
                    if att is not None:
                        att.release()
                fbo.release()
        self._targets.clear()

    def release(self):
        """Free every GL object this renderer owns."""
        self.release_targets()
        for entry in self._meshes.values():
            self._release_mesh(entry)
        self._meshes.clear()
        for tex in self._cmaps.values():
            tex.release()
        self._cmaps.clear()
        for p in (*self._programs.values(), self._poke_vao, self._poke, self._near, self._wire, self._id, self._vubo,
                  self._pubo):
            p.release()
        self._programs.clear()

    # ------------------------------------------------------------------ drawing
    @staticmethod
    def _set(prog, values: dict):
        for name, value in values.items():
            if name in prog:
                prog[name].value = value

    def _gpu_mesh(self, item: DrawItem) -> dict:
        """Cached GL objects for an item's connectivity; the vertex data is rewritten every frame."""
        faces = item.faces
        key = (len(item.positions), faces.shape, hash(faces.tobytes()))
        entry = self._meshes.pop(key, None)  # re-inserted below: most recently used last
        ctx = self.ctx
        if entry is None:
            vbo = ctx.buffer(reserve=len(item.positions) * _sh.STRIDE * 4, dynamic=True)
            ibo = ctx.buffer(faces.tobytes())
            entry = {
                "vbo": vbo, "ibo": ibo,
                "surface": {},  # fragment variant -> vertex array
                "id": ctx.vertex_array(self._id, [(vbo, f"3f {4 * (_sh.STRIDE - 3)}x", "in_position")],
                                       index_buffer=ibo, index_element_size=4),
                "edges": {},
            }
            while len(self._meshes) >= self.mesh_cache_size:
                self._release_mesh(self._meshes.pop(next(iter(self._meshes))))
        self._meshes[key] = entry
        return entry

    @staticmethod
    def _release_mesh(entry):
        for obj in [*entry["surface"].values(), entry["id"], *([entry["near"]] if "near" in entry else []),
                    *[v for e in entry["edges"].values() for v in e]]:
            obj.release()
        entry["vbo"].release()
        entry["ibo"].release()

    def _wire_vao(self, entry, item: DrawItem):
        edges = item.edges if item.edges is not None else unique_edges(item.faces, n_vertices=len(item.positions))
        ekey = (edges.shape, hash(np.ascontiguousarray(edges).tobytes()))
        if ekey not in entry["edges"]:
            ebo = self.ctx.buffer(np.ascontiguousarray(edges, dtype=np.int32).tobytes())
            vao = self.ctx.vertex_array(self._wire, [(entry["vbo"], f"3f {4 * (_sh.STRIDE - 3)}x", "in_position")],
                                        index_buffer=ebo, index_element_size=4, skip_errors=True)
            entry["edges"][ekey] = (vao, ebo)
        return entry["edges"][ekey][0]

    def _draw_surfaces(self, items, camera, aspect, vp):
        key, fill = _sh.light_directions(camera)
        self._vubo.bind_to_uniform_block(_sh.VERTEX_BINDING)
        self._pubo.bind_to_uniform_block(_sh.PIXEL_BINDING)
        # garments first: the body fragments they hide then fail the early depth test (less shading)
        for item in sorted(items, key=lambda it: _DRAW_ORDER[it.role]):
            entry = self._gpu_mesh(item)
            entry["vbo"].write(item.vertex_data().tobytes())
            w = item.wound
            if w is None:
                self._vubo.write(self.shading.vertex_block(vp))
            else:
                self._vubo.write(self.shading.vertex_block(vp, hole_size=w.hole_size, hole_intensity=w.hole_intensity,
                                                           hits=w.hits, tint_distance=w.tint_distance,
                                                           encoding=w.encoding))
            self._pubo.write(self.shading.pixel_block(item.material, camera.eye, key, fill))
            self._cmap(item.material.colormap).use(0)
            features = _sh.features_of(item)
            vao = entry["surface"].get(features)
            if vao is None:
                vao = self.ctx.vertex_array(self._program(features),
                                            [(entry["vbo"], _sh.BUFFER_FORMAT, *[a for a, _ in _sh.ATTRIBUTES])],
                                            index_buffer=entry["ibo"], index_element_size=4, skip_errors=True)
                entry["surface"][features] = vao
            vao.render()
            if item.material.kind == "wireframe":
                vao = self._wire_vao(entry, item)
                self._wire["u_view_proj"].write(vp.T.astype(np.float32).tobytes())
                self._wire["u_depth_bias"].value = 2e-4
                self._wire["u_color"].value = item.material.wire_color
                vao.render(moderngl.LINES)

    def draw(self, meshes, camera: Camera, size="720p", *, ids: bool = False, depth: bool = False) -> Frame:
        """Render meshes seen by a camera.

        Parameters
        ----------
        meshes : sequence of DrawItem or (positions, normals, faces, material[, attributes])
        camera : Camera
        size : str or (int, int), default ``"720p"``
            Resolution name (:data:`~kisekae.render.camera.RESOLUTIONS`), ``"WxH"`` or ``(width, height)``.
        ids, depth : bool
            Also render the id buffer and the linear depth (one extra pass without MSAA).

        Returns
        -------
        Frame
        """
        items = [as_item(m) for m in meshes]
        if not isinstance(camera, Camera):
            raise KisekaeError(f"expected a kisekae.render.Camera, got {type(camera).__name__}", "camera")
        w, h = _resolution(size)
        vp = camera.view_projection(w / h)
        ctx = self.ctx
        t = self._target("color", (w, h))
        t["draw"].use()
        t["draw"].clear(*self.background, 1.0, depth=1.0)
        ctx.enable(ctx.DEPTH_TEST)
        ctx.disable(ctx.CULL_FACE)
        self._draw_surfaces(items, camera, w / h, vp)
        if t["draw"] is not t["read"]:
            ctx.copy_framebuffer(t["read"], t["draw"])
        raw = t["read"].read(components=3, alignment=1)
        rgb = np.frombuffer(raw, np.uint8).reshape(h, w, 3)[::-1].copy()
        id_img = depth_img = None
        if ids or depth:
            id_img, depth_img = self.id_depth(items, camera, (w, h))
        return Frame(rgb=rgb, ids=id_img if ids else None, depth=depth_img if depth else None, camera=camera)

    def _id_pass(self, items, item_ids, camera, size, fbo):
        """Draw ids (negated on back faces) and linear depth of ``items`` into ``fbo`` (RG32F)."""
        w, h = size
        ctx = self.ctx
        fbo.use()
        fbo.clear(0.0, -1.0, 0.0, 0.0, depth=1.0)
        ctx.enable(ctx.DEPTH_TEST)
        ctx.disable(ctx.CULL_FACE)
        vp = camera.view_projection(w / h)
        self._id["u_view_proj"].write(vp.T.astype(np.float32).tobytes())
        self._id["u_view"].write(camera.view_matrix().T.astype(np.float32).tobytes())
        for item, iid in zip(items, item_ids):
            entry = self._gpu_mesh(item)
            self._write_positions(entry, item)
            self._id["u_id"].value = float(iid)
            entry["id"].render()

    def _write_positions(self, entry, item):
        data = np.zeros((len(item.positions), _sh.STRIDE), np.float32)
        data[:, :3] = item.positions
        entry["vbo"].write(data.tobytes())

    def _nearest_pass(self, items, camera, size, fbo):
        """Nearest front-face and back-face linear depth of ``items`` in one pass (MIN blending, no depth test)."""
        w, h = size
        ctx = self.ctx
        fbo.use()
        fbo.clear(1e30, 1e30, 0.0, 0.0)
        ctx.disable(ctx.DEPTH_TEST)
        ctx.disable(ctx.CULL_FACE)
        ctx.enable(ctx.BLEND)
        ctx.blend_equation = moderngl.MIN
        vp = camera.view_projection(w / h)
        self._near["u_view_proj"].write(vp.T.astype(np.float32).tobytes())
        self._near["u_view"].write(camera.view_matrix().T.astype(np.float32).tobytes())
        for item in items:
            entry = self._gpu_mesh(item)
            self._write_positions(entry, item)
            if "near" not in entry:
                entry["near"] = ctx.vertex_array(self._near, [(entry["vbo"], f"3f {4 * (_sh.STRIDE - 3)}x",
                                                               "in_position")],
                                                 index_buffer=entry["ibo"], index_element_size=4)
            entry["near"].render()
        ctx.blend_equation = moderngl.FUNC_ADD
        ctx.disable(ctx.BLEND)
        ctx.enable(ctx.DEPTH_TEST)

    def poke_masks(self, body, garments, camera: Camera, size="720p", *, tolerance_m: float = 1e-4,
                   reuse_body: bool = False, solid=None):
        """Covered and poke-through masks computed on the GPU (one 8-bit readback).

        Same definition as :func:`kisekae.render.poke.poke_mask` on the id/depth passes: a pixel is
        covered where the nearest garment surface is a front face, and pokes through where it is
        covered, the nearest body surface is nearer by more than ``tolerance_m`` (metres), and the
        nearest body *back* face lies beyond the garment surface (the garment point is inside the body,
        not behind a body part that is outside the garment).

        Parameters
        ----------
        body, garments : sequences of DrawItem
        camera : Camera
        size : str or (int, int)
        tolerance_m : float
        reuse_body : bool
            Keep the body pass of the previous call (same body, camera and size), e.g. per garment.
        solid : sequence of DrawItem, optional
            The whole body, for the inside test, when ``body`` is what is drawn with covered skin left out
            (culling changes what shows, not what is inside: a knee in front of a skirt whose back faces are culled
            is still outside the cloth). Default: ``body`` itself.

        Returns
        -------
        covered, poke : (H,W) bool
            Row 0 at the top.
        """
        body = [as_item(b) for b in body]
        garments = [as_item(g) for g in garments]
        w, h = _resolution(size)
        t = self._target("poke", (w, h))
        if not reuse_body:
            self._nearest_pass(body, camera, (w, h), t["draw"])
            if solid is not None:
                self._nearest_pass([as_item(b) for b in solid], camera, (w, h), t["solid"])
        self._nearest_pass(garments, camera, (w, h), t["garment"])
        ctx = self.ctx
        t["verdict"].use()
        t["verdict"].clear(0.0, 0.0, 0.0, 0.0)
        ctx.disable(ctx.DEPTH_TEST)
        # only pixels inside the garments' projected bounding box can be covered
        ctx.scissor = _screen_box(np.concatenate([g.positions for g in garments]), camera, (w, h))
        t["draw"].color_attachments[0].use(0)
        t["garment"].color_attachments[0].use(1)
        t["solid" if solid is not None else "draw"].color_attachments[0].use(2)
        self._poke["u_body"].value = 0
        self._poke["u_garment"].value = 1
        self._poke["u_solid"].value = 2
        self._poke["u_tol"].value = float(tolerance_m)
        self._poke_vao.render(moderngl.TRIANGLES, vertices=3)
        ctx.scissor = None
        ctx.enable(ctx.DEPTH_TEST)
        v = np.frombuffer(t["verdict"].read(components=1, alignment=1), np.uint8).reshape(h, w)[::-1]
        return v >= 64, v >= 192

    def id_depth(self, meshes, camera: Camera, size="720p", *, item_ids=None):
        """Render the id and linear-depth buffers (pixel centres, no MSAA).

        Parameters
        ----------
        meshes : sequence of DrawItem (or tuples, see :func:`as_item`)
        camera : Camera
        size : str or (int, int)
        item_ids : sequence of int, optional
            Positive id written for each item (default ``1..len(meshes)``); must be < 2**24.

        Returns
        -------
        ids : (H,W) int32
            The nearest item's id, negated on back faces, 0 on background.
        depth : (H,W) float32
            Linear view depth of the nearest surface, metres; ``inf`` on background.
        """
        items = [as_item(m) for m in meshes]
        if item_ids is None:
            item_ids = range(1, len(items) + 1)
        item_ids = [int(i) for i in item_ids]
        if len(item_ids) != len(items) or any(not (0 < i < 2 ** 24) for i in item_ids):
            raise KisekaeError("need one id in 1..2**24-1 per mesh", "item_ids")
        w, h = _resolution(size)
        fbo = self._target("id", (w, h))["draw"]
        self._id_pass(items, item_ids, camera, (w, h), fbo)
        data = np.frombuffer(fbo.read(components=2, dtype="f4", alignment=1), np.float32).reshape(h, w, 2)[::-1]
        ids = data[..., 0].astype(np.int32)
        dep = data[..., 1].copy()
        dep[ids == 0] = np.inf
        return ids, dep


def _screen_box(points, camera: Camera, size) -> tuple[int, int, int, int] | None:
    """Pixel box ``(x, y, w, h)`` (GL window coordinates, y up) holding the projected points, 2 px padded.

    ``None`` (the whole image) when a point lies behind the camera's near plane.
    """
    w, h = size
    hp = np.c_[points, np.ones(len(points))] @ camera.view_projection(w / h).T
    if len(hp) == 0 or np.any(hp[:, 3] <= camera.near * 0.5):
        return None
    ndc = hp[:, :2] / hp[:, 3:]
    lo = np.floor((np.clip(ndc.min(axis=0), -1, 1) * 0.5 + 0.5) * (w, h)) - 2
    hi = np.ceil((np.clip(ndc.max(axis=0), -1, 1) * 0.5 + 0.5) * (w, h)) + 2
    x0, y0 = int(max(lo[0], 0)), int(max(lo[1], 0))
    x1, y1 = int(min(hi[0], w)), int(min(hi[1], h))
    return (x0, y0, max(x1 - x0, 0), max(y1 - y0, 0))


_default: Renderer | None = None


def default_samples(ctx=None) -> int:
    """MSAA samples of the default path: 0 on a software rasterizer (llvmpipe), 4 on a GPU.

    llvmpipe's MSAA costs about 1 microsecond per triangle whatever the image size (a 33k-triangle
    1024^2 frame goes from ~30 ms to ~100 ms), so the default path there renders without it; the
    comparison sheets downscale their cells (Lanczos), which smooths edges anyway.
    """
    from .context import gl_info

    return 0 if gl_info(ctx)["software"] else 4


def default_renderer() -> Renderer:
    """A process-wide :class:`Renderer` on the shared context, with :func:`default_samples` MSAA."""
    global _default
    if _default is None:
        _default = Renderer(samples=default_samples())
    return _default


def draw(meshes, camera: Camera, size="720p", *, ids: bool = False, depth: bool = False) -> Frame:
    """Render with the process-wide renderer; see :meth:`Renderer.draw`."""
    return default_renderer().draw(meshes, camera, size, ids=ids, depth=depth)
