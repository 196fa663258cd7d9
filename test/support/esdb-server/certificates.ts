import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../temp';

export interface TestCertificates {
  /** The CA file the client is given (`tlsCAFile`). */
  caFile: string;
  key: Buffer;
  cert: Buffer;
  cleanup: () => void;
}

/** A test CA and a node certificate it signed for localhost and 127.0.0.1 (openssl, P-256 keys, one day). */
export function testCertificates(): TestCertificates {
  const dir = tempDir('esdb-tls');
  const at = (name: string) => join(dir.path, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', at('ca.key'), '-out', at('ca.crt'), '-days', '1', '-subj', '/CN=esdb test CA');
  openssl('req', ...ec, '-keyout', at('node.key'), '-out', at('node.csr'), '-subj', '/CN=localhost');
  writeFileSync(at('node.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    at('node.csr'),
    '-CA',
    at('ca.crt'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-out',
    at('node.crt'),
    '-days',
    '1',
    '-extfile',
    at('node.ext'),
  );
  return { caFile: at('ca.crt'), key: readFileSync(at('node.key')), cert: readFileSync(at('node.crt')), cleanup: dir.cleanup };
}
