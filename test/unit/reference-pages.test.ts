import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema, repositoryRoot } from '../../shared/config.ts';
import { ERROR_CODES } from '../../src/errors.ts';
import { referencePages, undescribedVariables } from '../../scripts/reference-pages.ts';

/** The pages made from the code: when one fails here, `npm run docs` writes it anew. */
describe('the reference pages generated from the code', () => {
  for (const page of referencePages()) {
    it(`${page.file} is what the code makes (npm run docs)`, () => {
      expect(readFileSync(path.join(repositoryRoot, page.file), 'utf8')).toBe(page.text);
    });
  }

  it('describes every configuration variable, with its default', () => {
    expect(undescribedVariables()).toEqual([]);
    const configuration = referencePages().find((page) => page.file.endsWith('configuration.md'))!.text;
    for (const name of Object.keys(configSchema.shape)) expect(configuration).toContain(`| \`${name}\` |`);
    expect(configuration).toContain('| `PORT` | `4000` | integer 0–65535 |');
    expect(configuration).toContain('| `STACK_CACHE_DIR` | `<repository>/.stack-cache` |');
  });

  it('lists every error code with its status', () => {
    const errors = referencePages().find((page) => page.file.endsWith('errors.md'))!.text;
    for (const code of Object.keys(ERROR_CODES)) expect(errors).toMatch(new RegExp(`^\\| \`${code}\` \\| \\d{3}`, 'm'));
    expect(errors).toContain('| `request_too_large` | 413, 414 |');
  });
});
