import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { answerHelp } from '../shared/command-help.ts';
import { repositoryRoot } from '../shared/module-runtime.ts';
import { referencePages, undescribedVariables } from './reference-pages.ts';

answerHelp(`Usage: npm run docs [-- --check]
Writes the reference pages made from the code: docs/configuration.md from the configuration schema
(shared/config.ts) and docs/errors.md from the error codes (src/errors.ts, src/http/error-handler.ts).
  --check   write nothing; exit 1 naming each page that differs from what the code makes`);

const check = process.argv.includes('--check');
const undescribed = undescribedVariables();
if (undescribed.length > 0) {
  console.error(`shared/config.ts: give ${undescribed.join(', ')} a .describe('...') (it is the variable's line in docs/configuration.md)`);
  process.exit(1);
}
const stale: string[] = [];
for (const page of referencePages()) {
  const file = path.join(repositoryRoot, page.file);
  let current: string | undefined;
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === page.text) continue;
  stale.push(page.file);
  if (!check) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, page.text);
    console.log(`wrote ${page.file}`);
  }
}
if (check && stale.length > 0) {
  console.error(`${stale.join(', ')} ${stale.length === 1 ? 'differs' : 'differ'} from what the code makes: run npm run docs`);
  process.exit(1);
}
if (stale.length === 0) console.log('the reference pages are up to date');
