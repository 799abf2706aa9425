// Runs kisekae's per-frame garment correction (the surface push, kisekae.fit.surface.surface_runtime) on the GPU for
// one garment on one body, with the kernels of Shaders/KisekaeSurfacePush.compute.
// Input: the garment's bake from `kisekae fit -o DIR` (kisekae.shaders.surface_bake): NAME.surface.json (header) and
// NAME.surface.bytes (little-endian uint32 arrays: per garment vertex 32 candidate body triangles as body vertex id
// triples, the welded one-ring as CSR, the weld map; then float32 per garment vertex: its longest rest edge in m, the
// chord of the chord allowance, baked so that it is kisekae's metres whatever scale the mesh was imported at; the edge
// samples, the stretch limit's floor and the body follow's binding: kisekae.shaders.surface_bake), both as TextAssets.
// Each frame, once the renderers are skinned (RenderPipelineManager.beginContextRendering; URP), one command buffer:
//   1. body: the skinned vertices (SkinnedMeshRenderer.GetVertexBuffer, vertexBufferTarget |= Raw) to world space,
//      then the body contact of KisekaeBodyContact when one is given (the body Kisekae/BodyURP draws), then the body's
//      area-weighted vertex normals, then its curvature (KisekaeBodyCurvature over the triangles around each
//      vertex, after the normals)                                                     3 dispatches over the body
//      With parts (a KisekaeBodyParts on the body: body_parts.json + .bytes from kisekae fit), the part contact
//      right after the body contact (KisekaeBodyParts.Record: the depths, the pairs' fades, a step, the body's
//      one-ring passes, a step again, the flip guard's 9 passes, the apply; kisekae's default body,
//      kisekae.avatar.part_contact), and with drawBody the body's renderer draws that body (Kisekae/BodyURP with
//      Prepared Body on)                                                             10 + passes dispatches
//      With bodyFollow (on by default, as kisekae check --runtime), KisekaeBodyPrepare also writes what the body does
//      beyond plain skinning (the contact's step plus, with bodyCorrectives, the body's corrective blend shapes'
//      skinned offsets, which KisekaeBodyOffsets recomputes first: 1 more dispatch over the body); after the normals,
//      KisekaeFollowGather takes each garment vertex's outward share of it at its baked binding (the bake's
//      followCorners, followBary, followShare) and followPasses KisekaeSmooth passes smooth it: the push starts from
//      there too (kisekae.fit.body_follow)                            1 + followPasses dispatches over the garment
//   2. garment: with garmentCorrectives (the garment's pose-space correctives, kisekae.fit.garment_correctives: a
//      KisekaeBodyCorrectives with blendShapes off on the garment's renderer, fed GARMENT.correctives.json + .bytes),
//      KisekaeGarmentCorrectives first: each vertex's corrective offset carried to world space by its blended
//      skinning rotation (1 dispatch; the features and the bones' skinning rotations uploaded each frame); then
//      the skinned vertices to world space plus that offset plus carryKeep times the correction the previous frame ended
//      with (KisekaeCarryStart, kisekae.fit.carry: each vertex starts on the side of a fold it was on), KisekaeSurfacePush
//      with the chord allowance (the baked chord, the body curvature; displacement A), smoothPasses dispatches of KisekaeSmoothPush ping-ponging A and B,
//      KisekaeSurfacePush again (into the next buffer), limitPasses dispatches of KisekaeStretchLimit (one-ring edges
//      longer than 1 + stretchLimit times their skinned length pulled back; each vertex it moved pushed again),
//      ping-ponging the same two buffers, with edgeLift on (on by default, as kisekae's runtime) liftPasses rounds of
//      the edge lift (the bake's edge samples pushed out of
//      the body, each vertex lifted by the blend of its samples' asks, one smoothing pass of the lifts, the lifted
//      vertices pushed again) and the unflip (faces turned past ~87 degrees pulled back to their rigid target, the
//      moved vertices pushed again; with finishStep >= 0 the lift and unflip steps are first shortened to what is left
//      of the vertex's finishStep this frame), unflipPasses more unflips, liftLimitPasses more stretch-limit dispatches
//      (samples lifted deep into another part ask nothing: KisekaeEdgeLift fades them), the finish (the total
//      capped at maxPush; also stored as the next frame's correction), then the garment's normals over its welded
//      faces
//                      smoothPasses + limitPasses + 5 liftPasses + unflipPasses + liftLimitPasses + 4 dispatches
// The result goes to two GraphicsBuffers (float4 per garment vertex: world position, w = total push in m; world unit
// normal) that the garment's renderer gets through a MaterialPropertyBlock as _KisekaeSurfacePositions and
// _KisekaeSurfaceNormals: Kisekae/ClothURP with "Surface Push" on (keyword KISEKAE_SURFACE_PUSH) draws them by
// SV_VertexID instead of its own capsule push. Units: metres; the renderers' spaces are mapped to world with
// Renderer.localToWorldMatrix, the matrix their own shaders draw the skinned vertices with.
// Layers (kisekae.fit.layer_push, runtime_pose(..., layers=True)): with `beneath` set to the KisekaeSurfacePush of a
// garment worn under this one and its layer bake (OUTER.over.INNER.surface.json + .bytes from `kisekae fit --layered`:
// this garment's candidates and samples' candidates on the inner garment's triangles), this garment is also pushed out
// of the inner garment's corrected result between its stretch limit and its edge lift (KisekaeLayerPush, 3
// KisekaeSmooth passes of its steps, KisekaeLayerPushAgain, 2 rounds of the edge lift against it), the inner
// garment's positions and normals bound as the body; the inner garment's frame runs first (this component runs its
// own frame from the inner one's).
// A bake that is not for these meshes (vertex counts, body triangle count, ids out of range, a truncated or longer
// binary, another version or candidate count) is refused with an error naming the object, and the component disables
// itself. Not compiled or run in kisekae's CI (no Unity there); the kernels are compiled with glslang there.
using System;
using System.Collections.Generic;
using UnityEngine;
using UnityEngine.Rendering;

namespace Kisekae
{
    [Serializable]
    public class KisekaeSurfaceBakeArray
    {
        public string name;
        public int count;  // uint32 values
    }

    [Serializable]
    public class KisekaeSurfaceBakeHeader
    {
        public string format;          // "kisekae-surface-bake"
        public int version;
        public string garment;
        public int vertices;           // garment vertices N
        public int bodyVertices;
        public int bodyTriangles;
        public int candidates;         // K
        public int ringEntries;        // E
        public int smoothPasses;       // what kisekae runs (10)
        public int limitPasses;        // stretch-limit passes after the second push (4)
        public float stretchLimit;     // allowed relative stretch of an edge over its skinned length (0.1)
        public int samples;            // edge samples S (kisekae.fit.edge_lift)
        public int vertexSampleEntries;  // M
        public int liftPasses;         // rounds of (edge lift, unflip) after the stretch limit (3)
        public int unflipPasses;       // unflips after them (2)
        public float turnStart;        // the unflip's turn start, a cosine (0.05)
        public int liftLimitPasses;    // stretch-limit passes after the lift rounds and unflips (2)
        public int followPasses;       // smoothing passes of the body follow (10)
        public string binary;          // the .bytes file's name
        // corners N*K*3, ringPtr N+1, ringIdx E, weld N, chord N (float32), sampleEnds 3S, sampleWeights 3S (float32),
        // sampleChord S (float32), sampleCorners S*K*3, vertexSamplePtr N+1, vertexSampleIdx M, shortest N (float32),
        // followCorners 3N, followBary 3N (float32), followShare N (float32), depthBound Nb (float32, per body vertex),
        // selfCorners 12N, selfSide 4N (float32), selfGap N (float32)
        public KisekaeSurfaceBakeArray[] layout;
        public long bytes;
    }

    [ExecuteAlways]
    public class KisekaeSurfacePush : MonoBehaviour
    {
        public const int BakeVersion = 10;     // = kisekae.shaders.surface_bake.SURFACE_BAKE_VERSION
        public const string BakeFormat = "kisekae-surface-bake";
        public const int Candidates = 32;      // = KISEKAE_SURFACE_CANDIDATES = kisekae.fit.surface.CANDIDATES
        public const string Keyword = "KISEKAE_SURFACE_PUSH";
        const int Group = 64;                  // [numthreads(64, 1, 1)]
        static readonly string[] Layout = { "corners", "ringPtr", "ringIdx", "weld", "chord", "sampleEnds", "sampleWeights",
                                            "sampleChord", "sampleCorners", "vertexSamplePtr", "vertexSampleIdx",
                                            "shortest", "followCorners", "followBary", "followShare", "depthBound",
                                            "selfCorners", "selfSide", "selfGap" };

        [Tooltip("The body's SkinnedMeshRenderer (the mesh the bake was made for)")]
        public SkinnedMeshRenderer body;
        [Tooltip("The garment's SkinnedMeshRenderer (material Kisekae/ClothURP with Surface Push on)")]
        public SkinnedMeshRenderer garment;
        [Tooltip("NAME.surface.json from kisekae fit")]
        public TextAsset bakeHeader;
        [Tooltip("NAME.surface.bytes from kisekae fit")]
        public TextAsset bakeData;
        [Tooltip("Shaders/KisekaeSurfacePush.compute")]
        public ComputeShader compute;
        [Tooltip("Optional: the body's contact (KisekaeBodyContact on the same body), applied before the push")]
        public KisekaeBodyContact contact;
        [Tooltip("Optional: the body's part contact (KisekaeBodyParts on the same body), applied after the contact: " +
                 "kisekae's default body keeps apart the parts that share no joint")]
        public KisekaeBodyParts parts;
        [Tooltip("With parts: the body's renderer draws this component's prepared body (Kisekae/BodyURP with Prepared " +
                 "Body on), the body the garment was pushed out of; the part contact needs neighbour passes that its " +
                 "vertex stage cannot run")]
        public bool drawBody = true;
        [Tooltip("Tightness (R) and softness (G) at the garment's UV0, as Kisekae/ClothURP's mask; none: 0")]
        public Texture maskMap;
        [Tooltip("Minimum clearance from the body (m)")]
        public float margin = 0.002f;
        [Range(0f, 1f)] public float stiffness = 0.5f;
        [Tooltip("Cap on the total displacement (m)")]
        public float maxPush = 0.1f;
        [Range(0f, 1f)] public float skirtBias = 0f;
        public Vector3 up = Vector3.up;
        [Tooltip("A candidate farther than this is ignored (m); 0: maxPush, as kisekae")]
        public float reach = 0f;
        [Tooltip("One-ring smoothing passes between the two pushes (kisekae: 10)")]
        public int smoothPasses = 10;
        [Tooltip("Stretch-limit passes after the second push, each pushing the vertices it moved again (kisekae: 4)")]
        public int limitPasses = 4;
        [Tooltip("Allowed relative stretch of a garment edge over its skinned length (kisekae: 0.1)")]
        public float stretchLimit = 0.1f;
        [Tooltip("Share of the previous frame's correction each frame starts from (kisekae: 0.9 at 30 fps, " +
                 "0.9^(30/fps) at other rates; 0: no memory). Call ResetCarry() after a teleport or a cut")]
        [Range(0f, 1f)] public float carryKeep = 0.9f;
        [Tooltip("End the frame with the edge lift and the unflip (kisekae check --runtime; --no-edge-lift turns it " +
                 "off): a third of the garment edges through the body and of the flipped faces; on by default, as " +
                 "in kisekae")]
        public bool edgeLift = true;
        [Tooltip("Rounds of the edge lift and unflip after the stretch limit (kisekae: 3)")]
        public int liftPasses = 3;
        [Tooltip("Unflip passes after them (kisekae: 2)")]
        public int unflipPasses = 2;
        [Tooltip("Cosine between a face's corrected and skinned normals below which the unflip starts turning it " +
                 "back (kisekae: 0.05, about 87 degrees)")]
        public float turnStart = 0.05f;
        [Tooltip("Stretch-limit passes after the edge lift and unflips, each pushing the vertices it moved again " +
                 "(kisekae: 2)")]
        public int liftLimitPasses = 2;
        [Tooltip("With edgeLift: the most the lift rounds and unflips may move a garment vertex in one frame, metres " +
                 "(kisekae check --finish-step; 0.004, kisekae's default, keeps most of what the lift clears and " +
                 "the tights' pops under 5 mm); < 0: no cap")]
        public float finishStep = 0.004f;
        [Tooltip("Optional: the KisekaeSurfacePush of a garment worn under this one; this garment is then also pushed " +
                 "out of it each frame (kisekae runtime_pose layers=True), and that one's frame runs first")]
        public KisekaeSurfacePush beneath;
        [Tooltip("Optional: the garment's pose-space correctives (kisekae fit's GARMENT.correctives.json + .bytes in a " +
                 "KisekaeBodyCorrectives on the garment's renderer with blendShapes off): each frame starts from " +
                 "the skinned garment plus them, as kisekae check --runtime does for garments that have them")]
        public KisekaeBodyCorrectives garmentCorrectives;
        [Tooltip("Start each frame's push from the skinned garment plus the outward part of what the body does beyond " +
                 "plain skinning (its correctives and contact) at each vertex's bound point, as kisekae check --runtime " +
                 "does by default (--no-body-follow turns it off)")]
        public bool bodyFollow = true;
        [Tooltip("Read the body's side through normals that leave out the triangles a fold turned away from the " +
                 "skinned normals (KisekaeGuardedFace), as kisekae check --runtime does by default " +
                 "(--no-normal-guard turns it off); needs normals in the body mesh")]
        public bool normalGuard = true;
        [Tooltip("One-ring smoothing passes of the body follow (kisekae: 10)")]
        public int followPasses = 10;
        [Tooltip("Keep the garment's outer sheets outside its own inner sheets (a hem over a waistband, a jacket over a " +
                 "shirt: kisekae.fit.self_layers), as kisekae check --runtime does by default (--no-self-layers turns " +
                 "it off); the bake of a garment of one sheet has none, and nothing is dispatched")]
        public bool selfLayers = true;
        public const int SelfPasses = 2;   // = kisekae.fit.self_layers.SELF_PASSES
        public const int SelfSmooth = 2;   // = kisekae.fit.self_layers.SELF_SMOOTH
        [Tooltip("With bodyFollow: the body's KisekaeBodyCorrectives (blend shapes on). Unity's skinning holds them, so " +
                 "the follow takes their skinned offsets back out to find plain skinning; unset, it sees only the contact")]
        public KisekaeBodyCorrectives bodyCorrectives;
        public const int SkinInfluences = 8;    // = KISEKAE_SKIN_INFLUENCES of the kernel (kisekae_corrective.hlsl)
        public const int CorrectiveCentres = 16;  // = KISEKAE_CORRECTIVE_CENTRES
        [Tooltip("With beneath: OUTER.over.INNER.surface.json from kisekae fit --layered")]
        public TextAsset layerHeader;
        [Tooltip("With beneath: OUTER.over.INNER.surface.bytes from kisekae fit --layered")]
        public TextAsset layerData;

        public const float LayerReach = 0.01f;  // = kisekae.fit.layer_push.LAYER_REACH (m)
        public const float LayerFade = 0.005f;  // = kisekae.fit.layer_push.LAYER_FADE (m)
        public const int LayerSmooth = 3;       // = kisekae.fit.layer_push.LAYER_SMOOTH
        public const int LayerLiftPasses = 2;   // = kisekae.fit.layer_push.LAYER_LIFT_PASSES

        static readonly int IdSurfacePositions = Shader.PropertyToID("_KisekaeSurfacePositions");
        static readonly int IdSurfaceNormals = Shader.PropertyToID("_KisekaeSurfaceNormals");
        static readonly int IdBodyPrepared = Shader.PropertyToID("_KisekaeBodyPrepared");
        static readonly int IdBodyPreparedNormals = Shader.PropertyToID("_KisekaeBodyPreparedNormals");
        public const string BodyKeyword = "KISEKAE_PREPARED_BODY";

        int _kBodyPrepare, _kBodyNormals, _kBodyCurvatures, _kPushFirst, _kSmooth, _kPushSecond, _kStretchLimit,
            _kSampleLifts, _kEdgeLifts, _kLiftApply, _kUnflips, _kFinish, _kGarmentNormals, _kLayerPush, _kSelfLayers,
            _kSelfApply,
            _kLayerPushAgain, _kGarmentCorrectives, _kBodyOffsets, _kFollowGather;
        // One renderer's pose-space correctives as the kernels read them: the bake's entries, its 8 influences a
        // vertex, this frame's features and its bones' skinning rows.
        sealed class CorrectiveSet
        {
            public KisekaeBodyCorrectives source;
            public SkinnedMeshRenderer renderer;
            public GraphicsBuffer range, joint, coef, feature, bones, weights, rows;
            public Vector4[] rowData;
        }
        CorrectiveSet _garmentSet, _bodySet;  // garmentCorrectives (zeros without), bodyCorrectives (null without)
        GraphicsBuffer _garmentCorrective;    // per garment vertex: its corrective offset (zeros without)
        GraphicsBuffer _followCorners, _followBary, _followShare, _bodyOffset, _bodyBeyond, _followA, _followB,
            _noFollow;  // the body follow: the bake's binding, the body's offsets and beyond, the ping-pong, zeros
        readonly List<GraphicsBuffer> _owned = new List<GraphicsBuffer>();
        GraphicsBuffer _corners, _ringPtr, _ringIdx, _weld, _chord, _shortest, _uv, _depthBound;
        GraphicsBuffer _sampleEnds, _sampleWeights, _sampleChord, _sampleCorners, _vertexSamplePtr, _vertexSampleIdx;
        GraphicsBuffer _sampleLift, _liftA, _liftB;
        GraphicsBuffer _bodyTriangles, _bodyFacePtr, _bodyFaces;
        GraphicsBuffer _garmentTriangles, _garmentFacePtr, _garmentFaces;
        GraphicsBuffer _contactJoints, _contactSides, _contactRest;
        GraphicsBuffer _bodyPositions, _bodyNormals, _bodyCurvature, _dispA, _dispB, _positions, _normals, _correction,
            _finishBudget;
        GraphicsBuffer _bodyVertices, _garmentVertices;  // the renderers' skinned buffers, kept until the next frame
        GraphicsBuffer _layerCorners, _layerSampleCorners, _layerChord, _layerCurvature, _layerDepthBound,
            _innerTriangles, _innerFacePtr, _innerFaces, _stepA, _stepB;  // the layer push (with beneath)
        GraphicsBuffer _selfCorners, _selfSide, _selfGap, _selfRaw, _selfA, _selfB;  // the self layers
        bool _hasSelf;
        uint[] _layerData;
        int _nInner, _layerSampleAt;
        bool _contactUploaded;
        int _nBody, _nGarment, _nSamples, _nSampleEntries, _nRing;
        uint[] _data;
        CommandBuffer _cmd;
        MaterialPropertyBlock _block, _bodyBlock;  // the garment's; the body's (drawBody, after the first frame)

        // Null when the bake fits the two meshes and the kernels, else the message that refuses it. Reads the binary
        // into _data.
        public string BakeProblem()
        {
            string who = $"KisekaeSurfacePush on '{name}'";
            if (body == null || body.sharedMesh == null || garment == null || garment.sharedMesh == null)
                return $"{who}: needs the body's and the garment's SkinnedMeshRenderer";
            if (compute == null)
                return $"{who}: no compute shader (Shaders/KisekaeSurfacePush.compute)";
            if (!SystemInfo.supportsComputeShaders)
                return $"{who}: this GPU has no compute shaders";
            if (bakeHeader == null || bakeData == null)
                return $"{who}: needs the bake's header (.surface.json) and data (.surface.bytes)";
            if (!(margin > 0f) || !(maxPush >= margin) || float.IsInfinity(maxPush) || smoothPasses < 0)
                return $"{who}: margin {margin} m and maxPush {maxPush} m must satisfy 0 < margin <= maxPush, " +
                       $"smoothPasses {smoothPasses} >= 0";
            if (limitPasses < 0 || !(stretchLimit >= 0f) || float.IsInfinity(stretchLimit))
                return $"{who}: limitPasses {limitPasses} must be >= 0 and stretchLimit {stretchLimit} a finite " +
                       "number >= 0";
            if (!(carryKeep >= 0f && carryKeep <= 1f))
                return $"{who}: carryKeep {carryKeep} must lie in [0, 1]";
            if (liftLimitPasses < 0 || followPasses < 0)
                return $"{who}: liftLimitPasses {liftLimitPasses} and followPasses {followPasses} must be >= 0";
            if (liftPasses < 0 || unflipPasses < 0 || !(turnStart >= 0f) || float.IsInfinity(turnStart))
                return $"{who}: liftPasses {liftPasses} and unflipPasses {unflipPasses} must be >= 0 and turnStart " +
                       $"{turnStart} a finite number >= 0";
            if (parts != null && parts.body != body)
                return $"{who}: the KisekaeBodyParts on '{parts.name}' is for another body";
            if (contact != null && contact.body != body)
                return $"{who}: the KisekaeBodyContact on '{contact.name}' is for another body";
            KisekaeSurfaceBakeHeader h;
            try
            {
                h = JsonUtility.FromJson<KisekaeSurfaceBakeHeader>(bakeHeader.text);
            }
            catch (ArgumentException e)
            {
                return $"{who}: '{bakeHeader.name}' is not a JSON surface bake header ({e.Message})";
            }
            if (h == null || h.format != BakeFormat || h.version != BakeVersion)
                return $"{who}: '{bakeHeader.name}' is not a version-{BakeVersion} kisekae surface bake " +
                       "(write it again with kisekae fit)";
            if (h.limitPasses < 0 || !(h.stretchLimit >= 0f) || float.IsInfinity(h.stretchLimit))
                return $"{who}: the bake's limitPasses {h.limitPasses} must be >= 0 and its stretchLimit " +
                       $"{h.stretchLimit} a finite number >= 0";
            if (h.candidates != Candidates)
                return $"{who}: the bake has {h.candidates} candidates per vertex, the kernels read {Candidates} " +
                       "(KISEKAE_SURFACE_CANDIDATES)";
            if (!body.sharedMesh.isReadable || !garment.sharedMesh.isReadable)
                return $"{who}: turn on Read/Write in the import settings of '{body.sharedMesh.name}' and " +
                       $"'{garment.sharedMesh.name}' (the triangles and UVs are read once)";
            int n = garment.sharedMesh.vertexCount;
            int nb = body.sharedMesh.vertexCount;
            if (n == 0 || nb == 0)
                return $"{who}: the garment or the body mesh has no vertices";
            if (h.vertices != n)
                return $"{who}: the bake is for a garment of {h.vertices} vertices, '{garment.name}' has {n}";
            if (h.bodyVertices != nb)
                return $"{who}: the bake is for a body of {h.bodyVertices} vertices, '{body.name}' has {nb}";
            int bodyTris = KisekaeCoveredSkin.FullTriangles(body).Length / 3;  // whole, also while skin is culled
            if (h.bodyTriangles != bodyTris)
                return $"{who}: the bake is for a body of {h.bodyTriangles} triangles, '{body.name}' has {bodyTris}";
            if (h.ringEntries < 0 || h.samples < 0 || h.vertexSampleEntries < 0)
                return $"{who}: the bake's ringEntries {h.ringEntries}, samples {h.samples} or vertexSampleEntries " +
                       $"{h.vertexSampleEntries} is negative";
            long[] counts = { 3L * n * Candidates, n + 1L, h.ringEntries, n, n, 3L * h.samples, 3L * h.samples, h.samples,
                              3L * h.samples * Candidates, n + 1L, h.vertexSampleEntries, n, 3L * n, 3L * n, n, nb,
                              12L * n, 4L * n, n };
            if (h.layout == null || h.layout.Length != Layout.Length)
                return $"{who}: the bake's layout is not {string.Join(", ", Layout)}";
            for (int i = 0; i < Layout.Length; i++)
                if (h.layout[i].name != Layout[i] || h.layout[i].count != counts[i])
                    return $"{who}: the bake's layout disagrees with its counts ({Layout[i]})";
            long expected = 0;
            foreach (long c in counts) expected += 4L * c;
            byte[] raw = bakeData.bytes;
            if (raw.Length < expected)
                return $"{who}: '{bakeData.name}' is truncated: {raw.Length} bytes, its header says {expected}";
            if (raw.Length > expected)
                return $"{who}: '{bakeData.name}' has {raw.Length} bytes, more than the {expected} its header says";
            if (!BitConverter.IsLittleEndian)
                return $"{who}: the bake is little-endian and this platform is not";
            if (body.sharedMesh.GetVertexAttributeFormat(VertexAttribute.Position) != VertexAttributeFormat.Float32 ||
                garment.sharedMesh.GetVertexAttributeFormat(VertexAttribute.Position) != VertexAttributeFormat.Float32)
                return $"{who}: the kernels read float32 positions from the skinned vertex buffers";
            var data = new uint[expected / 4];
            Buffer.BlockCopy(raw, 0, data, 0, (int)expected);
            int at = 0;
            for (int i = 0; i < counts[0]; i++)
                if (data[at + i] >= (uint)nb)
                    return $"{who}: candidate corner id {data[at + i]} is outside the body's {nb} vertices";
            at += (int)counts[0];
            if (data[at] != 0u || data[at + n] != (uint)h.ringEntries)
                return $"{who}: ringPtr does not run from 0 to ringEntries {h.ringEntries}";
            for (int i = 0; i < n; i++)
                if (data[at + i + 1] < data[at + i])
                    return $"{who}: ringPtr decreases at vertex {i}";
            at += n + 1;
            for (int i = 0; i < h.ringEntries; i++)
                if (data[at + i] >= (uint)n)
                    return $"{who}: ring neighbour id {data[at + i]} is outside the garment's {n} vertices";
            at += h.ringEntries;
            for (int i = 0; i < n; i++)
                if (data[at + i] >= (uint)n)
                    return $"{who}: weld id {data[at + i]} is outside the garment's {n} vertices";
            at += n;
            for (int i = 0; i < n; i++)
            {
                float chord = BitConverter.ToSingle(raw, 4 * (at + i));
                if (!(chord >= 0f) || float.IsInfinity(chord))
                    return $"{who}: the chord of garment vertex {i} ({chord} m) is not a finite length >= 0";
            }
            at += n;
            int ns = h.samples;
            for (int i = 0; i < 3 * ns; i++)
                if (data[at + i] >= (uint)n)
                    return $"{who}: sample corner id {data[at + i]} is outside the garment's {n} vertices";
            at += 3 * ns;
            for (int i = 0; i < ns; i++)
            {
                float c = BitConverter.ToSingle(raw, 4 * (at + 3 * ns + i));
                if (!Barycentric(raw, at + 3 * i, out float w0, out float w1, out float w2) || !(c >= 0f) ||
                    float.IsInfinity(c))
                    return $"{who}: sample {i} has weights ({w0}, {w1}, {w2}) (must be >= 0 and sum to 1) or " +
                           $"chord {c} m (finite, >= 0)";
            }
            at += 4 * ns;
            for (int i = 0; i < 3 * ns * Candidates; i++)
                if (data[at + i] >= (uint)nb)
                    return $"{who}: sample candidate corner id {data[at + i]} is outside the body's {nb} vertices";
            at += 3 * ns * Candidates;
            if (data[at] != 0u || data[at + n] != (uint)h.vertexSampleEntries)
                return $"{who}: vertexSamplePtr does not run from 0 to vertexSampleEntries {h.vertexSampleEntries}";
            for (int i = 0; i < n; i++)
                if (data[at + i + 1] < data[at + i])
                    return $"{who}: vertexSamplePtr decreases at vertex {i}";
            at += n + 1;
            for (int i = 0; i < h.vertexSampleEntries; i++)
                if (data[at + i] >= 3u * (uint)ns)
                    return $"{who}: vertex sample entry {data[at + i]} is outside 3 x {ns} samples";
            at += h.vertexSampleEntries;
            for (int i = 0; i < n; i++)
            {
                float floor = BitConverter.ToSingle(raw, 4 * (at + i));
                if (!(floor >= 0f && floor < 1f))
                    return $"{who}: the stretch limit's floor at garment vertex {i} ({floor}) is not in [0, 1)";
            }
            at += n;
            for (int i = 0; i < 3 * n; i++)
                if (data[at + i] >= (uint)nb)
                    return $"{who}: the body follow's corner id {data[at + i]} is outside the body's {nb} vertices";
            at += 3 * n;
            for (int i = 0; i < n; i++)
            {
                float share = BitConverter.ToSingle(raw, 4 * (at + 3 * n + i));
                if (!Barycentric(raw, at + 3 * i, out float w0, out float w1, out float w2) ||
                    !(share >= 0f && share <= 1f))
                    return $"{who}: the body follow of garment vertex {i} has weights ({w0}, {w1}, {w2}) (must be " +
                           $">= 0 and sum to 1) or share {share} (must be in [0, 1])";
            }
            at += 4 * n;  // past followBary (3 N) and followShare (N): at is the start of followBary here
            for (int i = 0; i < nb; i++)
            {
                float bound = BitConverter.ToSingle(raw, 4 * (at + i));
                if (!(bound >= 0f))
                    return $"{who}: the depth bound at body vertex {i} ({bound}) is not a length >= 0 (1e30: none)";
            }
            string bad = CheckSelfLayers(data, raw, at + nb, n, who);
            if (bad != null) return bad;
            _data = data;
            _nGarment = n;
            _nBody = nb;
            _nRing = h.ringEntries;
            _nSamples = ns;
            _nSampleEntries = h.vertexSampleEntries;
            return null;
        }

        // The three float32 weights at uint index `at` of a bake's bytes, and whether they are barycentric: each >= 0,
        // summing to 1 within float32 rounding (kisekae.shaders.surface_bake._barycentric); NaN is not.
        static bool Barycentric(byte[] raw, int at, out float w0, out float w1, out float w2)
        {
            w0 = BitConverter.ToSingle(raw, 4 * at);
            w1 = BitConverter.ToSingle(raw, 4 * (at + 1));
            w2 = BitConverter.ToSingle(raw, 4 * (at + 2));
            return w0 >= 0f && w1 >= 0f && w2 >= 0f && Math.Abs(w0 + w1 + w2 - 1f) < 1e-5f;
        }

        // Null when garmentCorrectives is unset or fits the garment and the kernels, else the message that refuses it.
        public string CorrectivesProblem()
        {
            string who = $"KisekaeSurfacePush on '{name}'";
            KisekaeBodyCorrectives c = garmentCorrectives;
            if (c == null) return null;
            if (c.body != garment)
                return $"{who}: the KisekaeBodyCorrectives on '{c.name}' is for another renderer, not the garment";
            if (c.blendShapes)
                return $"{who}: turn blendShapes off on the KisekaeBodyCorrectives on '{c.name}': the push keeps the " +
                       "plain skinning as its reference and adds the garment's correctives where it starts";
            if (!c.isActiveAndEnabled || c.Features == null || c.VertexPtr == null)
                return $"{who}: the KisekaeBodyCorrectives on '{c.name}' is disabled or refused its bake";
            if (c.Centres != CorrectiveCentres)
                return $"{who}: the garment's correctives have {c.Centres} centres a joint, the kernel reads " +
                       $"{CorrectiveCentres}";
            if (!garment.sharedMesh.isReadable)
                return $"{who}: turn on Read/Write in the import settings of '{garment.sharedMesh.name}' (its bone " +
                       "weights are read once)";
            return null;
        }

        // Null when bodyCorrectives is unset or fits the body and the kernels, else the message that refuses it.
        public string BodyCorrectivesProblem()
        {
            string who = $"KisekaeSurfacePush on '{name}'";
            KisekaeBodyCorrectives c = bodyCorrectives;
            if (c == null) return null;
            if (c.body != body)
                return $"{who}: the KisekaeBodyCorrectives on '{c.name}' is for another renderer, not the body";
            if (!c.blendShapes)
                return $"{who}: the body's KisekaeBodyCorrectives on '{c.name}' must apply its blend shapes: the body " +
                       "follow takes their offsets back out of the body's skinning";
            if (!c.isActiveAndEnabled || c.Features == null || c.VertexPtr == null)
                return $"{who}: the KisekaeBodyCorrectives on '{c.name}' is disabled or refused its bake";
            if (c.Centres != CorrectiveCentres)
                return $"{who}: the body's correctives have {c.Centres} centres a joint, the kernel reads " +
                       $"{CorrectiveCentres}";
            return null;
        }

        // One renderer's correctives (c, or none: zero entries) and skin, uploaded once.
        CorrectiveSet UploadCorrectiveSet(KisekaeBodyCorrectives c, SkinnedMeshRenderer r, int n)
        {
            var set = new CorrectiveSet { source = c, renderer = r };
            int e = c != null ? c.EntryJoint.Length : 0;
            var range = new uint[2 * Math.Max(n, 1)];
            var coef = new Vector4[Math.Max(e * CorrectiveCentres, 1)];
            for (int v = 0; c != null && v < n; v++)
            {
                range[2 * v] = c.VertexPtr[v];
                range[2 * v + 1] = c.VertexPtr[v + 1] - c.VertexPtr[v];
            }
            for (int i = 0; i < e * CorrectiveCentres; i++)
                coef[i] = new Vector4(c.Coefficients[3 * i], c.Coefficients[3 * i + 1], c.Coefficients[3 * i + 2], 0f);
            set.range = Make(Math.Max(n, 1), 8);
            set.range.SetData(range);
            set.joint = Upload(c != null ? c.EntryJoint : new uint[0], 0, e);
            set.coef = Make(coef.Length, 16);
            set.coef.SetData(coef);
            set.feature = Make(c != null ? c.Features.Length : 1, 4);
            // 8 influences a vertex, heaviest first (Unity sorts them), renormalised when a vertex has more
            var bones = new uint[SkinInfluences * n];
            var weights = new float[SkinInfluences * n];
            if (c != null)
            {
                var per = r.sharedMesh.GetBonesPerVertex();
                var all = r.sharedMesh.GetAllBoneWeights();
                for (int v = 0, at = 0; v < n; at += per[v], v++)
                {
                    int k = Math.Min(per[v], SkinInfluences);
                    float sum = 0f;
                    for (int i = 0; i < k; i++) sum += all[at + i].weight;
                    for (int i = 0; i < k; i++)
                    {
                        bones[SkinInfluences * v + i] = (uint)all[at + i].boneIndex;
                        weights[SkinInfluences * v + i] = sum > 0f ? all[at + i].weight / sum : 0f;
                    }
                }
            }
            set.bones = Make(bones.Length, 4);
            set.bones.SetData(bones);
            set.weights = Make(weights.Length, 4);
            set.weights.SetData(weights);
            set.rowData = new Vector4[3 * Math.Max(r.bones.Length, 1)];
            set.rows = Make(set.rowData.Length, 16);
            return set;
        }

        // The garment's and (with bodyCorrectives) the body's correctives, and the body follow's buffers.
        void UploadCorrectives(int n, int nb)
        {
            _garmentCorrective = Make(n, 16);
            _garmentCorrective.SetData(new Vector4[n]);
            _garmentSet = UploadCorrectiveSet(garmentCorrectives, garment, n);
            _bodySet = bodyCorrectives != null ? UploadCorrectiveSet(bodyCorrectives, body, nb) : null;
            _bodyOffset = Make(nb, 16);
            _bodyOffset.SetData(new Vector4[nb]);  // stays zero without bodyCorrectives
            _bodyBeyond = Make(nb, 16);
            _followA = Make(n, 16);
            _followB = Make(n, 16);
            _noFollow = Make(n, 16);
            _noFollow.SetData(new Vector4[n]);
        }

        // This frame's features and the bones' skinning rotations (bone.localToWorld * bindpose, the mesh's import
        // scale divided out: the offsets are kisekae's metres), then `kernel` (KisekaeGarmentCorrectives or
        // KisekaeBodyOffsets) over `count` vertices into `target` (bound as `output`).
        void RecordCorrectiveSet(CommandBuffer cmd, CorrectiveSet set, int kernel, string output, GraphicsBuffer target,
                                 int count)
        {
            ComputeShader cs = compute;
            Matrix4x4[] bindposes = set.renderer.sharedMesh.bindposes;
            Transform[] bones = set.renderer.bones;
            for (int b = 0; b < bones.Length; b++)
            {
                Matrix4x4 m = bones[b] != null ? bones[b].localToWorldMatrix * bindposes[b] : Matrix4x4.identity;
                float scale = ((Vector3)m.GetColumn(0)).magnitude;
                scale = scale > 1e-12f ? scale : 1f;
                for (int r = 0; r < 3; r++) set.rowData[3 * b + r] = m.GetRow(r) / scale;
            }
            cmd.SetBufferData(set.rows, set.rowData);
            cmd.SetBufferData(set.feature, set.source.Features);
            var bound = new (string, GraphicsBuffer)[] {
                ("_KisekaeCorrectiveRange", set.range), ("_KisekaeCorrectiveJoint", set.joint),
                ("_KisekaeCorrectiveCoef", set.coef), ("_KisekaeCorrectiveFeature", set.feature),
                ("_KisekaeSkinBones", set.bones), ("_KisekaeSkinWeights", set.weights),
                ("_KisekaeSkinRows", set.rows), (output, target) };
            foreach ((string id, GraphicsBuffer b) in bound)
                cmd.SetComputeBufferParam(cs, kernel, id, b);
            cmd.DispatchCompute(cs, kernel, Groups(count), 1, 1);
        }

        // The body follow after the body's normals: KisekaeFollowGather, then followPasses smoothing passes;
        // returns the buffer that holds the result (the zeros without bodyFollow).
        GraphicsBuffer RecordFollow(CommandBuffer cmd)
        {
            if (!bodyFollow) return _noFollow;
            ComputeShader cs = compute;
            var bound = new (string, GraphicsBuffer)[] {
                ("_KisekaeFollowCorners", _followCorners), ("_KisekaeFollowBary", _followBary),
                ("_KisekaeFollowShare", _followShare), ("_KisekaeBodyBeyond", _bodyBeyond),
                ("_KisekaeBodyNormals", _bodyNormals), ("_KisekaeDisplacementOut", _followA) };
            foreach ((string id, GraphicsBuffer b) in bound)
                cmd.SetComputeBufferParam(cs, _kFollowGather, id, b);
            cmd.DispatchCompute(cs, _kFollowGather, Groups(_nGarment), 1, 1);
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingPtr", _ringPtr);
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingIdx", _ringIdx);
            GraphicsBuffer a = _followA, b2 = _followB;
            for (int pass = 0; pass < followPasses; pass++)  // Jacobi, as the push's smoothing
            {
                Pass(cmd, _kSmooth, a, b2, _nGarment);
                (a, b2) = (b2, a);
            }
            return a;
        }

        // Null when there is no garment beneath or its layer bake fits this garment and that one, else the message
        // that refuses it. Reads the layer bake's candidates into _layerData.
        public string LayerProblem()
        {
            string who = $"KisekaeSurfacePush on '{name}'";
            if (beneath == null) return null;
            if (beneath == this || beneath.garment == garment)
                return $"{who}: a garment cannot be worn beneath itself";
            if (beneath.garment == null || beneath.garment.sharedMesh == null || beneath.body != body)
                return $"{who}: beneath ('{beneath.name}') needs its garment and the same body as this one";
            if (layerHeader == null || layerData == null)
                return $"{who}: beneath is set, so it needs the layer bake (OUTER.over.INNER.surface.json and " +
                       ".surface.bytes from kisekae fit --layered)";
            KisekaeSurfaceBakeHeader h;
            try
            {
                h = JsonUtility.FromJson<KisekaeSurfaceBakeHeader>(layerHeader.text);
            }
            catch (ArgumentException e)
            {
                return $"{who}: '{layerHeader.name}' is not a JSON surface bake header ({e.Message})";
            }
            Mesh inner = beneath.garment.sharedMesh;
            int ni = inner.vertexCount, nt = inner.triangles.Length / 3;
            if (h == null || h.format != BakeFormat || h.version != BakeVersion || h.candidates != Candidates)
                return $"{who}: '{layerHeader.name}' is not a version-{BakeVersion} kisekae surface bake of " +
                       $"{Candidates} candidates (write it again with kisekae fit --layered)";
            if (h.vertices != _nGarment || h.samples != _nSamples || h.bodyVertices != ni || h.bodyTriangles != nt)
                return $"{who}: the layer bake '{layerHeader.name}' is for {h.vertices} vertices and {h.samples} " +
                       $"samples over {h.bodyVertices} vertices and {h.bodyTriangles} triangles; this garment has " +
                       $"{_nGarment} and {_nSamples}, '{beneath.garment.name}' {ni} and {nt}";
            if (h.layout == null || h.layout.Length != Layout.Length)
                return $"{who}: the layer bake's layout is not {string.Join(", ", Layout)}";
            long expected = 0, sampleAt = 0;
            for (int i = 0; i < Layout.Length; i++)
            {
                if (h.layout[i].name != Layout[i] || h.layout[i].count < 0)
                    return $"{who}: the layer bake's layout is not {string.Join(", ", Layout)}";
                if (Layout[i] == "sampleCorners") sampleAt = expected;
                expected += h.layout[i].count;
            }
            long corners = 3L * _nGarment * Candidates, sampleCorners = 3L * _nSamples * Candidates;
            if (h.layout[0].count != corners || h.layout[Array.IndexOf(Layout, "sampleCorners")].count != sampleCorners)
                return $"{who}: the layer bake's layout disagrees with its counts (corners, sampleCorners)";
            byte[] raw = layerData.bytes;
            if (raw.Length != 4L * expected)
                return $"{who}: '{layerData.name}' has {raw.Length} bytes, its header says {4L * expected}";
            var data = new uint[expected];
            Buffer.BlockCopy(raw, 0, data, 0, raw.Length);
            for (long i = 0; i < corners; i++)
                if (data[i] >= (uint)ni)
                    return $"{who}: layer candidate corner id {data[i]} is outside '{beneath.garment.name}''s {ni} vertices";
            for (long i = 0; i < sampleCorners; i++)
                if (data[sampleAt + i] >= (uint)ni)
                    return $"{who}: layer sample corner id {data[sampleAt + i]} is outside '{beneath.garment.name}''s " +
                           $"{ni} vertices";
            _layerData = data;
            _layerSampleAt = (int)sampleAt;
            _nInner = ni;
            return null;
        }

        // The layer bake's buffers (with beneath), and this garment registered to run right after beneath's.
        void UploadLayer()
        {
            int n = _nGarment;
            _layerCorners = Upload(_layerData, 0, 3 * n * Candidates);
            _layerSampleCorners = Upload(_layerData, _layerSampleAt, 3 * _nSamples * Candidates);
            _layerData = null;
            _layerChord = Make(n, 4);
            _layerChord.SetData(new float[n]);  // the layer push has no chord allowance
            _layerCurvature = Make(_nInner, 4);
            _layerDepthBound = Make(_nInner, 4);
            var noBound = new float[_nInner];
            for (int i = 0; i < _nInner; i++) noBound[i] = 1e30f;
            _layerDepthBound.SetData(noBound);  // a garment beneath has no inside: the layer push trusts every candidate
            int[] innerTris = beneath.garment.sharedMesh.triangles;
            VertexFaces(innerTris, _nInner, i => i, out int[] innerPtr, out int[] innerFaces);
            _innerTriangles = Upload(innerTris);
            _innerFacePtr = Upload(innerPtr);
            _innerFaces = Upload(innerFaces);
            _stepA = Make(n, 16);
            _stepB = Make(n, 16);
            if (!beneath._above.Contains(this)) beneath._above.Add(this);
        }

        GraphicsBuffer Make(int count, int stride)
        {
            var b = new GraphicsBuffer(GraphicsBuffer.Target.Structured, Math.Max(count, 1), stride);
            _owned.Add(b);
            return b;
        }

        GraphicsBuffer Upload(uint[] values, int start, int count)
        {
            GraphicsBuffer b = Make(count, 4);
            if (count > 0) b.SetData(values, start, 0, count);
            return b;
        }

        GraphicsBuffer Upload(int[] values)
        {
            GraphicsBuffer b = Make(values.Length, 4);
            if (values.Length > 0) b.SetData(values);
            return b;
        }

        // Per vertex (or per representative, with `rep`), the triangles around it, as CSR (ptr, faces).
        static void VertexFaces(int[] triangles, int n, Func<int, int> rep, out int[] ptr, out int[] faces)
        {
            ptr = new int[n + 1];
            for (int c = 0; c < triangles.Length; c++) ptr[rep(triangles[c]) + 1]++;
            for (int i = 0; i < n; i++) ptr[i + 1] += ptr[i];
            faces = new int[triangles.Length];
            var fill = (int[])ptr.Clone();
            for (int c = 0; c < triangles.Length; c++) faces[fill[rep(triangles[c])]++] = c / 3;
        }

        void OnEnable()
        {
            string problem = BakeProblem() ?? LayerProblem() ?? CorrectivesProblem() ?? BodyCorrectivesProblem();
            if (problem != null)
            {
                Debug.LogError(problem, this);
                enabled = false;
                return;
            }
            body.vertexBufferTarget |= GraphicsBuffer.Target.Raw;
            garment.vertexBufferTarget |= GraphicsBuffer.Target.Raw;
            _kBodyPrepare = compute.FindKernel("KisekaeBodyPrepare");
            _kBodyNormals = compute.FindKernel("KisekaeBodyNormals");
            _kBodyCurvatures = compute.FindKernel("KisekaeBodyCurvatures");
            _kPushFirst = compute.FindKernel("KisekaeSurfacePushFirst");
            _kSmooth = compute.FindKernel("KisekaeSmooth");
            _kPushSecond = compute.FindKernel("KisekaeSurfacePushSecond");
            _kStretchLimit = compute.FindKernel("KisekaeStretchLimits");
            _kSampleLifts = compute.FindKernel("KisekaeSampleLifts");
            _kEdgeLifts = compute.FindKernel("KisekaeEdgeLifts");
            _kLiftApply = compute.FindKernel("KisekaeLiftApply");
            _kUnflips = compute.FindKernel("KisekaeUnflips");
            _kFinish = compute.FindKernel("KisekaeFinish");
            _kGarmentNormals = compute.FindKernel("KisekaeGarmentNormals");
            _kLayerPush = compute.FindKernel("KisekaeLayerPush");
            _kLayerPushAgain = compute.FindKernel("KisekaeLayerPushAgain");
            _kSelfLayers = compute.FindKernel("KisekaeSelfLayers");
            _kSelfApply = compute.FindKernel("KisekaeSelfLayerApply");
            _kGarmentCorrectives = compute.FindKernel("KisekaeGarmentCorrectives");
            _kBodyOffsets = compute.FindKernel("KisekaeBodyOffsets");
            _kFollowGather = compute.FindKernel("KisekaeFollowGather");

            int n = _nGarment, nb = _nBody, e = _nRing, ns = _nSamples;
            int at = 0;
            _corners = Upload(_data, at, 3 * n * Candidates);
            at += 3 * n * Candidates;
            _ringPtr = Upload(_data, at, n + 1);
            at += n + 1;
            _ringIdx = Upload(_data, at, e);
            at += e;
            _weld = Upload(_data, at, n);
            var weld = new int[n];
            for (int i = 0; i < n; i++) weld[i] = (int)_data[at + i];
            at += n;
            _chord = Upload(_data, at, n);  // float32 bits, read as StructuredBuffer<float>
            at += n;
            _sampleEnds = Upload(_data, at, 3 * ns);
            at += 3 * ns;
            _sampleWeights = Upload(_data, at, 3 * ns);  // float32 bits
            at += 3 * ns;
            _sampleChord = Upload(_data, at, ns);  // float32 bits
            at += ns;
            _sampleCorners = Upload(_data, at, 3 * ns * Candidates);
            at += 3 * ns * Candidates;
            _vertexSamplePtr = Upload(_data, at, n + 1);
            at += n + 1;
            _vertexSampleIdx = Upload(_data, at, _nSampleEntries);
            at += _nSampleEntries;
            _shortest = Upload(_data, at, n);  // float32 bits: the stretch limit's floor per vertex
            at += n;
            _followCorners = Upload(_data, at, 3 * n);  // the body follow's binding
            at += 3 * n;
            _followBary = Upload(_data, at, 3 * n);  // float32 bits
            at += 3 * n;
            _followShare = Upload(_data, at, n);  // float32 bits
            at += n;
            _depthBound = Upload(_data, at, nb);  // float32 bits: the body's depth bound per body vertex
            at += nb;
            _selfCorners = Upload(_data, at, 12 * n);  // the self layers: 4 candidates of 3 garment vertex ids ...
            at += 12 * n;
            _selfSide = Upload(_data, at, 4 * n);  // ... their sides (float32 bits, 0 after the last) ...
            _hasSelf = false;
            for (int i = 0; i < 4 * n && !_hasSelf; i++) _hasSelf = _data[at + i] != 0u;
            at += 4 * n;
            _selfGap = Upload(_data, at, n);  // ... and each vertex's gap (float32 bits, m)
            if (_hasSelf)  // the steps of the self-layer passes, raw and smoothed
            {
                _selfRaw = Make(n, 16);
                _selfA = Make(n, 16);
                _selfB = Make(n, 16);
            }
            _data = null;

            int[] bodyTris = KisekaeCoveredSkin.FullTriangles(body);  // every triangle, whatever is culled
            VertexFaces(bodyTris, nb, i => i, out int[] bodyPtr, out int[] bodyFaces);
            _bodyTriangles = Upload(bodyTris);
            _bodyFacePtr = Upload(bodyPtr);
            _bodyFaces = Upload(bodyFaces);
            int[] garmentTris = garment.sharedMesh.triangles;
            VertexFaces(garmentTris, n, i => weld[i], out int[] garmentPtr, out int[] garmentFaces);
            _garmentTriangles = Upload(garmentTris);
            _garmentFacePtr = Upload(garmentPtr);
            _garmentFaces = Upload(garmentFaces);
            var uv = new List<Vector2>(n);
            garment.sharedMesh.GetUVs(0, uv);
            if (uv.Count != n) uv = new List<Vector2>(new Vector2[n]);
            _uv = Make(n, 8);
            _uv.SetData(uv);
            _contactJoints = Make(1, 16);
            _contactSides = Make(1, 16);
            _contactRest = Make(1, 16);
            _contactUploaded = false;

            _bodyPositions = Make(nb, 16);
            _bodyNormals = Make(nb, 16);
            _bodyCurvature = Make(nb, 4);
            _dispA = Make(n, 16);
            _dispB = Make(n, 16);
            _positions = Make(n, 16);
            _normals = Make(n, 16);
            _correction = Make(n, 16);
            _finishBudget = Make(n, 4);  // what the finish may still move each vertex this frame (m)
            _sampleLift = Make(ns, 16);
            _liftA = Make(n, 16);
            _liftB = Make(n, 16);
            UploadCorrectives(n, nb);
            ResetCarry();
            FillUntilTheFirstFrame(n);

            _block = BindDrawn(garment, IdSurfacePositions, _positions, IdSurfaceNormals, _normals, Keyword,
                               "Surface Push", "does not draw the corrected garment");
            if (beneath != null) UploadLayer();
            _cmd = new CommandBuffer { name = $"KisekaeSurfacePush {garment.name}" };
            RenderPipelineManager.beginContextRendering += OnBeginContextRendering;
        }

        // Forget the previous frame's correction (after a teleport, a cut or a new animation that does not continue the
        // last one): the next frame is pushed from the skinned garment alone, as the stateless push.
        public void ResetCarry()
        {
            if (_correction != null) _correction.SetData(new Vector4[_correction.count]);
        }

        // The garment as Unity skins it now, uncorrected, so the material has positions before the first dispatch.
        void FillUntilTheFirstFrame(int n)
        {
            var baked = new Mesh();
            garment.BakeMesh(baked, true);
            Vector3[] v = baked.vertices;
            Vector3[] nrm = baked.normals;
            Matrix4x4 m = garment.transform.localToWorldMatrix;
            var pos = new Vector4[n];
            var nor = new Vector4[n];
            for (int i = 0; i < n && i < v.Length; i++)
            {
                Vector3 p = m.MultiplyPoint3x4(v[i]);
                Vector3 q = i < nrm.Length ? m.MultiplyVector(nrm[i]).normalized : Vector3.up;
                pos[i] = new Vector4(p.x, p.y, p.z, 0f);
                nor[i] = new Vector4(q.x, q.y, q.z, 0f);
            }
            _positions.SetData(pos);
            _normals.SetData(nor);
            if (Application.isPlaying) Destroy(baked);
            else DestroyImmediate(baked);
        }

        void OnDisable()
        {
            RenderPipelineManager.beginContextRendering -= OnBeginContextRendering;
            if (beneath != null) beneath._above.Remove(this);
            _layerCorners = null;  // released with the others below
            if (garment != null && _block != null) garment.SetPropertyBlock(null);  // the material's buffers go away
            if (body != null && _bodyBlock != null) body.SetPropertyBlock(null);
            _bodyBlock = null;
            _cmd?.Release();
            _cmd = null;
            _bodyVertices?.Dispose();
            _garmentVertices?.Dispose();
            _bodyVertices = _garmentVertices = null;
            foreach (GraphicsBuffer b in _owned) b.Release();
            _owned.Clear();
            _correction = null;  // released with the others: ResetCarry has nothing to clear until enabled again
            _data = null;
        }

        // KisekaeBodyContact may be enabled after this component: its per-vertex data go up once it has accepted
        // its bake.
        bool ContactReady()
        {
            if (contact == null || !contact.Active) return false;
            if (_contactUploaded) return true;
            var joints = new List<Vector4>(contact.VertexJoints);
            var sides = new List<Vector4>(contact.VertexSides);
            var rest = new List<Vector4>(_nBody);
            foreach (Vector3 r in contact.VertexRest) rest.Add(new Vector4(r.x, r.y, r.z, 0f));
            if (joints.Count != _nBody || sides.Count != _nBody || rest.Count != _nBody) return false;
            _owned.Remove(_contactJoints);
            _owned.Remove(_contactSides);
            _owned.Remove(_contactRest);
            _contactJoints.Release();
            _contactSides.Release();
            _contactRest.Release();
            _contactJoints = Make(_nBody, 16);
            _contactSides = Make(_nBody, 16);
            _contactRest = Make(_nBody, 16);
            _contactJoints.SetData(joints);
            _contactSides.SetData(sides);
            _contactRest.SetData(rest);
            _contactUploaded = true;
            return true;
        }

        static int Groups(int n) => (n + Group - 1) / Group;

        readonly List<KisekaeSurfacePush> _above = new List<KisekaeSurfacePush>();  // worn over this garment

        void OnBeginContextRendering(ScriptableRenderContext context, List<Camera> cameras)
        {
            // a garment worn over another runs right after it (RunFrame below), on the inner garment's result
            if (beneath == null || !beneath.isActiveAndEnabled) RunFrame();
        }

        void RunFrame()
        {
            if (_cmd == null || body == null || garment == null) return;
            // Unity has skinned both renderers for this frame by now (PostLateUpdate); null until the first skinning.
            GraphicsBuffer bodyVertices = body.GetVertexBuffer();
            GraphicsBuffer garmentVertices = garment.GetVertexBuffer();
            if (bodyVertices == null || garmentVertices == null)
            {
                bodyVertices?.Dispose();
                garmentVertices?.Dispose();
                return;
            }
            _bodyVertices?.Dispose();
            _garmentVertices?.Dispose();
            _bodyVertices = bodyVertices;
            _garmentVertices = garmentVertices;
            Record(_cmd);
            Graphics.ExecuteCommandBuffer(_cmd);  // before the context's draws, which run when it is submitted
            if (_bodyBlock == null && drawBody && parts != null && parts.Active) DrawBody();
            foreach (KisekaeSurfacePush outer in _above) outer.RunFrame();  // on this frame's result
        }

        // The body's renderer draws the prepared body from now on (bound once its first frame has run, so that it
        // never reads an empty buffer).
        void DrawBody()
        {
            _bodyBlock = BindDrawn(body, IdBodyPrepared, _bodyPositions, IdBodyPreparedNormals, _bodyNormals, BodyKeyword,
                                   "Prepared Body", "draws the body without the part contact the garment was pushed " +
                                   "out of");
        }

        // Sets a renderer's positions and normals buffers (world space, read by SV_VertexID) in its property block,
        // and warns about each of its materials without the keyword that reads them.
        MaterialPropertyBlock BindDrawn(Renderer r, int positionsId, GraphicsBuffer positions, int normalsId,
                                        GraphicsBuffer normals, string keyword, string toggle, string otherwise)
        {
            var block = new MaterialPropertyBlock();
            r.GetPropertyBlock(block);
            block.SetBuffer(positionsId, positions);
            block.SetBuffer(normalsId, normals);
            r.SetPropertyBlock(block);
            foreach (Material m in r.sharedMaterials)
                if (m != null && !m.IsKeywordEnabled(keyword))
                    Debug.LogWarning($"KisekaeSurfacePush on '{name}': material '{m.name}' of '{r.name}' does not " +
                                     $"have {toggle} ({keyword}) on, so it {otherwise}", this);
            return block;
        }

        // What the kernels that push read as the surface to push out of: the body (or, for the layer push, the
        // garment beneath: its positions, normals, curvature and this garment's candidates on it) and the chords.
        void BindSurface(CommandBuffer cmd, GraphicsBuffer positions, GraphicsBuffer normals, GraphicsBuffer curvature,
                         GraphicsBuffer corners, GraphicsBuffer chord, GraphicsBuffer depthBound)
        {
            ComputeShader cs = compute;
            Texture mask = maskMap != null ? maskMap : Texture2D.blackTexture;
            foreach (int k in new[] { _kPushFirst, _kPushSecond, _kStretchLimit, _kSampleLifts, _kLiftApply, _kUnflips,
                                      _kLayerPush, _kLayerPushAgain })  // the kernels that push
            {
                cmd.SetComputeBufferParam(cs, k, "_KisekaeGarmentSkinned", _garmentVertices);
                cmd.SetComputeBufferParam(cs, k, "_KisekaeBodyPositions", positions);
                cmd.SetComputeBufferParam(cs, k, "_KisekaeBodyNormals", normals);
                cmd.SetComputeBufferParam(cs, k, "_KisekaeSurfaceCorners", corners);
                cmd.SetComputeBufferParam(cs, k, "_KisekaeSurfaceChord", chord);
                cmd.SetComputeBufferParam(cs, k, "_KisekaeBodyCurvature", curvature);
                cmd.SetComputeBufferParam(cs, k, "_KisekaeBodyDepthBound", depthBound);
                cmd.SetComputeBufferParam(cs, k, "_KisekaeGarmentUV", _uv);
                cmd.SetComputeTextureParam(cs, k, "_KisekaeMaskMap", mask);
            }
        }

        // The samples' arrays of the edge lift's two passes (KisekaeSampleLifts, KisekaeEdgeLifts), with the candidates
        // `corners` (on the body, or on the garment beneath for the layer push); the gathered lifts go to _liftA.
        void BindSamples(CommandBuffer cmd, GraphicsBuffer corners)
        {
            ComputeShader cs = compute;
            cmd.SetComputeBufferParam(cs, _kSampleLifts, "_KisekaeSampleEnds", _sampleEnds);
            cmd.SetComputeBufferParam(cs, _kSampleLifts, "_KisekaeSampleWeights", _sampleWeights);
            cmd.SetComputeBufferParam(cs, _kSampleLifts, "_KisekaeSampleChord", _sampleChord);
            cmd.SetComputeBufferParam(cs, _kSampleLifts, "_KisekaeSampleCorners", corners);
            cmd.SetComputeBufferParam(cs, _kSampleLifts, "_KisekaeSampleLiftRW", _sampleLift);
            cmd.SetComputeBufferParam(cs, _kEdgeLifts, "_KisekaeSampleWeights", _sampleWeights);
            cmd.SetComputeBufferParam(cs, _kEdgeLifts, "_KisekaeSampleLift", _sampleLift);
            cmd.SetComputeBufferParam(cs, _kEdgeLifts, "_KisekaeVertexSamplePtr", _vertexSamplePtr);
            cmd.SetComputeBufferParam(cs, _kEdgeLifts, "_KisekaeVertexSampleIdx", _vertexSampleIdx);
            cmd.SetComputeBufferParam(cs, _kEdgeLifts, "_KisekaeDisplacementOut", _liftA);
        }

        // One dispatch of kernel k over `count` threads from `src` (_KisekaeDisplacementIn) into `dst` (...Out).
        void Pass(CommandBuffer cmd, int k, GraphicsBuffer src, GraphicsBuffer dst, int count)
        {
            cmd.SetComputeBufferParam(compute, k, "_KisekaeDisplacementIn", src);
            cmd.SetComputeBufferParam(compute, k, "_KisekaeDisplacementOut", dst);
            cmd.DispatchCompute(compute, k, Groups(count), 1, 1);
        }

        // The layer push (kisekae.fit.layer_push.layer_push) out of beneath's corrected garment, between the
        // stretch limit and the edge lift: its curvature, KisekaeLayerPush, LayerSmooth passes of the steps,
        // KisekaeLayerPushAgain, LayerLiftPasses rounds of the edge lift against it; then the body bound again.
        void RecordLayer(CommandBuffer cmd, ref GraphicsBuffer src, ref GraphicsBuffer dst)
        {
            ComputeShader cs = compute;
            cmd.SetComputeIntParam(cs, "_KisekaeBodyCount", _nInner);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyPositions", beneath._positions);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyNormals", beneath._normals);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyTriangles", _innerTriangles);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyVertexFacePtr", _innerFacePtr);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyVertexFaces", _innerFaces);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyCurvatureRW", _layerCurvature);
            cmd.DispatchCompute(cs, _kBodyCurvatures, Groups(_nInner), 1, 1);
            cmd.SetComputeIntParam(cs, "_KisekaeBodyCount", _nBody);
            BindSurface(cmd, beneath._positions, beneath._normals, _layerCurvature, _layerCorners, _layerChord,
                        _layerDepthBound);
            cmd.SetComputeFloatParam(cs, "_KisekaeReach", LayerReach);
            cmd.SetComputeFloatParam(cs, "_KisekaeLayerFade", LayerFade);
            cmd.SetComputeFloatParam(cs, "_KisekaeFinishStep", -1f);  // the finish cap is for the stages after
            Pass(cmd, _kLayerPush, src, _stepA, _nGarment);
            GraphicsBuffer a = _stepA, b = _stepB;
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingPtr", _ringPtr);
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingIdx", _ringIdx);
            for (int pass = 0; pass < LayerSmooth; pass++)
            {
                Pass(cmd, _kSmooth, a, b, _nGarment);
                (a, b) = (b, a);
            }
            cmd.SetComputeBufferParam(cs, _kLayerPushAgain, "_KisekaeLift", a);
            Pass(cmd, _kLayerPushAgain, src, dst, _nGarment);
            (src, dst) = (dst, src);
            BindSamples(cmd, _layerSampleCorners);
            cmd.SetComputeBufferParam(cs, _kLiftApply, "_KisekaeLift", _liftA);  // no smoothing of these lifts
            cmd.SetComputeBufferParam(cs, _kLiftApply, "_KisekaeFinishBudgetRW", _finishBudget);
            for (int pass = 0; _nSamples > 0 && pass < LayerLiftPasses; pass++)
            {
                cmd.SetComputeBufferParam(cs, _kSampleLifts, "_KisekaeDisplacementIn", src);
                cmd.DispatchCompute(cs, _kSampleLifts, Groups(_nSamples), 1, 1);
                cmd.DispatchCompute(cs, _kEdgeLifts, Groups(_nGarment), 1, 1);
                Pass(cmd, _kLiftApply, src, dst, _nGarment);
                (src, dst) = (dst, src);
            }
            BindSurface(cmd, _bodyPositions, _bodyNormals, _bodyCurvature, _corners, _chord, _depthBound);
            cmd.SetComputeFloatParam(cs, "_KisekaeReach", reach > 0f ? reach : maxPush);
            cmd.SetComputeFloatParam(cs, "_KisekaeFinishStep", finishStep >= 0f ? finishStep : -1f);
        }

        // The self layers (kisekae.fit.self_layers.self_layer_stage), after the stretch limit and any layer push:
        // SelfPasses times KisekaeSelfLayers (the steps, w = moved), SelfSmooth KisekaeSmooth passes of the steps into
        // two other buffers, KisekaeSelfLayerApply (a moved vertex keeps its own step, the others take the smoothed one).
        void RecordSelf(CommandBuffer cmd, ref GraphicsBuffer src, ref GraphicsBuffer dst)
        {
            ComputeShader cs = compute;
            cmd.SetComputeBufferParam(cs, _kSelfLayers, "_KisekaeGarmentSkinned", _garmentVertices);
            cmd.SetComputeBufferParam(cs, _kSelfLayers, "_KisekaeSelfCorners", _selfCorners);
            cmd.SetComputeBufferParam(cs, _kSelfLayers, "_KisekaeSelfSide", _selfSide);
            cmd.SetComputeBufferParam(cs, _kSelfLayers, "_KisekaeSelfGap", _selfGap);
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingPtr", _ringPtr);
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingIdx", _ringIdx);
            cmd.SetComputeBufferParam(cs, _kSelfApply, "_KisekaeSelfStep", _selfRaw);
            for (int pass = 0; pass < SelfPasses; pass++)
            {
                Pass(cmd, _kSelfLayers, src, _selfRaw, _nGarment);
                GraphicsBuffer a = _selfRaw, b = _selfA;
                for (int smooth = 0; smooth < SelfSmooth; smooth++)  // Jacobi; the raw steps stay for the apply
                {
                    Pass(cmd, _kSmooth, a, b, _nGarment);
                    a = b;
                    b = b == _selfA ? _selfB : _selfA;
                }
                cmd.SetComputeBufferParam(cs, _kSelfApply, "_KisekaeLift", a);
                Pass(cmd, _kSelfApply, src, dst, _nGarment);
                (src, dst) = (dst, src);
            }
        }

        // Null when the bake's self layers (from `at` in `data` / `raw`) are well formed, else the message: sides +1
        // or -1 then 0 after a vertex's last candidate, corner ids within the garment, gaps finite lengths >= 0.
        static string CheckSelfLayers(uint[] data, byte[] raw, int at, int n, string who)
        {
            int sideAt = at + 12 * n, gapAt = sideAt + 4 * n;
            for (int v = 0; v < n; v++)
            {
                bool ended = false;
                for (int k = 0; k < 4; k++)
                {
                    float side = BitConverter.ToSingle(raw, 4 * (sideAt + 4 * v + k));
                    if (side != 0f && (ended || (side != 1f && side != -1f)))
                        return $"{who}: the self layers of garment vertex {v} have side {side} at candidate {k} " +
                               "(must be +1 or -1, then 0 after the last)";
                    ended |= side == 0f;
                    for (int c = 0; !ended && c < 3; c++)
                        if (data[at + 3 * (4 * v + k) + c] >= (uint)n)
                            return $"{who}: self-layer corner id {data[at + 3 * (4 * v + k) + c]} is outside the " +
                                   $"garment's {n} vertices";
                }
                float gap = BitConverter.ToSingle(raw, 4 * (gapAt + v));
                if (!(gap >= 0f) || float.IsInfinity(gap))
                    return $"{who}: the self-layer gap at garment vertex {v} ({gap}) is not a finite length >= 0";
            }
            return null;
        }

        void Record(CommandBuffer cmd)
        {
            ComputeShader cs = compute;
            cmd.Clear();
            // 1. the body: skinned -> world (+ contact), then its normals, then its curvature
            bool contactOn = ContactReady();
            cmd.SetComputeIntParam(cs, "_KisekaeBodyCount", _nBody);
            cmd.SetComputeIntParam(cs, "_KisekaeBodyStride", _bodyVertices.stride);
            cmd.SetComputeIntParam(cs, "_KisekaeBodyPositionOffset", 0);  // Position comes first in a vertex
            bool guard = normalGuard && body.sharedMesh.HasVertexAttribute(VertexAttribute.Normal);
            cmd.SetComputeIntParam(cs, "_KisekaeNormalGuard", guard ? 1 : 0);
            cmd.SetComputeIntParam(cs, "_KisekaeBodyNormalOffset", 12);  // the skinned stream: position, normal, tangent
            cmd.SetComputeMatrixParam(cs, "_KisekaeBodyToWorld", body.localToWorldMatrix);
            cmd.SetComputeIntParam(cs, "_KisekaeContactOn", contactOn ? 1 : 0);
            if (contactOn)
            {
                cmd.SetComputeVectorArrayParam(cs, "_KisekaeJointCentre", contact.JointCentre);
                cmd.SetComputeVectorArrayParam(cs, "_KisekaeJointNormal", contact.JointNormal);
                cmd.SetComputeVectorArrayParam(cs, "_KisekaeJointRest", contact.JointRest);
                cmd.SetComputeVectorArrayParam(cs, "_KisekaeJointRestDir", contact.JointRestDir);
                cmd.SetComputeVectorParam(cs, "_KisekaeContact", contact.ContactParams);
            }
            if (_bodySet != null && bodyFollow)  // what the corrective blend shapes add to the body's plain skinning
                RecordCorrectiveSet(cmd, _bodySet, _kBodyOffsets, "_KisekaeBodyOffsetRW", _bodyOffset, _nBody);
            cmd.SetComputeBufferParam(cs, _kBodyPrepare, "_KisekaeBodySkinned", _bodyVertices);
            cmd.SetComputeBufferParam(cs, _kBodyPrepare, "_KisekaeContactJoints", _contactJoints);
            cmd.SetComputeBufferParam(cs, _kBodyPrepare, "_KisekaeContactSides", _contactSides);
            cmd.SetComputeBufferParam(cs, _kBodyPrepare, "_KisekaeContactRest", _contactRest);
            cmd.SetComputeBufferParam(cs, _kBodyPrepare, "_KisekaeBodyPositionsRW", _bodyPositions);
            cmd.SetComputeBufferParam(cs, _kBodyPrepare, "_KisekaeBodyOffset", _bodyOffset);
            cmd.SetComputeBufferParam(cs, _kBodyPrepare, "_KisekaeBodyBeyondRW", _bodyBeyond);
            cmd.DispatchCompute(cs, _kBodyPrepare, Groups(_nBody), 1, 1);
            if (parts != null && parts.Active)  // the part contact on the prepared body, before its normals
                parts.Record(cmd, cs, _nBody, _bodyPositions, _bodyBeyond);
            cmd.SetComputeBufferParam(cs, _kBodyNormals, "_KisekaeBodyPositions", _bodyPositions);
            cmd.SetComputeBufferParam(cs, _kBodyNormals, "_KisekaeBodySkinned", _bodyVertices);
            cmd.SetComputeBufferParam(cs, _kBodyNormals, "_KisekaeBodyTriangles", _bodyTriangles);
            cmd.SetComputeBufferParam(cs, _kBodyNormals, "_KisekaeBodyVertexFacePtr", _bodyFacePtr);
            cmd.SetComputeBufferParam(cs, _kBodyNormals, "_KisekaeBodyVertexFaces", _bodyFaces);
            cmd.SetComputeBufferParam(cs, _kBodyNormals, "_KisekaeBodyNormalsRW", _bodyNormals);
            cmd.DispatchCompute(cs, _kBodyNormals, Groups(_nBody), 1, 1);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyPositions", _bodyPositions);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyNormals", _bodyNormals);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyTriangles", _bodyTriangles);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyVertexFacePtr", _bodyFacePtr);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyVertexFaces", _bodyFaces);
            cmd.SetComputeBufferParam(cs, _kBodyCurvatures, "_KisekaeBodyCurvatureRW", _bodyCurvature);
            cmd.DispatchCompute(cs, _kBodyCurvatures, Groups(_nBody), 1, 1);

            // 2. the garment: push, smoothing passes, push, stretch-limit passes (each with its push), cap, normals
            Vector3 u = up.sqrMagnitude > 0f ? up.normalized : Vector3.up;
            cmd.SetComputeIntParam(cs, "_KisekaeGarmentCount", _nGarment);
            cmd.SetComputeIntParam(cs, "_KisekaeGarmentStride", _garmentVertices.stride);
            cmd.SetComputeIntParam(cs, "_KisekaeGarmentPositionOffset", 0);
            cmd.SetComputeMatrixParam(cs, "_KisekaeGarmentToWorld", garment.localToWorldMatrix);
            cmd.SetComputeVectorParam(cs, "_KisekaePush0", new Vector4(margin, stiffness, maxPush, skirtBias));
            cmd.SetComputeVectorParam(cs, "_KisekaePush1", new Vector4(0f, u.x, u.y, u.z));
            cmd.SetComputeFloatParam(cs, "_KisekaeReach", reach > 0f ? reach : maxPush);
            cmd.SetComputeFloatParam(cs, "_KisekaeStretchLimit", stretchLimit);
            cmd.SetComputeFloatParam(cs, "_KisekaeCarryKeep", carryKeep);
            cmd.SetComputeIntParam(cs, "_KisekaeSampleCount", _nSamples);
            cmd.SetComputeFloatParam(cs, "_KisekaeTurnStart", turnStart);
            cmd.SetComputeFloatParam(cs, "_KisekaeFinishStep", finishStep >= 0f ? finishStep : -1f);
            BindSurface(cmd, _bodyPositions, _bodyNormals, _bodyCurvature, _corners, _chord, _depthBound);
            if (garmentCorrectives != null)
                RecordCorrectiveSet(cmd, _garmentSet, _kGarmentCorrectives, "_KisekaeGarmentCorrectiveRW",
                                    _garmentCorrective, _nGarment);
            GraphicsBuffer follow = RecordFollow(cmd);
            foreach (int k in new[] { _kPushFirst, _kFinish })  // where the push starts, and what the carry keeps
            {
                cmd.SetComputeBufferParam(cs, k, "_KisekaeGarmentCorrectiveRW", _garmentCorrective);
                cmd.SetComputeBufferParam(cs, k, "_KisekaeFollow", follow);
            }
            cmd.SetComputeBufferParam(cs, _kPushFirst, "_KisekaeCorrectionRW", _correction);  // last frame's
            foreach (int k in new[] { _kPushFirst, _kLiftApply, _kUnflips })  // set, then spent by the finish
                cmd.SetComputeBufferParam(cs, k, "_KisekaeFinishBudgetRW", _finishBudget);
            cmd.SetComputeBufferParam(cs, _kPushFirst, "_KisekaeDisplacementOut", _dispA);
            cmd.DispatchCompute(cs, _kPushFirst, Groups(_nGarment), 1, 1);
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingPtr", _ringPtr);
            cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingIdx", _ringIdx);
            GraphicsBuffer src = _dispA, dst = _dispB;
            for (int pass = 0; pass < smoothPasses; pass++)  // Jacobi: every pass reads the previous one whole
            {
                cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeDisplacementIn", src);
                cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeDisplacementOut", dst);
                cmd.DispatchCompute(cs, _kSmooth, Groups(_nGarment), 1, 1);
                (src, dst) = (dst, src);
            }
            cmd.SetComputeBufferParam(cs, _kPushSecond, "_KisekaeDisplacementIn", src);  // the last pass's output
            cmd.SetComputeBufferParam(cs, _kPushSecond, "_KisekaeDisplacementOut", dst);
            cmd.DispatchCompute(cs, _kPushSecond, Groups(_nGarment), 1, 1);
            (src, dst) = (dst, src);
            cmd.SetComputeBufferParam(cs, _kStretchLimit, "_KisekaeRingPtr", _ringPtr);
            cmd.SetComputeBufferParam(cs, _kStretchLimit, "_KisekaeRingIdx", _ringIdx);
            cmd.SetComputeBufferParam(cs, _kStretchLimit, "_KisekaeSurfaceShortest", _shortest);
            for (int pass = 0; pass < limitPasses; pass++)  // Jacobi, as the smoothing: the same two buffers
            {
                cmd.SetComputeBufferParam(cs, _kStretchLimit, "_KisekaeDisplacementIn", src);
                cmd.SetComputeBufferParam(cs, _kStretchLimit, "_KisekaeDisplacementOut", dst);
                cmd.DispatchCompute(cs, _kStretchLimit, Groups(_nGarment), 1, 1);
                (src, dst) = (dst, src);
            }
            if (_layerCorners != null && beneath != null && beneath.isActiveAndEnabled)
                RecordLayer(cmd, ref src, ref dst);
            if (selfLayers && _hasSelf)
                RecordSelf(cmd, ref src, ref dst);
            // the edge lift and unflip rounds, then the unflips (kisekae.fit.surface.surface_runtime's end)
            BindSamples(cmd, _sampleCorners);
            cmd.SetComputeBufferParam(cs, _kLiftApply, "_KisekaeLift", _liftB);
            cmd.SetComputeBufferParam(cs, _kUnflips, "_KisekaeGarmentTriangles", _garmentTriangles);
            cmd.SetComputeBufferParam(cs, _kUnflips, "_KisekaeGarmentVertexFacePtr", _garmentFacePtr);
            cmd.SetComputeBufferParam(cs, _kUnflips, "_KisekaeGarmentVertexFaces", _garmentFaces);
            cmd.SetComputeBufferParam(cs, _kUnflips, "_KisekaeWeld", _weld);
            for (int pass = 0; edgeLift && pass < liftPasses + unflipPasses; pass++)
            {
                if (pass < liftPasses && _nSamples > 0)
                {
                    cmd.SetComputeBufferParam(cs, _kSampleLifts, "_KisekaeDisplacementIn", src);
                    cmd.DispatchCompute(cs, _kSampleLifts, Groups(_nSamples), 1, 1);
                    cmd.DispatchCompute(cs, _kEdgeLifts, Groups(_nGarment), 1, 1);
                    cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeDisplacementIn", _liftA);  // one pass of the lifts
                    cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeDisplacementOut", _liftB);
                    cmd.DispatchCompute(cs, _kSmooth, Groups(_nGarment), 1, 1);
                    cmd.SetComputeBufferParam(cs, _kLiftApply, "_KisekaeDisplacementIn", src);
                    cmd.SetComputeBufferParam(cs, _kLiftApply, "_KisekaeDisplacementOut", dst);
                    cmd.DispatchCompute(cs, _kLiftApply, Groups(_nGarment), 1, 1);
                    (src, dst) = (dst, src);
                }
                cmd.SetComputeBufferParam(cs, _kUnflips, "_KisekaeDisplacementIn", src);
                cmd.SetComputeBufferParam(cs, _kUnflips, "_KisekaeDisplacementOut", dst);
                cmd.DispatchCompute(cs, _kUnflips, Groups(_nGarment), 1, 1);
                (src, dst) = (dst, src);
            }
            // the stretch limit once more after the lifts (kisekae.fit.edge_lift.LIFT_LIMIT_PASSES)
            for (int pass = 0; edgeLift && _nSamples > 0 && pass < liftLimitPasses; pass++)
            {
                cmd.SetComputeBufferParam(cs, _kStretchLimit, "_KisekaeDisplacementIn", src);
                cmd.SetComputeBufferParam(cs, _kStretchLimit, "_KisekaeDisplacementOut", dst);
                cmd.DispatchCompute(cs, _kStretchLimit, Groups(_nGarment), 1, 1);
                (src, dst) = (dst, src);
            }
            cmd.SetComputeBufferParam(cs, _kFinish, "_KisekaeGarmentSkinned", _garmentVertices);
            cmd.SetComputeBufferParam(cs, _kFinish, "_KisekaeDisplacementIn", src);  // the last pass's output
            cmd.SetComputeBufferParam(cs, _kFinish, "_KisekaeGarmentPositionsRW", _positions);
            cmd.SetComputeBufferParam(cs, _kFinish, "_KisekaeCorrectionRW", _correction);  // for the next frame
            cmd.DispatchCompute(cs, _kFinish, Groups(_nGarment), 1, 1);
            cmd.SetComputeBufferParam(cs, _kGarmentNormals, "_KisekaeGarmentPositions", _positions);
            cmd.SetComputeBufferParam(cs, _kGarmentNormals, "_KisekaeGarmentTriangles", _garmentTriangles);
            cmd.SetComputeBufferParam(cs, _kGarmentNormals, "_KisekaeGarmentVertexFacePtr", _garmentFacePtr);
            cmd.SetComputeBufferParam(cs, _kGarmentNormals, "_KisekaeGarmentVertexFaces", _garmentFaces);
            cmd.SetComputeBufferParam(cs, _kGarmentNormals, "_KisekaeWeld", _weld);
            cmd.SetComputeBufferParam(cs, _kGarmentNormals, "_KisekaeGarmentNormalsRW", _normals);
            cmd.DispatchCompute(cs, _kGarmentNormals, Groups(_nGarment), 1, 1);
        }
    }
}
