import { z } from 'zod';

/**
 * Any 8-4-4-4-12 hex id, as PostgreSQL's uuid type takes it: an id of no RFC version is not
 * malformed, just unknown (404). Lower case, as the database answers it, so ids compare as strings.
 */
export const Uuid = z.guid().overwrite((id) => id.toLowerCase());

/**
 * An ERP key (document number, article number, warehouse code): unique in the database, so of a
 * length it can index; a longer one is merely unknown to the lookups.
 */
export const ErpKey = z.string().trim().min(1).max(100);

/** A real calendar date `YYYY-MM-DD` (2026-02-30 is refused). */
export const IsoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected YYYY-MM-DD')
  .refine(isRealDate, 'not a calendar date');

const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

/** ISO 8601 with a time zone, an instant of the years 0001 to 9999 in UTC (PostgreSQL knows no year 0). */
export const Timestamp = z.iso
  .datetime({ offset: true })
  .refine((value) => Date.parse(value) >= EARLIEST && Date.parse(value) <= LATEST, 'must lie in the years 0001 to 9999 (UTC)');

/** A calendar day `YYYY-MM-DD` that exists, from year 0001 on. */
export function isRealDate(value: string): boolean {
  const [y, m, d] = value.split('-').map(Number);
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, takes years below 100 as they are.
  date.setUTCFullYear(y, m - 1, d);
  return y >= 1 && date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** Text that must carry content: trimmed, at least one character. */
export const RequiredText = z.string().trim().min(1, 'must not be empty');

/** Text the ERP sends: generous, but bounded, so that no value can outgrow what the database indexes. */
export const ErpText = z.string().max(500);

export const Address = z
  .object({
    street: ErpText.describe('Street name'),
    houseNumber: ErpText.describe('House number with any letter (12a)'),
    postalCode: ErpText.describe('Postal code'),
    city: ErpText.describe('City'),
    country: ErpText.describe("Country name from the ERP's country master; empty when the ERP has none"),
    addition: ErpText.nullable()
      .describe('Free addition (district, floor, entrance); null or blank: none')
      .default(null)
      .overwrite((v) => (v?.trim() ? v : null)),
  })
  .meta({ id: 'Address' });
export type Address = z.output<typeof Address>;

export const contactRoles = ['header', 'delivery', 'billing', 'contact_person', 'customer_master'] as const;
export const ContactRole = z.enum(contactRoles);
export type ContactRole = z.infer<typeof ContactRole>;

export const ContactKind = z.enum(['phone', 'mobile', 'email', 'web']);
export type ContactKind = z.infer<typeof ContactKind>;

export const errorCodes = [
  'validation',
  'invalid_state_transition',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'client_too_old',
  'upstream_unavailable',
  'internal',
] as const;
export const ErrorCode = z.enum(errorCodes);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: ErrorCode,
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    /** With `client_too_old`: the oldest SDK release the service serves. */
    minimumVersion: z.string().optional(),
  })
  .meta({ id: 'Problem' });
export type Problem = z.infer<typeof Problem>;

/**
 * How a path or query value that arrives as text is documented: as what it means (an integer, a
 * boolean), not as the text that is checked. The checking pattern or list is left out of the
 * description; the JSON Schema drops the undefined keys.
 */
export const textParameter = (meaning: Record<string, unknown>) => ({ pattern: undefined, enum: undefined, ...meaning });

export const INT32_MAX = 2_147_483_647;

/** An ERP number (Personalnummer, customer number): int64 in the interface, kept within JavaScript's safe integers. */
export const ErpNumber = z.number().int().meta({ format: 'int64' });

/** A query integer: digits only, within bounds, with a default when absent. */
export const queryInt = (fallback: number, min: number, max: number, what: string) =>
  z
    .string()
    .regex(/^\d{1,10}$/, `must be an integer between ${min} and ${max}`)
    .optional()
    .transform((v) => (v === undefined ? fallback : Number(v)))
    .pipe(
      z.number().int().min(min, `must be an integer between ${min} and ${max}`).max(max, `must be an integer between ${min} and ${max}`),
    )
    .meta(textParameter({ type: 'integer', format: 'int32', minimum: min, maximum: max, description: `${what} (default ${fallback})` }));

/** Query flag: `true`/`false` in any case, `1`/`0`; anything else is a validation error. */
export const QueryBoolean = z
  .string()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0']))
  .optional()
  .transform((v) => v === 'true' || v === '1')
  .meta(textParameter({ type: 'boolean', description: 'true or 1; false or 0, in any case (default false)' }));
