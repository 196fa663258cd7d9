// Builds the dashboard's web app: bundles src/dashboard/web/app.ts with esbuild (minified, no
// source from the internet at run time) and copies the page and styles next to it.
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src', 'dashboard', 'web');
const out = join(root, 'dist', 'dashboard');
mkdirSync(out, { recursive: true });

if (existsSync(join(source, 'app.ts'))) {
  await build({
    entryPoints: [join(source, 'app.ts')],
    outfile: join(out, 'app.js'),
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022'],
    sourcemap: false,
    logLevel: 'warning',
  });
}
for (const file of ['index.html', 'styles.css']) {
  if (existsSync(join(source, file))) copyFileSync(join(source, file), join(out, file));
}
