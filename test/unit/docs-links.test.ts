import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function markdownFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks, where a link is a link. */
function prose(text: string): string {
  return text
    .split(/^```.*$/m)
    .filter((_, index) => index % 2 === 0)
    .join('\n');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

function anchorsIn(path: string): Set<string> {
  const headings = prose(readFileSync(path, 'utf8')).match(/^#{1,6} .*$/gm) ?? [];
  return new Set(headings.map((line) => anchorOf(line.replace(/^#+ /, ''))));
}

const pages = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))];

describe('documentation links', () => {
  it.each(pages.map((path) => [relative(ROOT, path), path]))('every relative link and image in %s resolves in the repository', (_, path) => {
    const broken: string[] = [];
    for (const [, target] of prose(readFileSync(path, 'utf8')).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) continue;
      const [file, anchor] = target!.split('#') as [string, string | undefined];
      const targetPath = file === '' ? path : resolve(dirname(path), file);
      if (!existsSync(targetPath)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor && targetPath.endsWith('.md') && !anchorsIn(targetPath).has(anchor)) broken.push(`${target}: no such heading`);
    }
    expect(broken).toEqual([]);
  });

  it('finds the pages it checks', () => {
    expect(pages.map((path) => relative(ROOT, path))).toEqual(expect.arrayContaining(['README.md', 'docs/api.md', 'docs/sql.md', 'docs/design/SPEC.md']));
  });
});
