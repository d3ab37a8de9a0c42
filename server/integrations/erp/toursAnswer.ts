import { z } from 'zod';
import { SyncTourRequest } from '../../../shared/schemas/tours.js';
import { upstream } from '../../errors.js';
import type { ErpDay } from './gateway.js';

export const ToursAnswer = z.object({ tours: z.array(z.unknown()) });

const field = (value: unknown, ...path: (string | number)[]): unknown =>
  path.reduce<unknown>((at, key) => (at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined), value);

/** Who a tour of the answer belongs to, as far as it can be read: the driver's Personalnummer. */
function tourName(raw: unknown, index: number): string {
  const personalnummer = field(raw, 'driver', 'personalnummer');
  const date = field(raw, 'tourDate');
  const driver = typeof personalnummer === 'number' || typeof personalnummer === 'string' ? `driver ${personalnummer}` : 'no driver';
  return `tour ${index + 1} of the answer (${driver}${typeof date === 'string' ? `, ${date}` : ''})`;
}

/** One problem, with the document number when it lies inside a delivery, and the path below it. */
function problemOf(raw: unknown, issue: z.core.$ZodIssue): string {
  const [first, index, ...rest] = issue.path;
  if (first === 'deliveries' && typeof index === 'number') {
    const belegnummer = field(raw, 'deliveries', index, 'belegnummer');
    const belegartId = field(raw, 'deliveries', index, 'belegartId');
    const name = typeof belegnummer === 'string' ? `document ${belegartId ?? '?'}/${belegnummer}` : `delivery ${index + 1}`;
    return `${name}${rest.length ? ` ${rest.join('.')}` : ''}: ${issue.message}`;
  }
  return `${issue.path.join('.') || 'tour'}: ${issue.message}`;
}

/**
 * Each tour checked on its own: one that does not fit, or is of another day than asked for, is
 * refused, naming its driver and the document at fault; the others are imported. An answer none
 * of whose tours fits could not be read at all.
 */
export function toursOf(answer: unknown[], date: string): ErpDay {
  const day: ErpDay = { tours: [], refused: [] };
  answer.forEach((raw, i) => {
    const tour = SyncTourRequest.safeParse(raw);
    if (!tour.success)
      day.refused.push(
        `${tourName(raw, i)} does not fit the contract: ${tour.error.issues
          .slice(0, 3)
          .map((issue) => problemOf(raw, issue))
          .join('; ')}`,
      );
    else if (tour.data.tourDate !== date) day.refused.push(`${tourName(raw, i)} is of ${tour.data.tourDate}, not of ${date}`);
    else day.tours.push(tour.data);
  });
  if (day.tours.length === 0 && day.refused.length > 0) throw upstream(`ERP tours could not be read: ${day.refused.join('; ')}`);
  return day;
}
