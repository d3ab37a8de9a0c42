import { describe, expect, it } from 'vitest';
import { SyncTourRequest } from '../../shared/schemas/tours.js';
import { generateDemoTours } from '../../server/integrations/erp/demoData.js';

describe('demo ERP tours', () => {
  it('generates the same tours for the same date', () => {
    expect(generateDemoTours('2026-03-10')).toEqual(generateDemoTours('2026-03-10'));
  });

  it('generates other tours for another date with document numbers of their own', () => {
    const monday = generateDemoTours('2026-03-09');
    const tuesday = generateDemoTours('2026-03-10');
    expect(tuesday).not.toEqual(monday);
    const numbers = (tours: SyncTourRequest[]) => tours.flatMap((t) => t.deliveries.map((d) => d.belegnummer));
    expect(numbers(tuesday).filter((n) => numbers(monday).includes(n))).toEqual([]);
  });

  it.each(['2026-01-01', '2026-03-29', '2026-07-15', '2027-12-31'])(
    'generates valid tours of 3 to 5 drivers with 10 to 30 deliveries for %s',
    (date) => {
      const tours = generateDemoTours(date);
      expect(tours.length).toBeGreaterThanOrEqual(3);
      expect(tours.length).toBeLessThanOrEqual(5);
      expect(tours.map((t) => t.driver.personalnummer)).toEqual([1001, 1002, 1003, 1004, 1005].slice(0, tours.length));
      for (const tour of tours) {
        expect(SyncTourRequest.parse(tour)).toEqual(tour);
        expect(tour.tourDate).toBe(date);
        expect(tour.deliveries.length).toBeGreaterThanOrEqual(10);
        expect(tour.deliveries.length).toBeLessThanOrEqual(30);
      }
      const all = tours.flatMap((t) => t.deliveries);
      expect(new Set(all.map((d) => d.belegnummer)).size).toBe(all.length);
      expect(new Set(all.map((d) => d.customer.erpCustomerId)).size).toBe(all.length);
    },
  );

  it('mixes scannable goods with non-scannable flat rates, payment codes, open amounts and contacts', () => {
    const deliveries = ['2026-03-09', '2026-03-10', '2026-03-11'].flatMap(generateDemoTours).flatMap((t) => t.deliveries);
    const positions = deliveries.flatMap((d) => d.positions);
    expect(positions.some((p) => p.article.name === 'Frachtpauschale' && !p.article.scannable)).toBe(true);
    expect(positions.filter((p) => p.article.scannable).length).toBeGreaterThan(positions.length / 2);
    expect(positions.some((p) => p.unitPriceCents === null)).toBe(true);
    expect(new Set(deliveries.map((d) => d.paymentMethodCode))).toEqual(new Set(['BAR', 'EC', 'RECHNUNG']));
    for (const d of deliveries) {
      expect(d.openAmountCents > 0).toBe(d.paymentMethodCode !== 'RECHNUNG');
      expect(d.deliveryAddress.postalCode).toMatch(/^\d{5}$/);
    }
    const channels = deliveries.flatMap((d) => d.contacts.flatMap((c) => c.channels.map((ch) => ch.kind)));
    expect(new Set(channels)).toEqual(new Set(['phone', 'mobile', 'email']));
    expect(deliveries.every((d) => d.contacts.some((c) => c.role === 'contact_person' && c.address === null))).toBe(true);
  });

  it('describes a customer the same way on every day', () => {
    const byId = new Map<number, unknown>();
    for (const date of ['2026-03-09', '2026-03-10', '2026-04-01']) {
      for (const d of generateDemoTours(date).flatMap((t) => t.deliveries)) {
        if (byId.has(d.customer.erpCustomerId)) expect(d.customer).toEqual(byId.get(d.customer.erpCustomerId));
        byId.set(d.customer.erpCustomerId, d.customer);
      }
    }
  });
});
