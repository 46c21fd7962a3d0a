// Stops CI with a clear message when this Node is older than package.json's engines.node (a `>=` range),
// before npm ci and the tests fail on it in obscure ways. Plain CommonJS: it must run on any old Node.
// Usage: node .ci/node-version.cjs [version]   (default: the running Node's)
'use strict';
const fs = require('node:fs');
const path = require('node:path');

function parts(text) {
  return String(text).replace(/^v/, '').split('.').map(Number);
}

function older(version, minimum) {
  for (let i = 0; i < minimum.length; i += 1) {
    const have = version[i] || 0;
    if (have !== minimum[i]) return have < minimum[i];
  }
  return false;
}

const version = process.argv[2] || process.version;
const range = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')).engines?.node;
const match = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec(String(range || '').trim());
if (!match) {
  console.error(`package.json's engines.node is ${JSON.stringify(range)}: this check reads only a ">=X.Y.Z" range`);
  process.exit(2);
}
if (!/^v?\d+\.\d+\.\d+$/.test(version)) {
  console.error(`not a Node version: ${JSON.stringify(version)}`);
  process.exit(2);
}
if (older(parts(version), parts(match[1]))) {
  console.error(
    `Node ${version} is older than package.json's engines.node (${range}): install Node ${match[1]} or newer ` +
      `(Debian's own nodejs package is 18; NodeSource or nvm give a current one) and run again`,
  );
  process.exit(1);
}
console.log(`node ${version} satisfies engines.node ${range}`);
