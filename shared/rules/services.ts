import type { ServiceKind } from '../schemas/masterData.js';

/** Exactly the value matching the kind is set, and a numeric value lies within the limits. Returns the problem. */
export function serviceValueProblem(
  service: { kind: ServiceKind; minValue: number | null; maxValue: number | null },
  value: { boolValue?: boolean | null; numericValue?: number | null },
): { path: string; message: string } | null {
  const hasBool = value.boolValue !== undefined && value.boolValue !== null;
  const hasNumber = value.numericValue !== undefined && value.numericValue !== null;
  if (service.kind === 'boolean') {
    if (!hasBool || hasNumber) return { path: 'boolValue', message: 'a boolean service takes exactly boolValue' };
    return null;
  }
  if (!hasNumber || hasBool) return { path: 'numericValue', message: 'a numeric service takes exactly numericValue' };
  const n = value.numericValue!;
  if (service.minValue !== null && n < service.minValue) return { path: 'numericValue', message: `must be >= ${service.minValue}` };
  if (service.maxValue !== null && n > service.maxValue) return { path: 'numericValue', message: `must be <= ${service.maxValue}` };
  return null;
}

/** A service value has no id of its own; its changes in the feed go under this one. */
export const serviceValueChangeId = (value: { deliveryId: string; serviceId: string }) => `${value.deliveryId}:${value.serviceId}`;
