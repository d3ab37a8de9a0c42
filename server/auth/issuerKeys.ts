import { createLocalJWKSet, errors, type CryptoKey, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import { z } from 'zod';

const Discovery = z.object({ issuer: z.string(), jwks_uri: z.url() });
const KeySetBody = z.object({ keys: z.array(z.looseObject({ kty: z.string(), kid: z.string().optional() })) });

/**
 * The issuer could not be asked (down, timing out, answering errors, or asked too often lately):
 * the token may well be good, so this is no reason to send the driver back to the login.
 */
export class IssuerUnreachable extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** The token names a key that the issuer's key set does not hold: withdrawn, or made up. */
export class KeyNotPublished extends Error {}

export interface IssuerKeysOptions {
  /** The issuer; its metadata lives at `{issuer}/.well-known/openid-configuration`. */
  issuer: () => string;
  /** Past the first few fetches in a row, the key set is fetched at most once per this many ms (0: no limit). */
  cooldownMs: number;
  /** How long the issuer may take to answer one request. */
  timeoutMs: number;
  clockToleranceSeconds: number;
  /** A set older than this is fetched again before it is used. */
  maxAgeMs: number;
}

interface KeySet {
  resolve: ReturnType<typeof createLocalJWKSet>;
  kids: Set<string>;
  /** The keys as fetched, to tell a changed set from the same one. */
  text: string;
  fetchedAt: number;
  generation: number;
}

const FETCHES_IN_A_ROW = 3;
// Issuers publish a key before, or as, they first sign with it; a set served through a cache may lag a little.
const PUBLICATION_LAG_MS = 60_000;

/**
 * The issuer's signing keys, fetched by us (discovery, then the key set) and handed to jose as a
 * local set: a set counts as fetched only when the issuer really answered it. A token naming a key
 * the set lacks makes the set be fetched again (a rotation), within a budget that spares the issuer
 * tokens with made-up keys; while the issuer cannot be asked, the keys of the last set fetched
 * keep serving and every other token is `IssuerUnreachable`, never refused.
 */
export function createIssuerKeys(options: IssuerKeysOptions) {
  let jwksUri: string | undefined;
  let held: KeySet | undefined;
  let generation = 0;
  // Keys seen in a set and missing from a later one: a token naming one is refused without asking again.
  const withdrawn = new Set<string>();
  let fetching: Promise<void> | undefined;

  let budget = FETCHES_IN_A_ROW;
  let budgetAt = Date.now();
  const budgetNow = () => {
    const now = Date.now();
    budget = Math.min(FETCHES_IN_A_ROW, budget + (options.cooldownMs > 0 ? (now - budgetAt) / options.cooldownMs : Infinity));
    budgetAt = now;
    return budget;
  };
  /** Seconds until the budget allows the next fetch. */
  const retryAfterSeconds = () => Math.max(1, Math.ceil(((1 - budgetNow()) * options.cooldownMs) / 1000));

  const ask = async (what: string, url: string): Promise<unknown> => {
    try {
      // The timeout covers the body too: an issuer that accepts and never answers is out.
      const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(options.timeoutMs) });
      if (!response.ok) throw new Error(`answered ${response.status}`);
      return await response.json();
    } catch (error) {
      throw new IssuerUnreachable(`OIDC ${what}: ${(error as Error).message}`, retryAfterSeconds());
    }
  };

  /** `budgeted`: asked for by a token; the start's own fetch spends none of the budget that spares the issuer. */
  const fetchKeySet = async (budgeted: boolean) => {
    if (budgeted && budgetNow() < 1) throw new IssuerUnreachable('the key set was fetched too often lately', retryAfterSeconds());
    if (budgeted) budget -= 1;
    const issuer = options.issuer().replace(/\/$/, '');
    if (!jwksUri) {
      const metadata = Discovery.safeParse(await ask('discovery', `${issuer}/.well-known/openid-configuration`));
      if (!metadata.success) throw new IssuerUnreachable('OIDC discovery answered no valid metadata', retryAfterSeconds());
      if (metadata.data.issuer.replace(/\/$/, '') !== issuer)
        throw new IssuerUnreachable('OIDC discovery names another issuer', retryAfterSeconds());
      jwksUri = metadata.data.jwks_uri;
    }
    const body = KeySetBody.safeParse(await ask('key set', jwksUri));
    if (!body.success) throw new IssuerUnreachable('OIDC key set answered no valid key set', retryAfterSeconds());
    const text = JSON.stringify(body.data.keys);
    if (text !== held?.text) generation += 1;
    const kids = new Set(body.data.keys.flatMap((k) => (k.kid === undefined ? [] : [k.kid])));
    for (const kid of held?.kids ?? []) if (!kids.has(kid)) withdrawn.add(kid);
    for (const kid of kids) withdrawn.delete(kid);
    held = {
      resolve: createLocalJWKSet(body.data as JSONWebKeySet),
      kids,
      text,
      fetchedAt: Date.now(),
      generation,
    };
  };
  /** One fetch at a time: requests that need the set meanwhile wait for the same answer. */
  const refresh = (budgeted = true) =>
    (fetching ??= fetchKeySet(budgeted).finally(() => {
      fetching = undefined;
    }));

  /** The set's key for a header; undefined when the set has none by that kid (or, without a kid, none for the algorithm). */
  const pick = async (set: KeySet, header: JWSHeaderParameters) => {
    if (header.kid !== undefined && !set.kids.has(header.kid)) return undefined;
    try {
      return { key: await set.resolve(header), generation: set.generation };
    } catch (error) {
      if (header.kid === undefined && error instanceof errors.JWKSNoMatchingKey) return undefined;
      throw error;
    }
  };

  const isOld = (set: KeySet) => Date.now() - set.fetchedAt > options.maxAgeMs;
  // Asking again cannot help for a key the issuer withdrew, nor when a set fetched well after the
  // token was issued lacks its key.
  const hopeless = (set: KeySet, header: JWSHeaderParameters, issuedAt: number | undefined) =>
    (header.kid !== undefined && withdrawn.has(header.kid)) ||
    (issuedAt !== undefined && set.fetchedAt > (issuedAt + options.clockToleranceSeconds) * 1000 + PUBLICATION_LAG_MS);

  return {
    /**
     * The key a token's header names, with the generation of the set it came from (a new
     * generation each time a changed set is fetched). `issuedAt` is the token's unverified `iat`.
     */
    async key(header: JWSHeaderParameters, issuedAt: number | undefined): Promise<{ key: CryptoKey; generation: number }> {
      const mustAsk = !held || isOld(held) || (!(await pick(held, header)) && !hopeless(held, header, issuedAt));
      const failure: unknown = mustAsk
        ? await refresh().then(
            () => undefined,
            (error: unknown) => error,
          )
        : undefined;
      // An old set keeps serving the keys it holds while the issuer cannot be asked.
      const found = held && (await pick(held, header));
      if (found) return found;
      const notPublished = new KeyNotPublished(`the issuer's key set holds no key ${header.kid ?? `for ${header.alg}`}`);
      throw failure && !(held && hopeless(held, header, issuedAt)) ? failure : notPublished;
    },
    /** Fetches discovery and the key set now (the start's readiness check); throws `IssuerUnreachable`. */
    fetch: () => refresh(false),
    /** Whether a token checked against the set of this generation still counts: the set is the latest, and young. */
    isCurrent: (checkedWith: number) => held !== undefined && checkedWith === generation && !isOld(held),
  };
}
