import type { Browser } from 'playwright-core';
import { describeWithBrowser, launchChromium } from '../support/browser';
import { startGateway, TestGateway } from '../support/gateway';

/** The dashboard's pages carry their icon: a browser asks the server for nothing it does not have. */

describeWithBrowser('the dashboard icon', () => {
  let g: TestGateway;
  let browser: Browser;

  beforeAll(async () => {
    g = await startGateway({ credits: 0 });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await g.close();
  });

  it('loads the sign-in page with its icon inline and no request answered 404 (no /favicon.ico)', async () => {
    const page = await browser.newPage();
    const missing: string[] = [];
    page.on('response', (response) => {
      if (response.status() === 404) missing.push(response.url());
    });
    await page.goto(`${g.baseUrl}/dashboard/`, { waitUntil: 'networkidle' });
    expect(missing).toEqual([]);
    const links = page.locator('link[rel="icon"]');
    expect(await links.count()).toBe(1);
    const icon = await links.getAttribute('href');
    expect(icon).toMatch(/^data:image\/svg\+xml,/);
    // The data URL is an SVG the browser draws (an image the page's CSP allows: img-src data:).
    const drawn = await page.evaluate(
      `(async () => { const image = document.createElement('img'); image.src = ${JSON.stringify(icon)}; await image.decode(); return image.naturalWidth > 0; })()`,
    );
    expect(drawn).toBe(true);
  });
});
