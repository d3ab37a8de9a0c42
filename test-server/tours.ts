import { berlinDate } from '../shared/rules/calendar.js';
import type { SyncTourInput } from '../shared/schemas/tours.js';
import { generateDemoTours } from '../server/integrations/erp/demoData.js';

export interface DemoTourOptions {
  /** The tour's day, `YYYY-MM-DD`; default today in Berlin. */
  date?: string;
  /** Which of the day's demo tours (0 to 2; every day has at least three). */
  index?: number;
  /** Drive it as this driver instead of the demo's; the deliveries' numbers then carry the driver's. */
  driver?: { personalnummer: number; name?: string };
  /** Keep only the first this many deliveries. */
  deliveries?: number;
}

/**
 * One of the demo ERP's tours, in the `POST /sync/tour` shape: the same options give the same
 * tour, with customers, contacts, scannable goods and service lines as the demo service shows them.
 */
export function demoTour(options: DemoTourOptions = {}): SyncTourInput {
  const tours = generateDemoTours(options.date ?? berlinDate(new Date()));
  const tour = tours[(options.index ?? 0) % tours.length];
  const driver = options.driver;
  const deliveries = tour.deliveries
    .slice(0, options.deliveries ?? tour.deliveries.length)
    .map((d) => (driver ? { ...d, belegnummer: `${d.belegnummer}-${driver.personalnummer}` } : d));
  return {
    ...tour,
    driver: driver ? { personalnummer: driver.personalnummer, name: driver.name ?? `Fahrer ${driver.personalnummer}` } : tour.driver,
    deliveries,
  };
}
