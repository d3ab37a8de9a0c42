import { z } from 'zod';

/** The forms of value the settings take, shared by their groups. */
export const flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
export const optionalText = z.string().trim().min(1).optional();
export const postgresUrl = z
  .string()
  .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
  .optional();
export const list = (v: string) =>
  v
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

function isHttpUrl(value: string) {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

export const httpUrl = z.string().refine(isHttpUrl, 'must be an http(s) URL').optional();
