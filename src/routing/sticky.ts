import type { RedisProjectionStore } from '../projections/redis-projection-store';
import type { Conversation } from './preferences';

/**
 * Cache-sticky routing's memory: for each organization, conversation and model, the host that
 * served it last, kept as long as that host's prompt cache lives. In Redis when the read models
 * are (every instance sends the conversation to the same host; keys under the organization's hash
 * tag, with a TTL), else in this process.
 */
export interface StickyRoutes {
  /** Per model slug of `models`, the host that served the conversation last (while its cache lives). */
  hostsOf(orgId: string, conversation: Conversation, models: readonly string[]): Promise<Map<string, string>>;
  /** `hostId` served the conversation on `model`: the next request of it goes there for `conversation.ttlMs`. */
  remember(orgId: string, conversation: Conversation, model: string, hostId: string): Promise<void>;
}

/** Conversations kept by one process at most: the oldest is forgotten first (its request then goes in the catalogue's order). */
const MEMORY_LIMIT = 100_000;

export class MemoryStickyRoutes implements StickyRoutes {
  /** In order of last use: a Map iterates in insertion order, and a remembered entry is moved to its end. */
  private readonly entries = new Map<string, { hostId: string; until: number }>();

  constructor(private readonly clock: () => number = Date.now) {}

  private static key(orgId: string, conversation: Conversation, model: string): string {
    return `${orgId}\u0000${model}\u0000${conversation.key}`;
  }

  hostsOf(orgId: string, conversation: Conversation, models: readonly string[]): Promise<Map<string, string>> {
    const now = this.clock();
    const found = new Map<string, string>();
    for (const model of models) {
      const key = MemoryStickyRoutes.key(orgId, conversation, model);
      const entry = this.entries.get(key);
      if (entry && entry.until > now) found.set(model, entry.hostId);
      else if (entry) this.entries.delete(key);
    }
    return Promise.resolve(found);
  }

  remember(orgId: string, conversation: Conversation, model: string, hostId: string): Promise<void> {
    const key = MemoryStickyRoutes.key(orgId, conversation, model);
    this.entries.delete(key);
    this.entries.set(key, { hostId, until: this.clock() + conversation.ttlMs });
    if (this.entries.size > MEMORY_LIMIT) this.entries.delete(this.entries.keys().next().value!);
    return Promise.resolve();
  }
}

/**
 * A conversation's route written again by this instance, to the same host, no sooner than this
 * share of its lifetime after the last write: one Redis command a request (the read) instead of two.
 * The route may end that much before the host's cache does (30 s of 5 minutes).
 */
const REFRESH_SHARE = 0.1;

export class RedisStickyRoutes implements StickyRoutes {
  /** The routes this instance wrote last, by key, in order of writing (bounded as the memory store is). */
  private readonly written = new Map<string, { hostId: string; at: number }>();

  constructor(
    private readonly store: RedisProjectionStore,
    private readonly clock: () => number = Date.now,
  ) {}

  private key(orgId: string, conversation: Conversation, model: string): string {
    return `${this.store.org(orgId).tag}:sticky:${model}:${conversation.key}`;
  }

  async hostsOf(orgId: string, conversation: Conversation, models: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (models.length === 0) return found;
    const hosts = await this.store.client.mGet(models.map((m) => this.key(orgId, conversation, m)));
    models.forEach((model, i) => {
      const host = hosts[i];
      if (typeof host === 'string') found.set(model, host);
    });
    return found;
  }

  async remember(orgId: string, conversation: Conversation, model: string, hostId: string): Promise<void> {
    const key = this.key(orgId, conversation, model);
    const now = this.clock();
    const last = this.written.get(key);
    if (last !== undefined && last.hostId === hostId && now - last.at < conversation.ttlMs * REFRESH_SHARE) return;
    this.written.delete(key);
    this.written.set(key, { hostId, at: now });
    if (this.written.size > MEMORY_LIMIT) this.written.delete(this.written.keys().next().value!);
    try {
      await this.store.client.set(key, hostId, { PX: conversation.ttlMs });
    } catch (error) {
      // Not written: the next request writes it.
      this.written.delete(key);
      throw error;
    }
  }
}
