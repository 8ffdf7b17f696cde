// Runs the Khronos glTF-Validator on one file and prints a JSON summary on stdout:
//   { "numErrors", "numWarnings", "numInfos", "numHints", "messages": [ { "code", "severity", "pointer", "message" } ] }
// severity: 0 error, 1 warning, 2 info, 3 hint (as in the validator's report).
// Usage: node validate.mjs FILE.glb|FILE.gltf   (after `npm ci --prefix tests/validator`)
// Exit code: 0 when the validator ran (whatever it found), 2 on a usage or load failure.
import fs from 'node:fs';
import path from 'node:path';
import validator from 'gltf-validator';

const file = process.argv[2];
if (!file) {
  console.error('usage: node validate.mjs FILE.glb');
  process.exit(2);
}

try {
  const bytes = new Uint8Array(fs.readFileSync(file));
  const report = await validator.validateBytes(bytes, {
    uri: path.basename(file),
    maxIssues: 0,
    writeTimestamp: false,
    externalResourceFunction: (uri) =>
      new Promise((resolve, reject) => {
        const full = path.resolve(path.dirname(file), decodeURIComponent(uri));
        fs.readFile(full, (err, data) => (err ? reject(err.toString()) : resolve(new Uint8Array(data))));
      }),
  });
  const issues = report.issues;
  console.log(JSON.stringify({
    numErrors: issues.numErrors,
    numWarnings: issues.numWarnings,
    numInfos: issues.numInfos,
    numHints: issues.numHints,
    messages: issues.messages.map((m) => ({
      code: m.code,
      severity: m.severity,
      pointer: m.pointer ?? '',
      message: m.message,
    })),
  }));
} catch (e) {
  console.error(`glTF-Validator failed on ${file}: ${e}`);
  process.exit(2);
}
