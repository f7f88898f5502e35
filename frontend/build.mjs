// Builds the pages' assets into cartotheca/web/static and records their hashes in manifest.json.
// Deterministic: the same lock file and sources give byte-identical files.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'cartotheca', 'web', 'static');
const vendor = join(here, '..', 'tests', 'web', 'vendor');
const version = (name) => JSON.parse(readFileSync(join(here, 'node_modules', name, 'package.json'), 'utf8')).version;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: { app: join(here, 'src', 'app.js') },
  outdir: out,
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync(join(here, 'node_modules', 'ol', 'LICENSE.md'), join(out, 'LICENSE-ol.txt'));
// The catalogue's offline base map: Natural Earth's 1:110m countries as TopoJSON (fetched by the
// page only when its area filter is shown).
copyFileSync(join(here, 'node_modules', 'world-atlas', 'countries-110m.json'), join(out, 'world-110m.json'));
copyFileSync(join(here, 'node_modules', 'world-atlas', 'LICENSE'), join(out, 'LICENSE-world-atlas.txt'));
// The picture of a user without an avatar of their own (the API's default `avatar`).
copyFileSync(join(here, 'src', 'avatar.png'), join(out, 'avatar.png'));

// The accessibility engine the end-to-end tests inject (never served by the app).
mkdirSync(vendor, { recursive: true });
copyFileSync(join(here, 'node_modules', 'axe-core', 'axe.min.js'), join(vendor, 'axe.min.js'));

const files = {};
for (const name of readdirSync(out).sort()) {
  if (name === 'manifest.json') continue;
  const data = readFileSync(join(out, name));
  files[name] = { sha256: createHash('sha256').update(data).digest('hex'), bytes: data.length };
}
// What the bundle was built from: a source edited without a rebuild is noticed by the tests.
const sources = createHash('sha256');
const inputs = ['package-lock.json', 'build.mjs', ...readdirSync(join(here, 'src')).sort().map((n) => `src/${n}`)];
for (const name of inputs) {
  sources.update(`${name}\0`).update(readFileSync(join(here, name))).update('\0');
}
const manifest = {
  built_by: 'frontend/build.sh',
  sources: { files: inputs, sha256: sources.digest('hex') },
  packages: {
    ol: version('ol'), 'world-atlas': version('world-atlas'), esbuild: version('esbuild'), 'axe-core': version('axe-core'),
  },
  files,
};
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
console.log(`built ${Object.keys(files).length} files into ${out}`);
