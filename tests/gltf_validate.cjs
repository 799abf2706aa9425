// Run the Khronos glTF validator (npm package gltf-validator) on one file and print its report as JSON.
// Usage: node tests/gltf_validate.cjs FILE [MODULE_DIR]
// MODULE_DIR defaults to cache/node/node_modules/gltf-validator (installed by .ci/run).
const fs = require("fs");
const path = require("path");
const file = process.argv[2];
const moduleDir = process.argv[3] || path.join(__dirname, "..", "cache", "node", "node_modules", "gltf-validator");
const validator = require(moduleDir);
const data = new Uint8Array(fs.readFileSync(file));
validator
  .validateBytes(data, {
    uri: path.basename(file),
    maxIssues: 200,
    externalResourceFunction: (uri) =>
      new Promise((resolve, reject) => {
        const p = path.resolve(path.dirname(file), decodeURIComponent(uri));
        fs.readFile(p, (err, d) => (err ? reject(err.toString()) : resolve(new Uint8Array(d))));
      }),
  })
  .then((report) => {
    process.stdout.write(JSON.stringify(report));
  })
  .catch((err) => {
    process.stderr.write("validator failed: " + err + "\n");
    process.exit(3);
  });
