import { WebhookDestinations } from '../../src/alerts/webhook-destinations';
import { ConfigError, loadConfig } from '../../src/config/config';
import { parseNetworks } from '../../src/config/networks';

/** Which addresses alerts' webhooks may reach, and the operator's networks that allow some. */
describe('webhook destinations', () => {
  const strict = new WebhookDestinations([]);

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['0.0.0.0', 'this network'],
    ['::', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'unique local'],
    ['fd00:ec2::254', 'unique local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['198.18.0.1', 'benchmarks'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:7f00:1::', 'loopback'],
    ['::127.0.0.1', 'IPv4-compatible'],
    ['64:ff9b:1::1', 'NAT64'],
  ])('refuses %s (%s)', (address, kind) => {
    expect(strict.refusal(address)).toContain(kind);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    'lets %s be reached',
    (address) => {
      expect(strict.refusal(address)).toBeNull();
    },
  );

  it('the operator’s networks are reached, and only they; an address standing for an IPv4 one is judged as that one', () => {
    const allowing = new WebhookDestinations(parseNetworks('127.0.0.1/32, 10.20.0.0/16 fd12::/16'));
    for (const allowed of ['127.0.0.1', '::ffff:127.0.0.1', '10.20.3.4', 'fd12:1::5'])
      expect(allowing.refusal(allowed)).toBeNull();
    for (const refused of ['127.0.0.2', '::1', '10.21.0.1', 'fd13::1', '169.254.169.254'])
      expect(allowing.refusal(refused)).not.toBeNull();
  });

  it('refuses a URL whose host is such an address (however it is written), never one whose host is a name', () => {
    for (const url of [
      'http://127.0.0.1:8080/x',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'https://169.254.169.254/latest/meta-data/',
    ])
      expect(strict.urlRefusal(url)).toMatch(/^its host is /);
    for (const url of ['http://localhost:8080/', 'https://hooks.example.com/a?token=x', 'https://8.8.8.8/'])
      expect(strict.urlRefusal(url)).toBeNull();
  });

  it('reads the operator’s networks, and names the first it cannot read', () => {
    expect(parseNetworks('')).toEqual([]);
    expect(parseNetworks(' 127.0.0.1 , ::1/128,10.0.0.0/8 ')).toEqual([
      { address: '127.0.0.1', prefix: 32, family: 'ipv4' },
      { address: '::1', prefix: 128, family: 'ipv6' },
      { address: '10.0.0.0', prefix: 8, family: 'ipv4' },
    ]);
    for (const bad of ['localhost', '10.0.0.0/33', '::/129', '10.0.0.0/8/1', '10.0.0.0/x', '300.1.1.1'])
      expect(() => parseNetworks(`127.0.0.1, ${bad}`)).toThrow(`"${bad}" is not an address or a network in CIDR notation`);
    expect(loadConfig({ ALERT_WEBHOOK_ALLOW_CIDRS: '192.168.0.0/16' }).alertWebhookAllowCidrs).toEqual([
      { address: '192.168.0.0', prefix: 16, family: 'ipv4' },
    ]);
    expect(loadConfig({}).alertWebhookAllowCidrs).toEqual([]);
    expect(() => loadConfig({ ALERT_WEBHOOK_ALLOW_CIDRS: 'intranet' })).toThrow(ConfigError);
    expect(() => loadConfig({ ALERT_WEBHOOK_ALLOW_CIDRS: 'intranet' })).toThrow(
      /^configuration: ALERT_WEBHOOK_ALLOW_CIDRS "intranet"/,
    );
  });
});
