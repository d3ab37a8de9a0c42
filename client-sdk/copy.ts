/** A deep copy of plain data (what JSON holds), for engines without a structured clone. */
export function deepCopy<T>(value: T): T {
  if (Array.isArray(value)) return value.map(deepCopy) as T;
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = deepCopy((value as Record<string, unknown>)[key]);
  return copy as T;
}
