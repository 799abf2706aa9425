// Keeps apart the body parts that share no joint (a hand on the hip, an arm on the chest, the thighs) on the GPU:
// kisekae's part contact (kisekae.avatar.part_contact.part_contact, the last step of kisekae's default body).
// Input: body_parts.json (TextAsset `bake`) and body_parts.bytes (TextAsset `blob`) from `kisekae fit -o DIR`
// (kisekae.shaders.part_bake): per part its bone by name, its grid (corner, samples per axis, cell, first sample)
// and its vertices' largest move; the grids' samples (float4: signed distance in metres, gradient); per body vertex
// its part (-1: it does not move), its 64-bit skip mask and its rest position; the body's welded one-ring; the body's
// triangles and the triangles around each welded vertex (the flip guard's).
// It runs inside KisekaeSurfacePush (its `parts`), which calls Record on its prepared body (world space, after the
// joint planes) between KisekaeBodyPrepare and KisekaeBodyNormals; the kernels are in KisekaeSurfacePush.compute:
//   KisekaePartDepths (per body vertex), KisekaePairFades (one group), KisekaePartStepFirst (per body vertex),
//   passes x KisekaeBodySmooth (the bake's, 8; the body's one-ring bound as that kernel's ring), KisekaePartStepAgain
//   (the moves), GuardHalvings + GuardReverts x KisekaePartGuards (the flip guard, kisekae.avatar.flip_guard: the
//   moves around a triangle turned over halved, then undone), KisekaePartApply (the moves onto the prepared positions
//   and into what the body follow reads, _KisekaeBodyBeyondRW)
// Each frame, per part, with M = bone.localToWorldMatrix * bindpose (its bone's skinning matrix): the first three
// rows of inverse(M), world -> the renderer's rest space (with mirrorX the first row negated: the bake's space is the
// renderer's mirrored in X, as most glTF importers for Unity flip it), then (1, 0, 0, 0); all four rows zero where
// |det M| <= 1e-12 (a bone scaled to zero, as animations hide props: its part neither moves nor pushes,
// kisekae.avatar.part_contact.live_parts). The depths are cleared by KisekaePairFades, ready for the next frame.
// Memory on the built-in body (20 parts, 13,380 vertices): the samples 7.6 MB, per vertex 28 B, the one-ring
// 0.27 MB, the triangles and the faces around each vertex 0.6 MB, the pairs 32 KB, three move buffers 16 B per
// vertex each; per frame 4 float4 per part go up.
// A bake that does not fit the body (another version, vertex count, a bone the renderer does not have, more than
// MaxParts parts, grids that do not tile the samples, ids out of range, a blob of the wrong size) is refused with an
// error naming the object, and the component disables itself (KisekaeSurfacePush then runs without it).
// Not compiled or run in kisekae's CI (no Unity there); the kernels run on llvmpipe in tests/test_surface_engine.py.
using System;
using System.Collections.Generic;
using UnityEngine;
using UnityEngine.Rendering;

namespace Kisekae
{
    [Serializable]
    public class KisekaePartEntry
    {
        public string bone;
        public float[] lo;    // grid corner in the bake's rest space (m), 3
        public int[] dims;    // samples along x, y, z (>= 2 each)
        public int start;     // first sample's row
        public float reach;   // its vertices' largest move against another part (m)
        public float cell;    // its grid's cell (m: 1 cm, or 5 mm for a thin part such as a hand)
    }

    [Serializable]
    public class KisekaePartSettings
    {
        public float gap;        // room left between two parts (m)
        public float band;       // width of the smooth maximum (m)
        public float deep;       // a pair deeper than this fades out by twice it (m)
        public float minSpread;
        public float restSlack;  // m
        public int passes;       // one-ring passes between the two steps
    }

    [Serializable]
    public class KisekaePartLayout
    {
        public KisekaeCorrectiveRange samples, vertexPart, vertexSkip, vertexRest, ringPtr, ring, triangles, facePtr,
            faces;
    }

    [Serializable]
    public class KisekaePartBake
    {
        public int version;
        public float cell;
        public int vertexCount;
        public KisekaePartEntry[] parts;
        public KisekaePartSettings settings;
        public KisekaePartLayout layout;
    }

    [ExecuteAlways]
    [DefaultExecutionOrder(-100)]  // enabled before KisekaeSurfacePush, which records its passes
    public class KisekaeBodyParts : MonoBehaviour
    {
        public const int BakeVersion = 2;     // = kisekae.shaders.part_bake.BAKE_VERSION
        public const int MaxParts = 64;       // = kisekae.avatar.part_contact.MAX_PARTS (the 64-bit mask, the pair table)
        const float MinDeterminant = 1e-12f;  // = kisekae.avatar.part_contact.MIN_DETERMINANT
        public const float GuardCos = 0f;     // = kisekae.avatar.flip_guard.GUARD_COS
        public const int GuardHalvings = 3;   // = kisekae.avatar.flip_guard.GUARD_HALVINGS
        public const int GuardReverts = 6;    // = kisekae.avatar.flip_guard.GUARD_REVERTS
        const int Group = 64;                 // [numthreads(64, 1, 1)]

        [Tooltip("The body's SkinnedMeshRenderer (the mesh the bake was made for)")]
        public SkinnedMeshRenderer body;
        [Tooltip("body_parts.json from kisekae fit")]
        public TextAsset bake;
        [Tooltip("body_parts.bytes from kisekae fit")]
        public TextAsset blob;
        [Tooltip("The bake is in kisekae's (glTF) space; mirror X for importers that flip it")]
        public bool mirrorX = true;

        KisekaePartBake _bake;
        int[] _bone;         // the renderer's bone index of each part
        Vector4[] _rows;     // 4 per part, this frame
        int _nParts, _nBody;
        ComputeShader _cs;
        int _kDepths, _kFades, _kFirst, _kSmooth, _kAgain, _kGuard, _kApply;
        readonly List<GraphicsBuffer> _owned = new List<GraphicsBuffer>();
        GraphicsBuffer _samples, _box, _index, _inverse, _part, _skip, _rest, _ringPtr, _ring, _depth, _fade, _moveA,
            _moveB, _noMove, _triangles, _facePtr, _faces;

        public bool Active => isActiveAndEnabled && _samples != null;
        public int VertexCount => _nBody;

        static bool Finite(float x) => !float.IsNaN(x) && !float.IsInfinity(x);

        static string RangeProblem(KisekaeCorrectiveRange r, long want, int bytes, string key)
        {
            if (r == null) return $"its layout has no '{key}'";
            if (r.offset < 0 || r.count < 0 || r.offset % 4 != 0 || (long)r.offset + 4L * r.count > bytes)
                return $"'{key}' ({r.count} values at byte {r.offset}) does not fit the blob of {bytes} bytes";
            if (want >= 0 && r.count != want) return $"'{key}' has {r.count} values, the header says {want}";
            return null;
        }

        // Null when the header fits this renderer, else why not (without the object's name). Finds the parts' bones.
        string HeaderProblem(KisekaePartBake b, byte[] bytes)
        {
            if (b == null || b.version != BakeVersion || b.parts == null || b.settings == null || b.layout == null ||
                bytes == null)
                return $"not a version-{BakeVersion} kisekae body parts bake with its .bytes blob (write it again " +
                       "with kisekae fit)";
            if (b.parts.Length > MaxParts)
                return $"the bake has {b.parts.Length} parts, the kernels hold {MaxParts}";
            if (b.vertexCount != body.sharedMesh.vertexCount)
                return $"the bake is for another mesh ({b.vertexCount} vertices, the body has " +
                       $"{body.sharedMesh.vertexCount})";
            KisekaePartSettings s = b.settings;
            if (!(Finite(b.cell) && b.cell > 0f) || !(Finite(s.band) && s.band > 0f) || !(Finite(s.deep) && s.deep > 0f)
                || !Finite(s.gap) || !(Finite(s.minSpread) && s.minSpread > 0f) || !Finite(s.restSlack) || s.passes < 0)
                return $"the bake's cell {b.cell} m or settings (gap {s.gap}, band {s.band}, deep {s.deep}, minSpread " +
                       $"{s.minSpread}, passes {s.passes}) are out of range";
            var index = new Dictionary<string, int>();
            for (int i = 0; i < body.bones.Length; i++)
                if (body.bones[i] != null) index[body.bones[i].name] = i;
            _bone = new int[b.parts.Length];
            long rows = 0;
            for (int p = 0; p < b.parts.Length; p++)
            {
                KisekaePartEntry e = b.parts[p];
                if (e == null || !index.TryGetValue(e.bone ?? "", out _bone[p]))
                    return $"part {p} names bone '{e?.bone}' that the body's renderer does not have";
                if (e.lo == null || e.lo.Length != 3 || e.dims == null || e.dims.Length != 3 || e.dims[0] < 2 ||
                    e.dims[1] < 2 || e.dims[2] < 2 || e.start != rows || !Finite(e.lo[0]) || !Finite(e.lo[1]) ||
                    !Finite(e.lo[2]) || !(Finite(e.reach) && e.reach >= 0f) || !(Finite(e.cell) && e.cell > 0f))
                    return $"part {p}'s grid is malformed (3 corner values, at least 2 samples a side, laid end to " +
                           "end, a reach >= 0, a cell > 0)";
                rows += (long)e.dims[0] * e.dims[1] * e.dims[2];
            }
            long n = b.vertexCount;
            KisekaePartLayout l = b.layout;
            return RangeProblem(l.samples, 4 * rows, bytes.Length, "samples")
                   ?? RangeProblem(l.vertexPart, n, bytes.Length, "vertexPart")
                   ?? RangeProblem(l.vertexSkip, 2 * n, bytes.Length, "vertexSkip")
                   ?? RangeProblem(l.vertexRest, 3 * n, bytes.Length, "vertexRest")
                   ?? RangeProblem(l.ringPtr, n + 1, bytes.Length, "ringPtr")
                   ?? RangeProblem(l.ring, -1, bytes.Length, "ring")
                   ?? RangeProblem(l.triangles, -1, bytes.Length, "triangles")
                   ?? RangeProblem(l.facePtr, n + 1, bytes.Length, "facePtr")
                   ?? RangeProblem(l.faces, -1, bytes.Length, "faces");
        }

        // Null when the CSR table runs from 0 to its entries without decreasing and each entry is below `limit`.
        static string CsrProblem(uint[] ptr, uint[] idx, uint limit, string name)
        {
            int n = ptr.Length - 1;
            if (ptr[0] != 0u || ptr[n] != (uint)idx.Length)
                return $"{name}Ptr does not run from 0 to its {idx.Length} entries";
            for (int i = 0; i < n; i++)
                if (ptr[i + 1] < ptr[i]) return $"{name}Ptr decreases at vertex {i}";
            foreach (uint j in idx)
                if (j >= limit) return $"{name} entry {j} is out of range (below {limit})";
            return null;
        }

        // Null when the blob's ids and numbers are in range, else why not.
        static string DataProblem(int[] part, uint[] ptr, uint[] ring, uint[] tris, uint[] facePtr, uint[] faces,
                                  float[] samples, float[] rest, int parts)
        {
            int n = part.Length;
            for (int i = 0; i < n; i++)
                if (part[i] < -1 || part[i] >= parts) return $"vertex {i}'s part {part[i]} is not one of {parts}";
            if (tris.Length % 3 != 0) return $"{tris.Length} triangle corners are not whole triangles";
            string csr = CsrProblem(ptr, ring, (uint)n, "ring") ?? CsrProblem(facePtr, faces, (uint)(tris.Length / 3),
                                                                               "face");
            if (csr != null) return csr;
            foreach (uint j in tris)
                if (j >= (uint)n) return $"triangle corner {j} is outside the body's {n} vertices";
            foreach (float x in samples)
                if (!Finite(x)) return "a grid sample is not a finite number";
            foreach (float x in rest)
                if (!Finite(x)) return "a rest position is not a finite number";
            return null;
        }

        static uint[] Uints(byte[] bytes, KisekaeCorrectiveRange r) => KisekaeBlob.Read<uint>(bytes, r);
        static int[] Ints(byte[] bytes, KisekaeCorrectiveRange r) => KisekaeBlob.Read<int>(bytes, r);
        static float[] Floats(byte[] bytes, KisekaeCorrectiveRange r) => KisekaeBlob.Read<float>(bytes, r);

        GraphicsBuffer Make(int count, int stride)
        {
            var b = new GraphicsBuffer(GraphicsBuffer.Target.Structured, Math.Max(count, 1), stride);
            _owned.Add(b);
            return b;
        }

        void Refuse(string problem)
        {
            Debug.LogError($"KisekaeBodyParts on '{name}': {problem}", this);
            _bake = null;
            enabled = false;
        }

        void OnEnable()
        {
            _bake = null;
            if (body == null || body.sharedMesh == null)
            {
                Refuse("no body SkinnedMeshRenderer");
                return;
            }
            if (!BitConverter.IsLittleEndian)
            {
                Refuse("the bake is little-endian and this platform is not");
                return;
            }
            KisekaePartBake b;
            try
            {
                b = bake != null ? JsonUtility.FromJson<KisekaePartBake>(bake.text) : null;
            }
            catch (ArgumentException e)
            {
                Refuse($"'{bake.name}' is not a JSON body parts bake ({e.Message})");
                return;
            }
            byte[] bytes = blob != null ? blob.bytes : null;
            string problem = HeaderProblem(b, bytes);
            if (problem != null)
            {
                Refuse(problem);
                return;
            }
            KisekaePartLayout l = b.layout;
            int[] part = Ints(bytes, l.vertexPart);
            uint[] ptr = Uints(bytes, l.ringPtr), ring = Uints(bytes, l.ring), skip = Uints(bytes, l.vertexSkip);
            uint[] tris = Uints(bytes, l.triangles), facePtr = Uints(bytes, l.facePtr), faces = Uints(bytes, l.faces);
            float[] samples = Floats(bytes, l.samples), rest = Floats(bytes, l.vertexRest);
            problem = DataProblem(part, ptr, ring, tris, facePtr, faces, samples, rest, b.parts.Length);
            if (problem != null)
            {
                Refuse($"'{blob.name}': {problem}");
                return;
            }
            _bake = b;
            Upload(part, ptr, ring, skip, samples, rest);
            _triangles = Make(tris.Length, 4);
            if (tris.Length > 0) _triangles.SetData(tris);
            _facePtr = Make(facePtr.Length, 4);
            _facePtr.SetData(facePtr);
            _faces = Make(faces.Length, 4);
            if (faces.Length > 0) _faces.SetData(faces);
        }

        void Upload(int[] part, uint[] ptr, uint[] ring, uint[] skip, float[] samples, float[] rest)
        {
            _nParts = _bake.parts.Length;
            _nBody = part.Length;
            var box = new Vector4[2 * Math.Max(_nParts, 1)];
            var index = new uint[4 * Math.Max(_nParts, 1)];
            for (int p = 0; p < _nParts; p++)
            {
                KisekaePartEntry e = _bake.parts[p];
                box[2 * p] = new Vector4(e.lo[0], e.lo[1], e.lo[2], e.cell);
                box[2 * p + 1] = new Vector4(e.reach, 0f, 0f, 0f);
                index[4 * p] = (uint)e.dims[0];
                index[4 * p + 1] = (uint)e.dims[1];
                index[4 * p + 2] = (uint)e.dims[2];
                index[4 * p + 3] = (uint)e.start;
            }
            var rest4 = new Vector4[_nBody];  // the bake's space, as the grids: not mirrored
            for (int i = 0; i < _nBody; i++) rest4[i] = new Vector4(rest[3 * i], rest[3 * i + 1], rest[3 * i + 2], 0f);
            _samples = Make(samples.Length / 4, 16);
            _samples.SetData(samples);
            _box = Make(box.Length, 16);
            _box.SetData(box);
            _index = Make(index.Length / 4, 16);
            _index.SetData(index);
            _rows = new Vector4[4 * Math.Max(_nParts, 1)];
            _inverse = Make(_rows.Length, 16);
            _part = Make(_nBody, 4);
            _part.SetData(part);
            _skip = Make(_nBody, 8);
            _skip.SetData(skip);
            _rest = Make(_nBody, 16);
            _rest.SetData(rest4);
            _ringPtr = Make(ptr.Length, 4);
            _ringPtr.SetData(ptr);
            _ring = Make(ring.Length, 4);
            if (ring.Length > 0) _ring.SetData(ring);
            _depth = Make(MaxParts * MaxParts, 4);
            _depth.SetData(new uint[MaxParts * MaxParts]);  // zeros; KisekaePairFades clears it after each frame
            _fade = Make(MaxParts * MaxParts, 4);
            _moveA = Make(_nBody, 16);
            _moveB = Make(_nBody, 16);
            _noMove = Make(_nBody, 16);
            _noMove.SetData(new Vector4[_nBody]);
        }

        void OnDisable()
        {
            foreach (GraphicsBuffer b in _owned) b.Release();
            _owned.Clear();
            _samples = null;
            _cs = null;
        }

        // This frame's rows: inverse(bone.localToWorldMatrix * bindpose), the first row negated with mirrorX, and the
        // live flag; zeros for a singular bone.
        void UpdateRows()
        {
            Matrix4x4[] bindposes = body.sharedMesh.bindposes;
            Transform[] bones = body.bones;
            for (int p = 0; p < _nParts; p++)
            {
                Matrix4x4 m = bones[_bone[p]].localToWorldMatrix * bindposes[_bone[p]];
                float det = m.m00 * (m.m11 * m.m22 - m.m12 * m.m21) - m.m01 * (m.m10 * m.m22 - m.m12 * m.m20)
                            + m.m02 * (m.m10 * m.m21 - m.m11 * m.m20);
                if (!(Mathf.Abs(det) > MinDeterminant))
                {
                    for (int r = 0; r < 4; r++) _rows[4 * p + r] = Vector4.zero;
                    continue;
                }
                Matrix4x4 inv = m.inverse;
                for (int r = 0; r < 3; r++) _rows[4 * p + r] = inv.GetRow(r);
                if (mirrorX) _rows[4 * p] = -_rows[4 * p];
                _rows[4 * p + 3] = new Vector4(1f, 0f, 0f, 0f);
            }
        }

        void FindKernels(ComputeShader cs)
        {
            if (_cs == cs) return;
            _kDepths = cs.FindKernel("KisekaePartDepths");
            _kFades = cs.FindKernel("KisekaePairFades");
            _kFirst = cs.FindKernel("KisekaePartStepFirst");
            _kSmooth = cs.FindKernel("KisekaeBodySmooth");
            _kAgain = cs.FindKernel("KisekaePartStepAgain");
            _kGuard = cs.FindKernel("KisekaePartGuards");
            _kApply = cs.FindKernel("KisekaePartApply");
            _cs = cs;
        }

        void BindParts(CommandBuffer cmd, ComputeShader cs, int k)
        {
            cmd.SetComputeBufferParam(cs, k, "_KisekaePartSamples", _samples);
            cmd.SetComputeBufferParam(cs, k, "_KisekaePartBox", _box);
            cmd.SetComputeBufferParam(cs, k, "_KisekaePartIndex", _index);
            cmd.SetComputeBufferParam(cs, k, "_KisekaePartInverse", _inverse);
            cmd.SetComputeBufferParam(cs, k, "_KisekaeVertexPart", _part);
            cmd.SetComputeBufferParam(cs, k, "_KisekaeVertexSkip", _skip);
            cmd.SetComputeBufferParam(cs, k, "_KisekaeVertexRest", _rest);
        }

        // One pass of a ping-pong over the moves: kernel k from src into dst, then the two swap.
        static void Pass(CommandBuffer cmd, ComputeShader cs, int k, ref GraphicsBuffer src, ref GraphicsBuffer dst,
                         int groups)
        {
            cmd.SetComputeBufferParam(cs, k, "_KisekaeDisplacementIn", src);
            cmd.SetComputeBufferParam(cs, k, "_KisekaeDisplacementOut", dst);
            cmd.DispatchCompute(cs, k, groups, 1, 1);
            (src, dst) = (dst, src);
        }

        // Records the part contact on `positions` (the prepared body, world space, nb vertices: written in place) and
        // adds what it moved to `beyond` (what the body follow reads). KisekaeSurfacePush has set _KisekaeBodyCount.
        public void Record(CommandBuffer cmd, ComputeShader cs, int nb, GraphicsBuffer positions, GraphicsBuffer beyond)
        {
            if (!Active || nb != _nBody) return;
            FindKernels(cs);
            UpdateRows();
            cmd.SetBufferData(_inverse, _rows);
            KisekaePartSettings s = _bake.settings;
            cmd.SetComputeIntParam(cs, "_KisekaePartCount", _nParts);
            cmd.SetComputeVectorParam(cs, "_KisekaePart0", new Vector4(s.gap, s.band, s.deep, 0f));
            cmd.SetComputeVectorParam(cs, "_KisekaePart1", new Vector4(s.minSpread, s.restSlack, 0f, 0f));
            int groups = (nb + Group - 1) / Group;
            BindParts(cmd, cs, _kDepths);
            cmd.SetComputeBufferParam(cs, _kDepths, "_KisekaeBodyPositions", positions);
            cmd.SetComputeBufferParam(cs, _kDepths, "_KisekaePairDepthRW", _depth);
            cmd.DispatchCompute(cs, _kDepths, groups, 1, 1);
            BindParts(cmd, cs, _kFades);
            cmd.SetComputeBufferParam(cs, _kFades, "_KisekaePairDepthRW", _depth);
            cmd.SetComputeBufferParam(cs, _kFades, "_KisekaePairFadeRW", _fade);
            cmd.DispatchCompute(cs, _kFades, 1, 1, 1);  // one group: thread a owns row a
            BindParts(cmd, cs, _kFirst);
            cmd.SetComputeBufferParam(cs, _kFirst, "_KisekaeBodyPositions", positions);
            cmd.SetComputeBufferParam(cs, _kFirst, "_KisekaePairFade", _fade);
            cmd.SetComputeBufferParam(cs, _kFirst, "_KisekaeDisplacementOut", _moveA);
            cmd.DispatchCompute(cs, _kFirst, groups, 1, 1);
            GraphicsBuffer src = _moveA, dst = _moveB;
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingPtr", _ringPtr);  // the body's ring, this kernel only
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingIdx", _ring);
            for (int pass = 0; pass < s.passes; pass++) Pass(cmd, cs, _kSmooth, ref src, ref dst, groups);
            BindParts(cmd, cs, _kAgain);
            cmd.SetComputeBufferParam(cs, _kAgain, "_KisekaePairFade", _fade);
            cmd.SetComputeBufferParam(cs, _kAgain, "_KisekaeBodyPositions", positions);
            // without passes kisekae keeps the first step: the second one from the prepared body gives the same
            cmd.SetComputeBufferParam(cs, _kAgain, "_KisekaeDisplacementIn", s.passes > 0 ? src : _noMove);
            cmd.SetComputeBufferParam(cs, _kAgain, "_KisekaeDisplacementOut", dst);
            cmd.DispatchCompute(cs, _kAgain, groups, 1, 1);
            (src, dst) = (dst, src);
            // the flip guard: halve, then undo, the moves around a triangle turned over from the prepared body
            cmd.SetComputeBufferParam(cs, _kGuard, "_KisekaeBodyPositions", positions);
            cmd.SetComputeBufferParam(cs, _kGuard, "_KisekaePartTriangles", _triangles);
            cmd.SetComputeBufferParam(cs, _kGuard, "_KisekaePartFacePtr", _facePtr);
            cmd.SetComputeBufferParam(cs, _kGuard, "_KisekaePartFaces", _faces);
            for (int pass = 0; pass < GuardHalvings + GuardReverts; pass++)
            {
                cmd.SetComputeVectorParam(cs, "_KisekaePartGuard",
                                          new Vector4(GuardCos, pass < GuardHalvings ? 0.5f : 0f, 0f, 0f));
                Pass(cmd, cs, _kGuard, ref src, ref dst, groups);
            }
            cmd.SetComputeBufferParam(cs, _kApply, "_KisekaeDisplacementIn", src);
            cmd.SetComputeBufferParam(cs, _kApply, "_KisekaeBodyPositionsRW", positions);
            cmd.SetComputeBufferParam(cs, _kApply, "_KisekaeBodyBeyondRW", beyond);
            cmd.DispatchCompute(cs, _kApply, groups, 1, 1);
        }
    }
}
