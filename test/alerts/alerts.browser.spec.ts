import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { describeWithBrowser, launchChromium } from '../support/browser';
import { startGateway, TestGateway } from '../support/gateway';
import { eventually } from '../support/processes';
import { WebhookReceiver } from './webhook-receiver';

/** The dashboard's Alerts page in a real browser: an owner sets the webhook, sees the secret once, sends a test alert. */

describeWithBrowser('alerts page in a real browser', () => {
  let g: TestGateway;
  let browser: Browser;
  let page: Page;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    // The receiver is on 127.0.0.1: a loopback address alerts reach only where the operator allows it.
    g = await startGateway({ credits: 0, env: { ALERT_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32' } });
    receiver = await WebhookReceiver.start();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.on('pageerror', (error) => {
      throw error;
    });
  });
  afterAll(async () => {
    await browser?.close();
    await receiver.close();
    await g.close();
  });

  const byTest = (id: string) => page.getByTestId(id);

  it('an owner sets the alerts, is shown the signing secret once, and a test alert arrives signed with it', async () => {
    await page.goto(`${g.baseUrl}/dashboard/`);
    await byTest('signup-toggle').click();
    await byTest('signin-email').fill('ada@example.com');
    await byTest('signin-password').fill('a long enough password');
    await byTest('signin-submit').click();
    await byTest('org-name').fill('Ada Labs');
    await byTest('org-create').click();
    await byTest('credits-available').waitFor();

    await byTest('nav-alerts').click();
    await byTest('alerts-url').fill(receiver.url);
    await byTest('alerts-balance').fill('5');
    await byTest('alerts-day-spend').fill('2.5');
    await byTest('alerts-key-limits').check();
    await byTest('alerts-save').click();
    const secret = (await byTest('alerts-secret').locator('code').textContent())!;
    expect(secret).toMatch(/^whsec_/);
    expect(await byTest('alerts-status').textContent()).toMatch(/^On\./);

    await byTest('alerts-test').click();
    await receiver.until((r) => r.length === 1);
    expect(new Webhook(secret).verify(receiver.received[0].body, receiver.received[0].headers)).toMatchObject({ type: 'test' });

    // Shown again, the page has the settings and no secret.
    await byTest('nav-keys').click();
    await byTest('nav-alerts').click();
    await eventually(async () => (await byTest('alerts-balance').inputValue()) === '5');
    expect(await byTest('alerts-day-spend').inputValue()).toBe('2.5');
    expect(await byTest('alerts-key-limits').isChecked()).toBe(true);
    expect(await byTest('alerts-secret').textContent()).toBe('');
  });
});
