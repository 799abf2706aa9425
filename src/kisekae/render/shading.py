"""Shader programs of the renderer: the surface program is cross-compiled from the HLSL shader core.

The surface program (every material) is ``hlsl/kisekae_render.vert.hlsl`` and
``hlsl/kisekae_render.frag.hlsl`` in this package. Both ``#include`` the shader core
(``kisekae/shaders/hlsl/kisekae_core.hlsl``) and call its functions for the effects: the wound morph
and hit loop in the vertex stage, the skin's tight look and the Tension Map mapping in the fragment
stage. :func:`core_program` compiles them at run time with :func:`kisekae.shaders.compile_hlsl`
(glslang HLSL front end -> spirv-val -> spirv-cross GLSL 4.10), cached under a key that hashes this
entry source and every core file, so the renderer always runs the core as it is on disk; there is no
GLSL copy of the effects here. Only two tiny helper programs below are plain GLSL: the wireframe
lines and the id/linear-depth pass (no effects in either).

Per-vertex attribute layout (interleaved float32, :data:`STRIDE` floats per vertex)::

    v_position      (3)  metres, world (posed)
    v_normal        (3)  unit
    v_look          (4)  tightness, pressure, compress, stretch          (each 0..1)
    v_extra         (4)  tension ratio T (0 = none), heat scalar, wound p, body part id
    v_woundPosition (3)  damaged target position, metres (= v_position when there is no wound)
    v_woundNormal   (3)  damaged target normal
    v_woundPart     (2)  reach, gain of the vertex's body part (hit loop)

Uniform blocks (std140): ``KisekaeRenderVertex`` (binding 0: view-projection, wound parameters, hits)
and ``KisekaeRenderPixel`` (binding 1: material, lights, core parameters); see :meth:`CoreShading.vertex_block`
and :meth:`CoreShading.pixel_block`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .materials import KINDS, Material

#: Folder of the renderer's HLSL entry files (they include the shader core).
RENDER_HLSL_DIR = Path(__file__).resolve().parent / "hlsl"
VERTEX_HLSL = RENDER_HLSL_DIR / "kisekae_render.vert.hlsl"
FRAGMENT_HLSL = RENDER_HLSL_DIR / "kisekae_render.frag.hlsl"
#: Most hits the vertex stage's hit loop reads per draw (``KISEKAE_RENDER_MAX_HITS``).
MAX_HITS = 32

#: Attribute names and widths, in buffer order (names as spirv-cross emits them).
ATTRIBUTES: tuple[tuple[str, int], ...] = (
    ("v_position", 3), ("v_normal", 3), ("v_look", 4), ("v_extra", 4), ("v_woundPosition", 3),
    ("v_woundNormal", 3), ("v_woundPart", 2))
#: Floats per vertex.
STRIDE = sum(n for _, n in ATTRIBUTES)
#: moderngl buffer format string for :data:`ATTRIBUTES`.
BUFFER_FORMAT = " ".join(f"{n}f" for _, n in ATTRIBUTES)
#: Uniform block bindings.
VERTEX_BLOCK, PIXEL_BLOCK = "KisekaeRenderVertex", "KisekaeRenderPixel"
VERTEX_BINDING, PIXEL_BINDING = 0, 1
#: Sampler of the heat-map colours in the generated GLSL (spirv-cross combined image-sampler).
COLORMAP_SAMPLER = "SPIRV_Cross_Combined_Colormap_ColormapSampler"


#: Feature switches of the fragment stage (``KISEKAE_RENDER_<name>``), in variant-tuple order.
FEATURES = ("MAP", "DENT", "WRINKLE", "RATIO", "WOUND", "TOON")
#: Every feature on (the reference variant; its uniform blocks size the renderer's buffers).
ALL_FEATURES = (True,) * len(FEATURES)


def features_of(item) -> tuple:
    """The fragment variant a :class:`~kisekae.render.renderer.DrawItem` needs, a tuple of bools.

    A software rasterizer (llvmpipe) executes both sides of every branch, so code for effects a mesh
    does not carry is compiled out instead of skipped: ``MAP`` heat-map/tension kinds, ``DENT`` skin
    with ``tightness``/``pressure``, ``WRINKLE`` skin/cloth with ``compress``/``ratio`` and a wrinkle
    height, ``RATIO`` meshes with ``ratio``, ``WOUND`` skin with ``wound`` or a wound morph,
    ``TOON`` skin/cloth whose preset has toon bands or a contrast exponent other than 1.
    """
    m, a = item.material, item.attributes
    surface = m.kind in ("skin", "cloth")
    return (m.kind in ("heatmap", "tension"),
            m.kind == "skin" and ("tightness" in a or "pressure" in a),
            surface and m.wrinkles and m.preset.wrinkle_amp > 0 and ("compress" in a or "ratio" in a),
            "ratio" in a,
            m.kind == "skin" and ("wound" in a or item.wound is not None),
            surface and (m.preset.bands > 0 or m.preset.contrast != 1.0))


@dataclass(frozen=True)
class CoreProgram:
    """GLSL of one variant of the renderer's surface program, generated from the HLSL files and the core.

    Attributes
    ----------
    vertex_shader, fragment_shader : str
        GLSL 4.10 from spirv-cross.
    key : str
        Cache keys (SHA-256 over the entry source, every core ``.hlsl`` file, defines, flags and tool
        versions) of the vertex and fragment stages, joined by ``+``.
    features : tuple of bool
        The variant, see :data:`FEATURES`.
    """

    vertex_shader: str
    fragment_shader: str
    key: str
    features: tuple = ALL_FEATURES


_PROGRAMS: dict[tuple, CoreProgram] = {}


def core_program(features=ALL_FEATURES, *, core_dir=None, use_cache: bool = True) -> CoreProgram:
    """Cross-compile one variant of the renderer's surface program from HLSL.

    Parameters
    ----------
    features : tuple of bool, default all on
        Which ``KISEKAE_RENDER_*`` switches are on, in :data:`FEATURES` order.
    core_dir : path, optional
        Another copy of the shader core (tests); default the installed ``kisekae/shaders/hlsl``.
    use_cache : bool
        Use the on-disk shader cache of :func:`kisekae.shaders.compile_hlsl`.

    Returns
    -------
    CoreProgram

    Raises
    ------
    KisekaeError
        When the HLSL tools are missing (the message names the packages) or the core does not compile.
    """
    from ..errors import KisekaeError
    from ..shaders import compile_hlsl

    features = tuple(bool(f) for f in features)
    if len(features) != len(FEATURES):
        raise KisekaeError(f"expected {len(FEATURES)} switches ({', '.join(FEATURES)}), got {len(features)}",
                           "features")
    memo = (features, use_cache)
    # compile_hlsl caches by content hash; this memo only skips re-hashing the files within a process
    # and is bypassed whenever a core folder is given explicitly
    if core_dir is None and memo in _PROGRAMS:
        return _PROGRAMS[memo]
    defines = {"KISEKAE_RENDER_MAX_HITS": MAX_HITS}
    defines.update({f"KISEKAE_RENDER_{name}": int(on) for name, on in zip(FEATURES, features)})
    vs = compile_hlsl(VERTEX_HLSL, "vert", defines={"KISEKAE_RENDER_MAX_HITS": MAX_HITS}, glsl_version=410,
                      core_dir=core_dir, use_cache=use_cache)
    fs = compile_hlsl(FRAGMENT_HLSL, "frag", defines=defines, glsl_version=410, core_dir=core_dir,
                      use_cache=use_cache)
    prog = CoreProgram(vs.glsl, fs.glsl, vs.key + "+" + fs.key, features)
    if core_dir is None:
        _PROGRAMS[memo] = prog
    return prog


WIRE_VS = """
#version 330
uniform mat4 u_view_proj;
uniform float u_depth_bias;   // NDC units, pulls lines toward the camera
in vec3 in_position;
void main() {
    vec4 p = u_view_proj * vec4(in_position, 1.0);
    p.z -= u_depth_bias * p.w;
    gl_Position = p;
}
"""

WIRE_FS = """
#version 330
uniform vec3 u_color;
out vec4 f_color;
void main() { f_color = vec4(u_color, 1.0); }
"""

ID_VS = """
#version 330
uniform mat4 u_view_proj;
uniform mat4 u_view;
in vec3 in_position;
out float v_depth;
void main() {
    v_depth = -(u_view * vec4(in_position, 1.0)).z;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
"""

ID_FS = """
#version 330
uniform float u_id;
in float v_depth;
out vec2 f_id_depth;   // (id, or -id on back faces; linear depth in metres)
void main() { f_id_depth = vec2(gl_FrontFacing ? u_id : -u_id, v_depth); }
"""


FULLSCREEN_VS = """
#version 330
void main() {
    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));  // one triangle covering the screen
    gl_Position = vec4(2.0 * p - 1.0, 0.0, 1.0);
}
"""

NEAREST_FS = """
#version 330
in float v_depth;
out vec2 f_nearest;            // (front-face depth, back-face depth), metres; blended with MIN
void main() { f_nearest = gl_FrontFacing ? vec2(v_depth, 1e30) : vec2(1e30, v_depth); }
"""

POKE_FS = """
#version 330
uniform sampler2D u_body;      // RG32F: nearest front-face and back-face linear depth (m), 1e30 = none
uniform sampler2D u_solid;     // the same for the whole body (the drawn one may leave culled skin out)
uniform sampler2D u_garment;
uniform float u_tol;           // metres
out float f_verdict;           // 0 free, 0.5 covered by a garment's outside, 1 poke-through
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    vec2 g = texelFetch(u_garment, p, 0).xy;
    vec2 b = texelFetch(u_body, p, 0).xy;
    vec2 s = texelFetch(u_solid, p, 0).xy;
    bool covered = g.x < g.y;                  // the nearest garment surface is a front face
    float nearest = min(b.x, b.y);             // the nearest drawn body surface, either facing
    bool inside = s.y > g.x;                   // the whole body's exit (back face) lies beyond the cloth
    bool poke = covered && nearest < g.x - u_tol && inside;
    f_verdict = poke ? 1.0 : (covered ? 0.5 : 0.0);
}
"""


class CoreShading:
    """The renderer's surface shading, generated from the HLSL shader core (see the module notes).

    Parameters
    ----------
    core_dir : path, optional
        Another copy of the shader core (tests); default the installed one.
    use_cache : bool
        Use the on-disk shader cache.
    """

    name = "hlsl-core"

    def __init__(self, *, core_dir=None, use_cache: bool = True):
        self.core_dir = core_dir
        self.use_cache = use_cache
        self._variants: dict[tuple, CoreProgram] = {}
        ref = self.program(ALL_FEATURES)
        self.vertex_shader = ref.vertex_shader
        self.fragment_shader = ref.fragment_shader
        self.key = ref.key

    def program(self, features) -> CoreProgram:
        """The :class:`CoreProgram` of one variant (compiled on first use)."""
        features = tuple(bool(f) for f in features)
        if features not in self._variants:
            self._variants[features] = core_program(features, core_dir=self.core_dir, use_cache=self.use_cache)
        return self._variants[features]

    @staticmethod
    def vertex_block(view_proj, *, hole_size: float = 0.0, hole_intensity: float = 1.0, hits=None,
                     tint_distance: float = 0.0, encoding=None) -> bytes:
        """std140 bytes of ``KisekaeRenderVertex``.

        Parameters
        ----------
        view_proj : (4,4) float
            World -> clip on column vectors.
        hole_size : float
            Fully damaged radius of a hit, metres.
        hole_intensity : float
            1 / fall-off width, 1/metres.
        hits : (H,4) float, optional
            Posed hit points (metres) and body part ids; at most :data:`MAX_HITS`.
        tint_distance : float
            Metres of target offset that give the full wound tint at p = 1 (0: the tint is p itself).
        encoding : (int, (3,), (3,)), optional
            ``(KISEKAE_WOUND_* code, bounds_min, bounds_max)`` when the target attributes hold encoded data.
        """
        block = np.zeros((4 + 4 + MAX_HITS, 4), np.float32)
        block[:4] = np.asarray(view_proj, np.float32).T  # HLSL column_major packing = GLSL's column order
        h = np.zeros((0, 4), np.float32) if hits is None else np.asarray(hits, np.float32).reshape(-1, 4)
        block[4] = (hole_size, hole_intensity, float(len(h)), tint_distance)
        if encoding is not None:
            block[5] = (float(encoding[0]), 1.0, 0.0, 0.0)
            block[6, :3] = encoding[1]
            block[7, :3] = encoding[2]
        block[8:8 + len(h)] = h
        return block.tobytes()

    @staticmethod
    def pixel_block(material: Material, eye, key_dir, fill_dir) -> bytes:
        """std140 bytes of ``KisekaeRenderPixel`` for one material.

        Parameters
        ----------
        material : Material
        eye : (3,) float
            Camera position, metres.
        key_dir, fill_dir : (3,) float
            Unit directions towards the key and fill lights.
        """
        p = material.preset
        surface = material.kind in ("skin", "cloth")
        wrinkles = material.wrinkles and surface
        shaded = 1.0 if material.shaded else 0.0
        lo, hi = material.heat_range
        t = material.tension_params
        linear = lambda c: tuple(float(x) ** 2.2 for x in c)  # noqa: E731 - sRGB-ish 2.2 gamma, as the shader
        block = np.array([
            (*linear(material.color), KINDS[material.kind]),
            (*(float(x) for x in eye), shaded),
            (*(float(x) for x in key_dir), float(p.bands) if surface else 0.0),
            (*(float(x) for x in fill_dir), p.contrast if surface else 1.0),
            (p.normal_strength, p.ao_gain, p.sss_loss, p.dent_depth),
            (p.sss, p.rim if surface else 0.0, p.specular, p.wrinkle_amp if wrinkles else 0.0),
            (p.wrinkle_freq, 0.0, lo, hi),
            (t[0], t[1], t[2], t[3]),
            (*linear(material.wound_color), 0.35),
            (material.wrinkle_threshold, material.wrinkle_gain, 0.0, 0.0),
        ], np.float32)
        return block.tobytes()


def light_directions(camera) -> tuple[np.ndarray, np.ndarray]:
    """Key and fill light directions (unit, toward the light) placed relative to the camera.

    The key light sits above and to the left of the camera, the fill low on the right, so every
    view is lit from the front whatever its azimuth.
    """
    r, u, f = camera.basis()
    key = -f + 0.55 * u - 0.45 * r
    fill = -f - 0.2 * u + 0.8 * r
    return key / np.linalg.norm(key), fill / np.linalg.norm(fill)
