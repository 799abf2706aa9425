// The body's pose-space correctives (kisekae.avatar.correctives, kisekae_corrective.hlsl) as Unity blend shapes:
// corrective shapes on the rest mesh, learned offline from kisekae's contact solve, whose weights follow the joint
// rotations. Unity applies blend shapes before skinning, which is where the correctives belong; the joint planes
// (KisekaeBodyContact + Kisekae/BodyURP) then act after skinning as before.
// Input: body_correctives.json + body_correctives.bytes from `kisekae fit -o DIR`
// (kisekae.shaders.corrective_bake), as TextAssets (rename the blob to .bytes if Unity does not import it).
// Once: one blend shape per (joint, centre), named kisekae_corrective_<bone>_<k>, on an instance of the body mesh.
// Each frame, per joint, with S = bone.localToWorldMatrix * bindpose (the bone's skinning matrix):
//   W = S_bone * rest;  Wp = S_parent * parentRest;  L = Wp^-1 W;  L0 = parentRest^-1 rest
//   R = L0^T L (3 x 3), q = its quaternion
//   f_k = exp(-(theta(q, c_k) / sigma)^2) - exp(-(theta(q, 1) / sigma)^2) exp(-(theta(c_k, 1) / sigma)^2)
//   theta(a, b) = 4 atan2(|a - b'|, |a + b'|), b' = +-b on a's side
// and the shape's weight is 100 f_k (features may be negative or above 1: Unity takes blend shape weights outside
// 0..100 unless the legacy clamp is on). This is kisekae.shaders.corrective_bake.engine_features, which the tests
// check against the Python correctives. The bake is in kisekae's (glTF) mesh space; `mirrorX` mirrors it for
// importers that flip X: rest matrices M X M, deltas (-x, y, z), centres (x, -y, -z, w), which leaves every
// feature as it is. A bone name the renderer lacks, another vertex count or a malformed blob is refused with an
// error naming the object, and the component disables itself (every weight 0: the body as plain skinning).
// A garment's pose-space correctives (GARMENT.correctives.json + .bytes, kisekae.fit.garment_correctives) use the same
// component on the garment's renderer with blendShapes off: it then only computes the features each frame (Features,
// J x K) and holds the bake's arrays (VertexPtr, EntryJoint, Coefficients, x mirrored with mirrorX) for
// KisekaeSurfacePush.garmentCorrectives, which adds the offsets where its push starts and keeps the plain skinning as
// the reference (kisekae.fit.runtime).
// Not compiled or run in kisekae's CI (no Unity there).
using System;
using System.Collections.Generic;
using UnityEngine;

namespace Kisekae
{
    [Serializable]
    public class KisekaeCorrectiveJoint
    {
        public string bone;
        public string parent;
        public float[] rest;        // 16, row-major, mesh space (m)
        public float[] parentRest;  // 16, row-major
        public float sigma;         // rad, > 0
        public float[] centres;     // 4 per centre: unit quaternion x, y, z, w
    }

    [Serializable]
    public class KisekaeCorrectiveRange
    {
        public int offset;  // bytes
        public int count;   // values
    }

    // The arrays of a bake's little-endian blob (kisekae.shaders.corrective_bake.pack_blob, which the correctives' and
    // the part contact's bakes share): `count` 4-byte values from byte `offset`, checked against the blob before.
    public static class KisekaeBlob
    {
        public static T[] Read<T>(byte[] bytes, KisekaeCorrectiveRange r) where T : struct
        {
            var a = new T[r.count];
            Buffer.BlockCopy(bytes, r.offset, a, 0, 4 * r.count);
            return a;
        }
    }

    [Serializable]
    public class KisekaeCorrectiveLayout
    {
        public KisekaeCorrectiveRange vertexPtr;
        public KisekaeCorrectiveRange entryJoint;
        public KisekaeCorrectiveRange coefficients;
    }

    [Serializable]
    public class KisekaeCorrectiveBake
    {
        public int version;
        public int centres;
        public int vertexCount;
        public int entryCount;
        public KisekaeCorrectiveJoint[] joints;
        public KisekaeCorrectiveLayout layout;
    }

    [ExecuteAlways]
    [DefaultExecutionOrder(-100)]  // enabled before KisekaeSurfacePush, which reads a garment's bake from it
    public class KisekaeBodyCorrectives : MonoBehaviour
    {
        public const int BakeVersion = 1; // = kisekae.shaders.corrective_bake.BAKE_VERSION

        [Tooltip("The renderer the bake is for: the body, or a garment (with blendShapes off)")]
        public SkinnedMeshRenderer body;
        public TextAsset bake;
        public TextAsset blob;
        [Tooltip("Mirror the bake's X axis (glTF importers that flip X)")]
        public bool mirrorX = true;
        [Tooltip("Apply the correctives as blend shapes (the body); off: only compute the features for " +
                 "KisekaeSurfacePush.garmentCorrectives (a garment's bake)")]
        public bool blendShapes = true;

        // The features of this frame, J x K (joint-major), updated in LateUpdate; null until enabled with a bake that
        // fits.
        public float[] Features { get; private set; }
        public int Centres => _bake != null ? _bake.centres : 0;
        // The bake's arrays (the coefficients' x mirrored with mirrorX), kept with blendShapes off.
        public uint[] VertexPtr { get; private set; }
        public uint[] EntryJoint { get; private set; }
        public float[] Coefficients { get; private set; }

        KisekaeCorrectiveBake _bake;
        int[] _bone;
        int[] _parent;
        Matrix4x4[] _rest;
        Matrix4x4[] _parentRest;
        Matrix4x4[] _localRest;
        Quaternion[,] _centre;
        int[] _firstShape;
        Mesh _mesh;

        static float[] Floats(byte[] bytes, KisekaeCorrectiveRange r) => KisekaeBlob.Read<float>(bytes, r);
        static uint[] Uints(byte[] bytes, KisekaeCorrectiveRange r) => KisekaeBlob.Read<uint>(bytes, r);

        Matrix4x4 Mat(float[] m)
        {
            var x = new Matrix4x4();
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 4; c++)
                    x[r, c] = m[4 * r + c];
            if (!mirrorX) return x;
            var s = Matrix4x4.Scale(new Vector3(-1f, 1f, 1f));
            return s * x * s;
        }

        // Null when the bake fits this renderer, else the message that refuses it.
        public string BakeProblem(KisekaeCorrectiveBake b, byte[] bytes)
        {
            if (body == null || body.sharedMesh == null)
                return $"KisekaeBodyCorrectives on '{name}': no body SkinnedMeshRenderer";
            if (b == null || b.version != BakeVersion || b.joints == null || b.layout == null || bytes == null)
                return $"KisekaeBodyCorrectives on '{name}': not a version-{BakeVersion} kisekae correctives bake " +
                       "with its .bytes blob (write it again with kisekae fit)";
            if (b.vertexCount != body.sharedMesh.vertexCount)
                return $"KisekaeBodyCorrectives on '{name}': the bake is for another mesh ({b.vertexCount} " +
                       $"vertices, the body has {body.sharedMesh.vertexCount})";
            foreach (var r in new[] { b.layout.vertexPtr, b.layout.entryJoint, b.layout.coefficients })
                if (r == null || r.offset < 0 || r.count < 0 || (long)r.offset + 4L * r.count > bytes.Length)
                    return $"KisekaeBodyCorrectives on '{name}': the blob is shorter than the bake's layout";
            if (b.layout.vertexPtr.count != b.vertexCount + 1 || b.layout.entryJoint.count != b.entryCount ||
                b.layout.coefficients.count != 3 * b.centres * b.entryCount)
                return $"KisekaeBodyCorrectives on '{name}': the bake's layout disagrees with its counts";
            var index = new Dictionary<string, int>();
            for (int i = 0; i < body.bones.Length; i++)
                if (body.bones[i] != null) index[body.bones[i].name] = i;
            _bone = new int[b.joints.Length];
            _parent = new int[b.joints.Length];
            for (int j = 0; j < b.joints.Length; j++)
            {
                if (!index.TryGetValue(b.joints[j].bone, out _bone[j]) ||
                    !index.TryGetValue(b.joints[j].parent, out _parent[j]))
                    return $"KisekaeBodyCorrectives on '{name}': joint {j} names bones '{b.joints[j].bone}' / " +
                           $"'{b.joints[j].parent}' that the body's renderer does not have";
                if (!(b.joints[j].sigma > 0f) || float.IsInfinity(b.joints[j].sigma))
                    return $"KisekaeBodyCorrectives on '{name}': joint {j} has sigma {b.joints[j].sigma}";
                if (b.joints[j].centres == null || b.joints[j].centres.Length != 4 * b.centres ||
                    b.joints[j].rest == null || b.joints[j].rest.Length != 16 ||
                    b.joints[j].parentRest == null || b.joints[j].parentRest.Length != 16)
                    return $"KisekaeBodyCorrectives on '{name}': joint {j}'s centres or rest matrices are malformed";
            }
            return null;
        }

        void OnEnable()
        {
            _bake = bake != null ? JsonUtility.FromJson<KisekaeCorrectiveBake>(bake.text) : null;
            byte[] bytes = blob != null ? blob.bytes : null;
            string problem = BakeProblem(_bake, bytes);
            int nj = problem == null ? _bake.joints.Length : 0;
            _centre = new Quaternion[nj, problem == null ? _bake.centres : 0];
            for (int j = 0; j < nj; j++)
            {
                float[] cs = _bake.joints[j].centres;
                for (int k = 0; k < _bake.centres; k++)
                {
                    float x = cs[4 * k], y = cs[4 * k + 1], z = cs[4 * k + 2], w = cs[4 * k + 3];
                    _centre[j, k] = mirrorX ? new Quaternion(x, -y, -z, w) : new Quaternion(x, y, z, w);
                }
            }
            if (problem != null)
            {
                Debug.LogError(problem, this);
                _bake = null;
                enabled = false;
                return;
            }
            _rest = new Matrix4x4[nj];
            _parentRest = new Matrix4x4[nj];
            _localRest = new Matrix4x4[nj];
            for (int j = 0; j < nj; j++)
            {
                _rest[j] = Mat(_bake.joints[j].rest);
                _parentRest[j] = Mat(_bake.joints[j].parentRest);
                _localRest[j] = _parentRest[j].inverse * _rest[j];
            }
            Features = new float[nj * _bake.centres];
            if (blendShapes)
            {
                AddShapes(bytes);
                return;
            }
            VertexPtr = Uints(bytes, _bake.layout.vertexPtr);
            EntryJoint = Uints(bytes, _bake.layout.entryJoint);
            Coefficients = Floats(bytes, _bake.layout.coefficients);
            if (mirrorX)
                for (int at = 0; at < Coefficients.Length; at += 3) Coefficients[at] = -Coefficients[at];
        }

        void AddShapes(byte[] bytes)
        {
            uint[] ptr = Uints(bytes, _bake.layout.vertexPtr);
            uint[] joint = Uints(bytes, _bake.layout.entryJoint);
            float[] coef = Floats(bytes, _bake.layout.coefficients);
            int n = _bake.vertexCount, k = _bake.centres, nj = _bake.joints.Length;
            _mesh = Instantiate(body.sharedMesh);
            _firstShape = new int[nj];
            var deltas = new Vector3[n];
            for (int j = 0; j < nj; j++)
            {
                _firstShape[j] = _mesh.blendShapeCount;
                for (int c = 0; c < k; c++)
                {
                    Array.Clear(deltas, 0, n);
                    for (int v = 0; v < n; v++)
                        for (uint e = ptr[v]; e < ptr[v + 1]; e++)
                        {
                            if (joint[e] != (uint)j) continue;
                            int at = 3 * (k * (int)e + c);
                            deltas[v] = new Vector3(mirrorX ? -coef[at] : coef[at], coef[at + 1], coef[at + 2]);
                        }
                    _mesh.AddBlendShapeFrame($"kisekae_corrective_{_bake.joints[j].bone}_{c}", 100f, deltas, null,
                                             null);
                }
            }
            body.sharedMesh = _mesh;
        }

        static float Angle(Quaternion a, Quaternion b)
        {
            var va = new Vector4(a.x, a.y, a.z, a.w);
            var vb = new Vector4(b.x, b.y, b.z, b.w);
            if (Vector4.Dot(va, vb) < 0f) vb = -vb;
            return 4f * Mathf.Atan2((va - vb).magnitude, (va + vb).magnitude);
        }

        void LateUpdate()
        {
            if (_bake == null) return;
            Matrix4x4[] bindposes = body.sharedMesh.bindposes;
            Transform[] bones = body.bones;
            for (int j = 0; j < _bake.joints.Length; j++)
            {
                Matrix4x4 w = bones[_bone[j]].localToWorldMatrix * bindposes[_bone[j]] * _rest[j];
                Matrix4x4 wp = bones[_parent[j]].localToWorldMatrix * bindposes[_parent[j]] * _parentRest[j];
                Matrix4x4 local = wp.inverse * w;
                Matrix4x4 r = Matrix4x4.identity;
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < 3; b++)
                    {
                        float s = 0f;
                        for (int m = 0; m < 3; m++) s += _localRest[j][m, a] * local[m, b];
                        r[a, b] = s;
                    }
                Quaternion q = r.rotation;
                float sigma = _bake.joints[j].sigma;
                float toRest = Angle(q, Quaternion.identity) / sigma;
                for (int c = 0; c < _bake.centres; c++)
                {
                    float d = Angle(q, _centre[j, c]) / sigma;
                    float cr = Angle(_centre[j, c], Quaternion.identity) / sigma;
                    float f = Mathf.Exp(-d * d) - Mathf.Exp(-toRest * toRest) * Mathf.Exp(-cr * cr);
                    Features[j * _bake.centres + c] = f;
                    if (blendShapes) body.SetBlendShapeWeight(_firstShape[j] + c, 100f * f);
                }
            }
        }
    }
}
