import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEndpointAdminServer } from '../support/endpoint-admin.ts';
import { BOOTSTRAP_KEY, type EndpointTestServer } from '../support/endpoint-server.ts';

/** Debian's chromium, or the browser CHROME_PATH names; .ci/run installs the package. */
const CHROME_PATH = process.env.CHROME_PATH ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROME_PATH);
const OPS_TOKEN = 'ops-token-for-the-docs-page-test';
/** Created through the management API while the service runs: the page must show it too. */
const CREATED = 'edge.browser-check';

/** The paths the rendered page shows, one per operation block. */
async function shownPaths(page: Page): Promise<string[]> {
  return page.$$eval('.opblock-summary-path', (elements) => elements.map((element) => element.getAttribute('data-path') ?? ''));
}

describe('the docs page in headless Chromium', () => {
  it('has a browser to load it with (required in CI, where CI is set)', (context) => {
    if (hasChromium) return;
    if (!process.env.CI) return context.skip(`no Chromium at ${CHROME_PATH} (set CHROME_PATH): the docs page is not checked in a browser (it is in CI)`);
    throw new Error(`no Chromium at ${CHROME_PATH}: install Debian's chromium package (.ci/run does) or set CHROME_PATH`);
  });

  describe.skipIf(!hasChromium)('on a running service', () => {
    let server: EndpointTestServer;
    let browser: Browser;
    let origin: string;
    const requested: string[] = [];
    let page: Page;

    beforeAll(async () => {
      server = await startEndpointAdminServer(Date.now(), OPS_TOKEN);
      await server.app.listen({ port: 0, host: '127.0.0.1' });
      origin = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
      const created = await fetch(`${origin}/api/endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: CREATED,
          sql: 'select id from edge_logs order by timestamp desc limit 2',
          parameters: [{ name: 'project', type: 'string', required: true }],
        }),
      });
      expect(created.status, await created.text()).toBe(201);
      browser = await puppeteer.launch({ executablePath: CHROME_PATH, args: ['--headless=new', '--no-sandbox'] });
      page = await browser.newPage();
      page.on('request', (request) => {
        requested.push(request.url());
      });
      await page.goto(`${origin}/docs`, { waitUntil: 'networkidle0' });
      await page.waitForSelector('.opblock-summary-path', { timeout: 30_000 });
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      await server?.close();
    });

    it('renders every path of /openapi.json, loading nothing from elsewhere', async () => {
      const document = (await (await fetch(`${origin}/openapi.json`)).json()) as { paths: Record<string, unknown> };
      const paths = Object.keys(document.paths);
      expect(paths).toEqual(expect.arrayContaining(['/api/endpoints/query/logs.all', `/api/endpoints/query/${CREATED}`, '/api/endpoints/{endpoint}']));
      expect(paths).toContain('/health');
      expect([...new Set(await shownPaths(page))].sort()).toEqual([...paths].sort());
      expect(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))).toEqual([]);
    });

    it('tries out a GET endpoint with an API key and shows its 200 answer', async () => {
      await page.click('.auth-wrapper .authorize');
      const keyInput = await page.waitForSelector('.modal-ux input[type="text"], .modal-ux input[type="password"]');
      await keyInput!.type(BOOTSTRAP_KEY);
      await page.click('.modal-ux .auth-btn-wrapper .authorize');
      await page.click('.modal-ux .btn-done');

      const operation = '#operations-endpoints-logs_all_get';
      await page.click(`${operation} .opblock-summary`);
      const project = await page.waitForSelector(`${operation} tr[data-param-name="project"] input`);
      await project!.type('p1');
      await page.click(`${operation} .execute`);
      const status = await page.waitForSelector(`${operation} .live-responses-table tr.response .response-col_status`, { timeout: 30_000 });
      expect(await status!.evaluate((element) => element.textContent?.trim())).toBe('200');
      const body = await page.$eval(
        `${operation} .live-responses-table tr.response .response-col_description .highlight-code pre`,
        (element) => element.textContent ?? '',
      );
      // the three events of project p1, newest first
      expect((JSON.parse(body) as { result: { id: string }[] }).result.map((row) => row.id)).toEqual(['e1', 'e2', 'e3']);
    }, 60_000);
  });
});
