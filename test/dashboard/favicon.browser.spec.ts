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
    const icon = await page.locator('link[rel="icon"]').getAttribute('href');
    expect(icon).toMatch(/^data:image\/svg\+xml,/);
    // The data URL is an SVG the browser draws (it is an image the page's CSP allows: img-src data:).
    const drawn = await page.evaluate(async (href) => {
      const image = new Image();
      image.src = href;
      await image.decode();
      return image.naturalWidth > 0;
    }, icon!);
    expect(drawn).toBe(true);
  });
});
