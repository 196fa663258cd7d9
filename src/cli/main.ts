import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import {
  closeSync,
  constants as fsConstants,
  createReadStream,
  createWriteStream,
  existsSync,
  fchmodSync,
  fstatSync,
  ftruncateSync,
  openSync,
  type WriteStream,
} from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { auditLedger } from '../audit/ledger-audit';
import { type Config, ConfigError, loadConfig } from '../config/config';
import { IdentityRuleError } from '../identity/identity-rule-error';
import { isoTime } from '../identity/iso-time';
import type { LimitReset, RateLimits } from '../identity/identity.events';
import { keyStatus } from '../identity/key-lookup';
import { type KeyChangesAsked, OPERATOR } from '../keys/api-key/api-key.decider';
import { CreateKeyHandler } from '../keys/create/create-key.handler';
import { ListKeysHandler } from '../keys/list/list-keys.handler';
import { RevokeKeyHandler } from '../keys/revoke/revoke-key.handler';
import { UpdateKeyHandler } from '../keys/update/update-key.handler';
import {
  type CreditNoteAsked,
  creditNoteLines,
  creditNoteView,
  issueCreditNote,
  issuerLine,
  noteIssuer,
} from '../credit-notes/credit-notes';
import { type ApiKeyCreated, apiKeyStream } from '../keys/api-key/api-key.events';
import { ApiError } from '../http/api-error';
import { LedgerRuleError } from '../ledger/ledger.decider';
import { exportLedger } from '../ledger-export/ledger-export';
import { describeDifference, ExportVerifier, type VerifyExpectations, type VerifyReport } from '../ledger-export/ledger-verify';
import { CREDIT_NOTE_REASONS, type CreditNoteIssued, creditsStream } from '../ledger/ledger.events';
import { formatCredits, formatNanoSum, MoneyFormatError, parseCredits } from '../ledger/money';
import { rebuildProjections } from '../projections/projector';
import { RedisProjectionStore } from '../projections/redis-projection-store';
import { availableOf, reservedOf } from '../projections/read-models';
import { eventLogPath, openRuntime, Runtime } from '../runtime/runtime';
import { BackupError, backupLog } from '../eventstore/sqlite-backup';
import { gatewayFromPidFile, PID_FILE, processRuns } from '../runtime/pid-file';
import { LogClaimError } from '../runtime/log-claim';
import {
  claimShared,
  claimStore,
  heldTogether,
  type ServingClaim,
  ServingClaimError,
  StoreClaimError,
} from '../runtime/serving-claim';
import { checkStatementMonth, type Statement } from '../statements/statement';
import { ExportStatement, ExportStatementError } from '../statements/statement-from-export';
import { statementCsv, statementHtml, statementText } from '../statements/statement-format';
import { readStatement } from '../statements/statement.query';

/** A failure to report to the operator as one line, with a non-zero exit. */
class OperatorError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function uuid(what: string) {
  return (value: string) => {
    if (!UUID.test(value)) throw new InvalidArgumentError(`${what} must be an id as printed when it was created.`);
    return value.toLowerCase();
  };
}

/** A chain's event count as published (0 for a chain with no events yet). */
function eventCount(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError('--events must be a whole number from 0 up.');
  return n;
}

/** A grant's id as an operator gives it: up to 128 letters, digits and `_ . : -` (an invoice number, a UUID). */
function grantId(value: string) {
  if (!/^[\w.:-]{1,128}$/.test(value))
    throw new InvalidArgumentError('--grant-id must be 1 to 128 letters, digits, "_", ".", ":" or "-".');
  return value;
}

/** A whole number from 1 up, as a rate limit is given. */
function perMinute(what: string) {
  return (value: string) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
      throw new InvalidArgumentError(`${what} must be a whole number from 1 up.`);
    return n;
  };
}

const RESETS: LimitReset[] = ['never', 'daily', 'weekly', 'monthly'];

/** An amount of credits (decimal), as nano-credits. */
function creditAmount(what: string) {
  return (value: string) => {
    try {
      return parseCredits(value);
    } catch (error) {
      throw new InvalidArgumentError(`${what}: ${(error as Error).message}`);
    }
  };
}

/** A calendar month as YYYY-MM. */
function statementMonth(value: string) {
  try {
    checkStatementMonth(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return value;
}

/** A time in ISO 8601 (with its zone), as milliseconds. */
function time(what: string) {
  return (value: string) => {
    const ms = isoTime(value);
    if (ms === null) {
      throw new InvalidArgumentError(`${what} must be a time in ISO 8601 with its zone, e.g. 2027-01-31T00:00:00Z.`);
    }
    return ms;
  };
}

/** The rate limits given as --rpm and --tpm, or undefined when neither was. */
function rateLimitsOf(opts: { rpm?: number; tpm?: number }): RateLimits | undefined {
  if (opts.rpm === undefined && opts.tpm === undefined) return undefined;
  return {
    ...(opts.rpm === undefined ? {} : { requestsPerMinute: opts.rpm }),
    ...(opts.tpm === undefined ? {} : { tokensPerMinute: opts.tpm }),
  };
}

interface Output {
  json: boolean;
  /** Prints `value` as JSON with --json, else the human lines. */
  print(value: unknown, lines: string[]): void;
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new OperatorError('--password-stdin expects the password on standard input');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** A progress bar on a terminal; a plain line every tenth of the way otherwise. */
function progressReporter(json: boolean) {
  if (json) return { update: () => {}, stop: () => {} };
  if (process.stderr.isTTY) {
    const bar = new SingleBar(
      { stream: process.stderr, format: '{bar} {percentage}% | {value}/{total} | {eta_formatted} left' },
      Presets.shades_classic,
    );
    let started = false;
    return {
      update(value: number, total: number) {
        if (!started) bar.start(total, 0);
        started = true;
        bar.setTotal(total);
        bar.update(value);
      },
      stop: () => started && bar.stop(),
    };
  }
  let lastTenth = -1;
  return {
    update(value: number, total: number) {
      const tenth = total === 0 ? 10 : Math.floor((value / total) * 10);
      if (tenth > lastTenth) {
        lastTenth = tenth;
        process.stderr.write(`progress: ${value}/${total} (${tenth * 10}%)\n`);
      }
    },
    stop: () => {},
  };
}

/**
 * How an action opens the service's stores. `beginsLog`: the command may begin a data directory (its
 * first organization or user) and makes the log when there is none; any other is refused there.
 * `rebuilding`: the read models' rebuild, which on EventStoreDB claims their Redis store in the log
 * (refused while instances serve it with another store: LogClaimError).
 */
type WithRuntime = <T>(
  work: (runtime: Runtime, out: Output) => Promise<T>,
  options?: { beginsLog?: boolean; rebuilding?: boolean },
) => Promise<T>;

export function buildProgram(withRuntime: WithRuntime): Command {
  const program = new Command('model-gateway')
    .description('Operator tool for Model Gateway: organizations, credits, keys, users, ledger audit and read models.')
    .addOption(new Option('--json', 'print machine-readable JSON'))
    .showHelpAfterError()
    .exitOverride();

  const org = program.command('org').description('organizations');
  org
    .command('create')
    .requiredOption('--name <name>', 'organization name')
    .action((opts: { name: string }) =>
      withRuntime(
        async (rt, out) => {
          const created = await rt.identity.createOrganization(opts.name);
          out.print(created, [created.orgId]);
        },
        { beginsLog: true },
      ),
    );
  org
    .command('add-member')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .requiredOption('--email <email>', "the user's email")
    .addOption(new Option('--role <role>', 'role in the organization').choices(['owner', 'member']).default('member'))
    .option('--manage-keys', 'a member who may create, change and revoke keys (owners always may)')
    .action((opts: { org: string; email: string; role: 'owner' | 'member'; manageKeys?: boolean }) =>
      withRuntime(async (rt, out) => {
        const added = await rt.identity.addMember(opts.org, opts.email, opts.role, { manageKeys: opts.manageKeys === true });
        out.print({ orgId: opts.org, ...added, role: opts.role }, [`added ${opts.email} to ${opts.org} as ${opts.role}`]);
      }),
    );
  org
    .command('remove-member')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .requiredOption('--email <email>', "the user's email")
    .action((opts: { org: string; email: string }) =>
      withRuntime(async (rt, out) => {
        const { state: user } = await rt.identity.user(opts.email);
        if (!user.exists) throw new OperatorError(`no user with email ${opts.email}`);
        await rt.identity.removeMember(opts.org, user.userId);
        out.print({ orgId: opts.org, userId: user.userId, removed: true }, [`removed ${opts.email} from ${opts.org}`]);
      }),
    );

  org
    .command('limits')
    .description("sets the default rate limits of the organization's keys that have none of their own")
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .option('--rpm <n>', 'requests per minute per key', perMinute('--rpm'))
    .option('--tpm <n>', 'tokens per minute per key', perMinute('--tpm'))
    .option('--clear', 'no default rate limits')
    .action((opts: { org: string; rpm?: number; tpm?: number; clear?: boolean }) =>
      withRuntime(async (rt, out) => {
        const given = rateLimitsOf(opts);
        if ((given === undefined) === (opts.clear !== true)) throw new OperatorError('give --rpm and/or --tpm, or --clear');
        const rateLimits = await rt.identity.setOrganizationRateLimits(opts.org, given ?? null);
        out.print({ orgId: opts.org, rateLimits }, [
          rateLimits === null
            ? `${opts.org}: no default rate limits`
            : `${opts.org}: keys without their own limits may make ${rateLimits.requestsPerMinute ?? 'any number of'} requests and be billed ${rateLimits.tokensPerMinute ?? 'any number of'} tokens per minute`,
        ]);
      }),
    );

  const credits = program.command('credits').description('credit balances');
  credits
    .command('grant')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .requiredOption('--amount <credits>', 'credits to add, e.g. 12.50')
    .option('--reason <reason>', 'why, for the ledger', 'operator grant')
    .option('--grant-id <id>', "this grant's id: run again with it, the grant is made once (default: a new id)", grantId)
    .action((opts: { org: string; amount: string; reason: string; grantId?: string }) =>
      withRuntime(async (rt, out) => {
        const amount = parseCredits(opts.amount);
        const { grant, alreadyGranted } = await rt.ledger.grant(opts.org, amount, opts.reason, opts.grantId);
        const view = {
          orgId: opts.org,
          grantId: grant.grantId,
          amount: formatCredits(grant.amount),
          reason: grant.reason,
          alreadyGranted,
        };
        out.print(view, [
          alreadyGranted
            ? `grant ${grant.grantId} was already made (${view.amount} credits to ${opts.org}, ${new Date(grant.grantedAt).toISOString()}): nothing more granted`
            : `granted ${view.amount} credits to ${opts.org}`,
        ]);
      }),
    );
  const reasons = new Option('--reason <code>', 'why, for the ledger').choices([...CREDIT_NOTE_REASONS]).makeOptionMandatory();
  const idempotencyKey = new Option(
    '--idempotency-key <key>',
    'this note’s key: run again with it, the note is issued once (1 to 128 letters, digits, "_", ".", ":" or "-")',
  ).makeOptionMandatory();
  const issueNote = (rt: Runtime, out: Output, asked: Omit<CreditNoteAsked, 'issuedBy'>) =>
    issueCreditNote(rt.ledger, rt.projections, { ...asked, issuedBy: 'cli' }).then((issued) =>
      out.print(
        { ...creditNoteView(issued.note, issued.alreadyIssued), amount: formatCredits(issued.note.amount) },
        creditNoteLines(issued),
      ),
    );
  credits
    .command('refund')
    .description('refund a generation, in whole or in part: never more than it was charged, less its earlier refunds')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .requiredOption('--generation <id>', 'the generation: its x-request-id, its reply’s id, or its reservation id')
    .option('--amount <credits>', 'credits to refund (default: all of its charge not yet refunded)')
    .addOption(reasons)
    .addOption(idempotencyKey)
    .option('--memo <text>', 'a note for the ledger')
    .action((opts: { org: string; generation: string; amount?: string; reason: string; idempotencyKey: string; memo?: string }) =>
      withRuntime(async (rt, out) => {
        await rt.projector.catchUp();
        await issueNote(rt, out, {
          orgId: opts.org,
          kind: 'refund',
          generation: opts.generation,
          ...(opts.amount === undefined ? {} : { amount: opts.amount }),
          reason: opts.reason,
          idempotencyKey: opts.idempotencyKey,
          ...(opts.memo === undefined ? {} : { memo: opts.memo }),
        });
      }),
    );
  credits
    .command('adjust')
    .description('adjust the balance: + credits it, - debits it (never below what is available)')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .requiredOption('--amount <credits>', 'signed credits, e.g. 5 or -2.50')
    .addOption(reasons)
    .addOption(idempotencyKey)
    .option('--memo <text>', 'a note for the ledger')
    .action((opts: { org: string; amount: string; reason: string; idempotencyKey: string; memo?: string }) =>
      withRuntime(async (rt, out) => {
        await rt.projector.catchUp();
        await issueNote(rt, out, {
          orgId: opts.org,
          kind: 'adjustment',
          amount: opts.amount,
          reason: opts.reason,
          idempotencyKey: opts.idempotencyKey,
          ...(opts.memo === undefined ? {} : { memo: opts.memo }),
        });
      }),
    );
  credits
    .command('show')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .action((opts: { org: string }) =>
      withRuntime(async (rt, out) => {
        await requireOrganization(rt, opts.org);
        await rt.projector.catchUp();
        const b = await rt.projections.balance(opts.org);
        const view = {
          orgId: opts.org,
          granted: formatCredits(b.granted),
          spent: formatCredits(b.spent),
          reserved: formatCredits(reservedOf(b)),
          available: formatCredits(availableOf(b)),
        };
        out.print(view, [
          `granted   ${view.granted}`,
          `spent     ${view.spent}`,
          `reserved  ${view.reserved}`,
          `available ${view.available}`,
        ]);
      }),
    );

  credits
    .command('notes')
    .description('list the credit notes issued to an organization and who issued each; those not the operator’s are marked')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .action((opts: { org: string }) =>
      withRuntime(async (rt, out) => {
        const { state: organization } = await rt.identity.organization(opts.org);
        if (!organization.exists) throw new OperatorError(`no organization ${opts.org}`);
        const notes = (await rt.events.readStream(creditsStream(opts.org)))
          .filter((e) => e.type === 'CreditNoteIssued')
          .map((e) => (e as unknown as CreditNoteIssued).data);
        const keyOf = async (id: string) => {
          const [created] = await rt.events.readStream(apiKeyStream(id));
          const data = created?.type === 'ApiKeyCreated' ? (created as unknown as ApiKeyCreated).data : null;
          return data !== null && data.orgId === opts.org ? { madeBy: data.createdBy ?? null } : null;
        };
        const listed = [];
        for (const note of notes) {
          const issuer = noteIssuer(
            note.issuedBy,
            note.issuedBy === 'cli' ? null : await keyOf(note.issuedBy),
            organization.members,
          );
          listed.push({ note, issuer });
        }
        const unexpected = listed.filter((n) => n.issuer.unexpected).length;
        out.print(
          {
            orgId: opts.org,
            notes: listed.map(({ note, issuer }) => ({ ...creditNoteView(note), amount: formatCredits(note.amount), issuer })),
            unexpected,
          },
          [
            ...listed.map(
              ({ note, issuer }) =>
                `${new Date(note.issuedAt).toISOString()}  ${note.creditNoteId}  ${note.kind === 'refund' ? 'refund    ' : 'adjustment'}  ${note.amount > 0 ? '+' : ''}${formatCredits(note.amount)}  ${note.reason}  by ${issuerLine(issuer)}${issuer.unexpected ? '  (not the operator’s)' : ''}`,
            ),
            `${listed.length} credit note${listed.length === 1 ? '' : 's'}, ${unexpected} not issued by the operator or a key the operator made`,
          ],
        );
      }),
    );

  const keys = program.command('keys').description('API keys');
  keys
    .command('create')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .requiredOption('--name <name>', 'key name')
    .option('--rpm <n>', 'requests per minute the key may make (default: the organization’s, if set)', perMinute('--rpm'))
    .option('--tpm <n>', 'tokens per minute the key may be billed (default: the organization’s, if set)', perMinute('--tpm'))
    .option('--expires <time>', 'when the key stops working (ISO 8601, e.g. 2027-01-31T00:00:00Z)', time('--expires'))
    .option('--management', 'a management key: it manages the organization’s keys (/api/v1/keys) and cannot call models')
    .option('--billing', 'with --management: billing rights too (it may issue credit notes, /api/v1/credit-notes)')
    .option(
      '--limit <credits>',
      'the most the key may be charged per period (settled charges and open holds)',
      creditAmount('--limit'),
    )
    .addOption(new Option('--limit-reset <when>', 'when the limit starts afresh (UTC; default never)').choices(RESETS))
    .action(
      (opts: {
        org: string;
        name: string;
        rpm?: number;
        tpm?: number;
        expires?: number;
        management?: boolean;
        billing?: boolean;
        limit?: number;
        limitReset?: LimitReset;
      }) =>
        withRuntime(async (rt, out) => {
          if (opts.limitReset !== undefined && opts.limit === undefined)
            throw new OperatorError('--limit-reset goes with --limit');
          const rateLimits = rateLimitsOf(opts);
          const settings = {
            ...(rateLimits ? { rateLimits } : {}),
            ...(opts.expires === undefined ? {} : { expiresAt: opts.expires }),
            ...(opts.management ? { kind: 'management' as const } : {}),
            ...(opts.billing ? { billing: true as const } : {}),
            ...(opts.limit === undefined ? {} : { limit: { amount: opts.limit, reset: opts.limitReset ?? 'never' } }),
          };
          const created = await new CreateKeyHandler(rt.events).execute({
            orgId: opts.org,
            actor: OPERATOR,
            name: opts.name,
            settings,
          });
          const { keyId, secret, orgId, name, prefix, kind, billing } = created;
          out.print({ keyId, secret, orgId, name, prefix, ...(kind ? { kind } : {}), ...(billing ? { billing } : {}) }, [
            `id     ${keyId}`,
            `secret ${secret}`,
            'The secret is shown only now: keep it safe.',
          ]);
        }),
    );
  keys
    .command('list')
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .action((opts: { org: string }) =>
      withRuntime(async (rt, out) => {
        await requireOrganization(rt, opts.org);
        const keys = await new ListKeysHandler(rt.projections, rt.projector).execute({
          orgId: opts.org,
          actor: OPERATOR,
          after: 'head',
        });
        const list = keys
          .sort((a, b) => a.createdAt - b.createdAt)
          .map((key) => ({
            keyId: key.keyId,
            name: key.name,
            prefix: key.prefix,
            createdAt: new Date(key.createdAt).toISOString(),
            status: keyStatus(key),
            expiresAt: key.expiresAt === undefined ? null : new Date(key.expiresAt).toISOString(),
            rateLimits: key.rateLimits ?? null,
            spent: formatCredits(key.spent ?? 0),
            limit: key.limit ? { credits: formatCredits(key.limit.amount), reset: key.limit.reset } : null,
          }));
        out.print(
          list,
          list.length === 0
            ? ['no keys']
            : list.map((k) =>
                [
                  `${k.keyId}  ${k.prefix}…  ${k.status.padEnd(8)}`,
                  `spent ${k.spent}${k.limit ? ` of ${k.limit.credits} (${k.limit.reset})` : ''}`,
                  ...(k.expiresAt ? [`expires ${k.expiresAt}`] : []),
                  ...(k.rateLimits?.requestsPerMinute ? [`${k.rateLimits.requestsPerMinute} rpm`] : []),
                  ...(k.rateLimits?.tokensPerMinute ? [`${k.rateLimits.tokensPerMinute} tpm`] : []),
                  `created ${k.createdAt}`,
                  k.name,
                ].join('  '),
              ),
        );
      }),
    );
  keys
    .command('update')
    .description("changes a key's name, rate limits or expiry, or disables or enables it")
    .requiredOption('--key <id>', 'key id', uuid('--key'))
    .option('--name <name>', 'a new name')
    .option('--rpm <n>', 'requests per minute (replaces its rate limits with those given)', perMinute('--rpm'))
    .option('--tpm <n>', 'tokens per minute (replaces its rate limits with those given)', perMinute('--tpm'))
    .option('--no-rate-limits', 'no limits of its own (the organization’s default applies)')
    .option('--expires <time>', 'when the key stops working (ISO 8601)', time('--expires'))
    .option('--no-expiry', 'the key never expires')
    .option('--limit <credits>', 'the most the key may be charged per period', creditAmount('--limit'))
    .addOption(new Option('--limit-reset <when>', 'when the limit starts afresh (UTC; with --limit)').choices(RESETS))
    .option('--no-limit', 'no credit limit of its own')
    .option('--disable', 'refused until enabled again')
    .option('--enable', 'serves again')
    .action(
      (opts: {
        key: string;
        name?: string;
        rpm?: number;
        tpm?: number;
        rateLimits: boolean;
        expires?: number;
        expiry: boolean;
        disable?: boolean;
        enable?: boolean;
        limit?: number | false;
        limitReset?: LimitReset;
      }) =>
        withRuntime(async (rt, out) => {
          if (opts.disable && opts.enable) throw new OperatorError('give --disable or --enable, not both');
          if (!opts.rateLimits && (opts.rpm !== undefined || opts.tpm !== undefined)) {
            throw new OperatorError('give --rpm/--tpm or --no-rate-limits, not both');
          }
          if (!opts.expiry && opts.expires !== undefined) throw new OperatorError('give --expires or --no-expiry, not both');
          const changes: KeyChangesAsked = {};
          if (opts.name !== undefined) changes.name = opts.name;
          const rateLimits = rateLimitsOf(opts);
          if (rateLimits !== undefined) changes.rateLimits = rateLimits;
          else if (!opts.rateLimits) changes.rateLimits = null;
          if (opts.expires !== undefined) changes.expiresAt = opts.expires;
          else if (!opts.expiry) changes.expiresAt = null;
          if (opts.disable || opts.enable) changes.disabled = opts.disable === true;
          if (typeof opts.limit === 'number') changes.limit = { amount: opts.limit, reset: opts.limitReset };
          else if (opts.limit === false) changes.limit = null;
          else if (opts.limitReset !== undefined) throw new OperatorError('--limit-reset goes with --limit');
          const { orgId, changes: changed } = await new UpdateKeyHandler(rt.events).execute({
            keyId: opts.key,
            orgId: null,
            actor: OPERATOR,
            changes,
          });
          out.print({ keyId: opts.key, orgId, changes: changed }, [`updated ${opts.key}: ${Object.keys(changed).join(', ')}`]);
        }),
    );
  keys
    .command('revoke')
    .requiredOption('--key <id>', 'key id', uuid('--key'))
    .action((opts: { key: string }) =>
      withRuntime(async (rt, out) => {
        const { orgId } = await new RevokeKeyHandler(rt.events).execute({ keyId: opts.key, orgId: null, actor: OPERATOR });
        out.print({ keyId: opts.key, orgId, status: 'revoked' }, [`revoked ${opts.key}`]);
      }),
    );

  const users = program.command('users').description('dashboard users');
  users
    .command('create')
    .requiredOption('--email <email>', 'email, used to sign in')
    .requiredOption('--password-stdin', 'read the password from standard input')
    .action((opts: { email: string }) =>
      withRuntime(
        async (rt, out) => {
          const password = await readStdin();
          const user = await rt.identity.registerUser(opts.email, password);
          out.print(user, [user.userId]);
        },
        { beginsLog: true },
      ),
    );
  users
    .command('set-password')
    .description("sets a user's password (one forgotten, or known to others): every session of theirs ends")
    .requiredOption('--email <email>', "the user's email")
    .requiredOption('--password-stdin', 'read the new password from standard input')
    .action((opts: { email: string }) =>
      withRuntime(async (rt, out) => {
        const { state: user } = await rt.identity.user(opts.email);
        if (!user.exists) throw new OperatorError(`no user with email ${opts.email}`);
        await rt.identity.changePassword(opts.email, user.userId, await readStdin());
        out.print({ userId: user.userId, passwordChanged: true }, [
          `set the password of ${user.email}: their sessions have ended`,
        ]);
      }),
    );

  const ledger = program.command('ledger').description('the credit ledger');
  ledger
    .command('audit')
    .option('--org <id>', 'audit one organization', uuid('--org'))
    .action((opts: { org?: string }) =>
      withRuntime(async (rt, out) => {
        if (opts.org !== undefined) await requireOrganization(rt, opts.org);
        await rt.projector.catchUp(60_000);
        const progress = progressReporter(out.json);
        const report = await auditLedger(rt.events, rt.projections, {
          orgId: opts.org,
          onProgress: (position, head) => progress.update(position, head),
        });
        progress.stop();
        const totals = {
          granted: formatNanoSum(report.totals.granted),
          spent: formatNanoSum(report.totals.spent),
          reserved: formatNanoSum(report.totals.reserved),
        };
        out.print({ ...report, totals, clean: report.differences.length === 0 }, [
          `events ${report.events}, organizations ${report.organizations}, reservations ${report.reservations}`,
          `settled ${report.settlements} (${report.flaggedSettlements} flagged: host usage not believed; ${report.interruptedSettlements} interrupted: billed from their last progress), released ${report.releases}, expired ${report.expiries}`,
          `granted ${totals.granted}, spent ${totals.spent}, reserved ${totals.reserved}`,
          `credit notes ${report.creditNotes}`,
          ...(report.chains.pending > 0
            ? [
                `chain events not sealed yet: ${report.chains.pending} (recorded within the last ${report.chains.sealedWithinMs} ms)`,
              ]
            : []),
          ...report.differences.map((d) => `DIFFERENCE ${d}`),
          report.differences.length === 0 ? 'clean' : `${report.differences.length} difference(s)`,
        ]);
        if (report.differences.length > 0) process.exitCode = 1;
      }),
    );

  ledger
    .command('export')
    .description("an organization's ledger events as NDJSON, with their chain links, for ledger verify")
    .requiredOption('--org <id>', 'the organization', uuid('--org'))
    .option('--from <time>', 'from the first event recorded at this time (ISO 8601) or later', time('--from'))
    .option('--to <time>', 'up to the first event recorded at this time or later', time('--to'))
    .option('--output <file>', 'write to this file (default: standard output)')
    .action((opts: { org: string; from?: number; to?: number; output?: string }) =>
      withRuntime(async (rt) => {
        if (opts.from !== undefined && opts.to !== undefined && opts.from > opts.to) {
          throw new OperatorError(
            `--from ${new Date(opts.from).toISOString()} is later than --to ${new Date(opts.to).toISOString()}: no events lie between`,
          );
        }
        await requireOrganization(rt, opts.org);
        const sink = opts.output === undefined ? process.stdout : writableFile(opts.output);
        const progress = progressReporter(opts.output === undefined);
        const lines = exportLedger(rt.events, opts.org, {
          from: opts.from,
          to: opts.to,
          onProgress: (position, head) => progress.update(position, head),
        });
        await pipeline(
          Readable.from(lines, { objectMode: true }).map((line: string) => `${line}\n`),
          sink,
          // Standard output stays open for whatever the process prints after.
          { end: opts.output !== undefined },
        );
        progress.stop();
      }),
    );

  ledger
    .command('verify')
    .description(
      "check a ledger export on its own (no gateway data, no configuration): its hash chain, every charge, the balance and every key's spend",
    )
    .argument('<file>', 'the NDJSON file written by ledger export')
    .option(
      '--head <link>',
      'the chain head published for the organization (a statement, the dashboard): the file must end at it',
    )
    .option(
      '--events <n>',
      'the chain event count published beside that head: events before the file and in it must add up to it',
      eventCount,
    )
    .option(
      '--previous <file>',
      "the export of the period before (repeat for several, earliest first): each must open where the one before closed, vouching for the file's opening",
      (file: string, files: string[]) => [...files, file],
      [] as string[],
    )
    .action(async (file: string, opts: { head?: string; events?: number; previous: string[] }) => {
      const json = program.opts<{ json?: boolean }>().json === true;
      const started = performance.now();
      // Each previous export is verified whole, then the next must open on its end.
      let previous: VerifyReport | undefined;
      let failed: { file: string; report: VerifyReport; found: number } | undefined;
      for (const earlier of opts.previous) {
        const { report, found } = await verifyExport(earlier, { previous });
        if (found > 0) {
          failed = { file: earlier, report, found };
          break;
        }
        previous = report;
      }
      const { report, found } = failed ?? (await verifyExport(file, { head: opts.head, events: opts.events, previous }));
      const failedFile = failed?.file ?? file;
      const seconds = (performance.now() - started) / 1000;
      const first = report.differences[0];
      const through = (report.eventsBefore ?? 0) + report.events;
      const unvouched =
        report.openingVouchedBy === null
          ? `; its opening (${report.eventsBefore} events before it, its figures and link) is only its header's word: give the export before it with --previous`
          : '';
      const lines = [
        `organization ${report.orgId ?? '?'}: ${report.events} events (${through} in the chain through them), chain head ${report.head ?? '?'}`,
        ...(report.figures === null
          ? []
          : [
              `granted ${formatNanoSum(report.figures.granted)}, charged ${formatNanoSum(report.figures.charged)}, credited ${formatNanoSum(report.figures.credited)}, balance ${formatNanoSum(report.figures.balance)}, reserved ${formatNanoSum(report.figures.reserved)}`,
            ]),
        first === undefined
          ? `verified in ${seconds.toFixed(2)} s: the chain is whole and every charge, balance and key's spend recomputes${unvouched}`
          : `FIRST DIFFERENCE ${failed === undefined ? '' : `in ${failedFile}, `}${describeDifference(first)}`,
        ...(found > 1 ? [`${found} difference(s) in all`] : []),
      ];
      process.stdout.write(
        json
          ? `${JSON.stringify({ ...report, ...(failed === undefined ? {} : { file: failedFile }), differencesFound: found, verified: first === undefined, seconds })}\n`
          : `${lines.join('\n')}\n`,
      );
      if (first !== undefined) process.exitCode = 1;
    });

  ledger
    .command('statement')
    .description(
      "an organization's statement for a calendar month (UTC), computed from a ledger export alone (no gateway data, no configuration): the document statements show prints, to compare byte for byte",
    )
    .requiredOption('--export <file>', "the NDJSON file written by ledger export (without --from: from the chain's genesis)")
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .requiredOption('--month <YYYY-MM>', 'the month, e.g. 2026-11', statementMonth)
    .addOption(new Option('--format <format>', 'how to print it').choices(['text', 'json', 'csv', 'html']).default('text'))
    .action(async (opts: { export: string; org: string; month: string; format: StatementFormat }) => {
      const json = program.opts<{ json?: boolean }>().json === true;
      const computed = new ExportStatement(opts.export, opts.org, opts.month);
      try {
        const input = createInterface({ input: createReadStream(opts.export), crlfDelay: Infinity });
        for await (const line of input) computed.line(line);
      } catch (error) {
        throw new OperatorError(`${opts.export}: ${(error as Error).message}`);
      }
      printStatement(computed.finish(), json ? 'json' : opts.format);
    });

  program
    .command('statements')
    .description("organizations' monthly credit statements")
    .command('show')
    .description("an organization's statement for a calendar month (UTC), folded from the log")
    .requiredOption('--org <id>', 'organization id', uuid('--org'))
    .requiredOption('--month <YYYY-MM>', 'the month, e.g. 2026-11', statementMonth)
    .addOption(new Option('--format <format>', 'how to print it').choices(['text', 'json', 'csv', 'html']).default('text'))
    .action((opts: { org: string; month: string; format: StatementFormat }) =>
      withRuntime(async (rt, out) => {
        await requireOrganization(rt, opts.org);
        const { statement } = await readStatement(rt.events, opts.org, opts.month);
        printStatement(statement, out.json ? 'json' : opts.format);
      }),
    );

  program
    .command('projections')
    .description('read models')
    .command('rebuild')
    .description('drop every read model and rebuild it from the log')
    .action(async () => {
      // In-process read models are each process's own: rebuilt here, they would be this tool's copy
      // (its save then overwritten by the service's). Refused while such an instance serves the data,
      // and an in-process instance cannot start meanwhile (this holds the shared claim, as a Redis one does).
      const hold = inProcessRebuildHold(loadConfig());
      try {
        // On EventStoreDB, the read models' Redis store is claimed in the log for the rebuild's length
        // (refused while instances serve the log with another store), as a serving instance claims it.
        await withRuntime(
          async (rt, out) => {
            const redisHold =
              rt.projections instanceof RedisProjectionStore ? await redisRebuildHold(rt.config, rt.projections) : null;
            try {
              const started = performance.now();
              const progress = progressReporter(out.json);
              await rt.projector.stop();
              const result = await rebuildProjections(rt.events, rt.projections, rt.config.requestLogRetention, (p) =>
                progress.update(p.position, p.head),
              );
              progress.stop();
              const seconds = (performance.now() - started) / 1000;
              out.print({ ...result, seconds: Number(seconds.toFixed(3)), store: rt.projections.kind }, [
                `rebuilt ${rt.projections.kind} read models from ${result.events} events in ${seconds.toFixed(2)} s`,
              ]);
            } finally {
              redisHold?.release();
            }
          },
          { rebuilding: true },
        );
      } finally {
        hold?.release();
      }
    });

  program
    .command('backup')
    .description(
      'copy the embedded event log (DATA_DIR/events.sqlite) to a new file, safe while the service runs: a consistent copy, events still in the write-ahead log included (restore: README, Backup and restore)',
    )
    .requiredOption('--output <file>', 'the new file (an existing one is never overwritten)')
    .action(async (opts: { output: string }) => {
      const config = loadConfig();
      if (config.eventStoreUrl !== null)
        throw new OperatorError('EVENTSTORE_URL is set: back EventStoreDB up with its own tools (README, Backup and restore)');
      let made: Awaited<ReturnType<typeof backupLog>>;
      try {
        made = await backupLog(eventLogPath(config), opts.output);
      } catch (error) {
        throw error instanceof BackupError ? new OperatorError(error.message) : error;
      }
      const json = program.opts<{ json?: boolean }>().json === true;
      process.stdout.write(
        json ? `${JSON.stringify(made)}\n` : `backed up ${made.events} events (through position ${made.head}) to ${made.file}\n`,
      );
    });

  program
    .command('catalogue')
    .description('the catalogue of models and hosts')
    .command('reload')
    .description(
      'check the catalogue file (CATALOGUE_PATH) as the service would read it, then tell the running service to reload it (SIGHUP)',
    )
    .option('--pid <pid>', `the service's process id (default: the one in DATA_DIR/${PID_FILE})`, perMinute('--pid'))
    .action(async (opts: { pid?: number }) => {
      const config = loadConfig();
      // Loaded only for this command: the host kinds it reads need not slow every other one.
      const { Catalogue } = await import('../catalogue/catalogue');
      let catalogue: InstanceType<typeof Catalogue>;
      try {
        catalogue = Catalogue.load(config.cataloguePath);
      } catch (error) {
        throw new OperatorError(`not reloaded: ${(error as Error).message}`);
      }
      const pid = opts.pid ?? servicePid(config.dataDir);
      if (!processRuns(pid)) throw new OperatorError(`the service is not running: process ${pid} is not running`);
      try {
        process.kill(pid, 'SIGHUP');
      } catch (error) {
        throw new OperatorError(`the service (process ${pid}) could not be told: ${(error as Error).message}`);
      }
      const json = program.opts<{ json?: boolean }>().json === true;
      const value = { reloaded: config.cataloguePath, version: catalogue.version, pid, models: catalogue.models.length };
      process.stdout.write(
        json
          ? `${JSON.stringify(value)}\n`
          : `catalogue ${config.cataloguePath} (version ${catalogue.version}, ${value.models} models) checked; process ${pid} told to reload it\n`,
      );
    });

  return program;
}

type StatementFormat = 'text' | 'json' | 'csv' | 'html';

/** A statement as `statements show` prints it, and `ledger statement --export` the same, byte for byte. */
function printStatement(statement: Statement, format: StatementFormat): void {
  if (format === 'json') process.stdout.write(`${JSON.stringify(statement)}\n`);
  else if (format === 'csv') process.stdout.write(statementCsv(statement));
  else if (format === 'html') process.stdout.write(statementHtml(statement));
  else process.stdout.write(statementText(statement));
}

/**
 * Whether the tool may open the embedded log: a data directory that holds none (a mistyped
 * DATA_DIR, the tool run from another directory than the service's) would get a log of its own
 * that no service reads, and keys and credits made there would work nowhere. Only a command that
 * begins a directory makes one, and says so.
 */
function logToOpen(config: Config, beginsLog: boolean): void {
  const path = eventLogPath(config);
  if (config.eventStoreUrl !== null || existsSync(path)) return;
  if (!beginsLog)
    throw new OperatorError(
      `no event log at ${path}: is DATA_DIR right? (the service makes it at its first start; \`org create\` begins a new one)`,
    );
  process.stderr.write(`model-gateway: no event log at ${path} yet: made a new one (the service must use this DATA_DIR)\n`);
}

/**
 * For `projections rebuild` of in-process read models (no REDIS_URL): a shared hold on the serving
 * claim for the rebuild's length, refused while an instance with in-process read models serves the
 * data directory. Null with Redis: every instance reads the rebuilt read models, under traffic.
 */
function inProcessRebuildHold(config: Config): ServingClaim | null {
  if (config.redisUrl !== null) return null;
  try {
    return claimShared(config.dataDir, 'in-process');
  } catch (error) {
    if (!(error instanceof ServingClaimError)) throw error;
    throw new OperatorError(
      `not rebuilt: a gateway instance with in-process read models is serving from ${config.dataDir}, and its read models ` +
        "are its own: a rebuild here would rebuild only this tool's copy, and the service would overwrite its saved file. " +
        'Stop the service, run `model-gateway projections rebuild`, then start it again (a restart alone does not rebuild: ' +
        'it loads the saved read models and catches up with the log, rebuilding them only when they are of another version or another log)',
    );
  }
}

/**
 * For `projections rebuild` of read models in Redis: the claims of a Redis-mode instance (see
 * claimStore), for the rebuild's length. Refused while the data directory is served by an instance
 * with in-process read models, or with read models in another store: neither reads what this would
 * rebuild. Meanwhile neither can start.
 */
async function redisRebuildHold(config: Config, store: RedisProjectionStore): Promise<ServingClaim> {
  let serving: ServingClaim;
  try {
    serving = claimShared(config.dataDir);
  } catch (error) {
    if (!(error instanceof ServingClaimError)) throw error;
    throw new OperatorError(
      `not rebuilt: a gateway instance with in-process read models (no REDIS_URL) is serving from ${config.dataDir}, ` +
        'and it does not read the read models in Redis. Stop it and start every instance with REDIS_URL, or rebuild without REDIS_URL',
    );
  }
  try {
    return heldTogether(serving, claimStore(config.dataDir, await store.storeId()));
  } catch (error) {
    serving.release();
    if (!(error instanceof StoreClaimError)) throw error;
    throw new OperatorError(
      `not rebuilt: a gateway instance is serving from ${config.dataDir} with its read models in another Redis store ` +
        `(another REDIS_URL or REDIS_PREFIX: it holds ${error.heldLock}), so this rebuild would not be of the read models it reads. ` +
        'Run the tool with the REDIS_URL and REDIS_PREFIX of the service',
    );
  }
}

/** The pid the service wrote beside its data when it started listening, if that process is still the service. */
function servicePid(dataDir: string): number {
  const check = gatewayFromPidFile(dataDir);
  if ('refused' in check) throw new OperatorError(check.refused);
  return check.gateway;
}

/**
 * A file to write an organization's ledger to (its charges, keys and amounts), opened now: a path that
 * cannot be written is named before any work is done. Owner-only (0600) whatever the umask, as a
 * backup is: made so, or an existing file tightened before it is emptied (one this user may not
 * tighten is refused, untouched). What is not a regular file (a pipe, /dev/stdout) is written as it is.
 */
function writableFile(path: string): WriteStream {
  let fd: number;
  try {
    fd = openSync(path, fsConstants.O_WRONLY | fsConstants.O_CREAT, 0o600);
  } catch (error) {
    throw new OperatorError(`cannot write ${path}: ${(error as Error).message}`);
  }
  try {
    if (fstatSync(fd).isFile()) {
      fchmodSync(fd, 0o600);
      ftruncateSync(fd, 0);
    }
  } catch (error) {
    closeSync(fd);
    throw new OperatorError(`cannot make ${path} owner-only (0600) to write a ledger to it: ${(error as Error).message}`);
  }
  return createWriteStream(path, { fd });
}

/** Reads an export file through the verifier: its report and how many differences it found in all. */
async function verifyExport(file: string, expected: VerifyExpectations): Promise<{ report: VerifyReport; found: number }> {
  const verifier = new ExportVerifier(expected);
  try {
    const input = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
    for await (const line of input) verifier.line(line);
  } catch (error) {
    throw new OperatorError(`${file}: ${(error as Error).message}`);
  }
  return { report: verifier.finish(), found: verifier.differencesFound };
}

async function requireOrganization(rt: Runtime, orgId: string): Promise<void> {
  const { state } = await rt.identity.organization(orgId);
  if (!state.exists) throw new OperatorError(`no organization ${orgId}`);
}

const isOperatorFacing = (error: unknown) =>
  error instanceof OperatorError ||
  error instanceof ConfigError ||
  error instanceof MoneyFormatError ||
  error instanceof ExportStatementError ||
  error instanceof LedgerRuleError ||
  error instanceof LogClaimError ||
  error instanceof ApiError ||
  error instanceof IdentityRuleError;

export async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const fail = (message: string, code: number) => {
    process.stderr.write(json ? `${JSON.stringify({ error: message })}\n` : `model-gateway: ${message}\n`);
    return code;
  };
  const program = buildProgram(async (work, options) => {
    const config = loadConfig();
    logToOpen(config, options?.beginsLog === true);
    const runtime = await openRuntime(config, { rebuilding: options?.rebuilding === true });
    const out: Output = {
      json,
      print: (value, lines) => process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${lines.join('\n')}\n`),
    };
    try {
      return await work(runtime, out);
    } finally {
      await runtime.close();
    }
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return Number(process.exitCode ?? 0);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has already printed the usage error.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (isOperatorFacing(error)) return fail(error.message, 1);
    return fail(`unexpected failure: ${(error as Error).message}`, 1);
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => process.exit(code));
}
