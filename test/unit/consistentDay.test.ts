import { describe, expect, it } from 'vitest';
import { consistentDay } from '../../server/integrations/erp/consistentDay.js';
import { SyncTourRequest } from '../../shared/schemas/tours.js';
import { copy, tourPayload } from '../helpers/tourPayloads.js';

const tour = (personalnummer: number, deliveries = 1) =>
  SyncTourRequest.parse(tourPayload(personalnummer, { date: '2026-12-02', deliveries }));

describe('consistentDay', () => {
  it('leaves a day that agrees with itself as it is', () => {
    const day = [tour(1), tour(2)];
    expect(consistentDay(copy(day))).toEqual({ tours: day, conflicts: [] });
  });

  it('describes every article, customer and warehouse of the day as its last mention does', () => {
    const [a, b] = [tour(1), tour(2)];
    const lagerB = { code: 'T-HL', name: 'Lager B' };
    for (const p of b.deliveries[0].positions) {
      p.warehouse = lagerB;
      p.article = { ...p.article, defaultWarehouse: lagerB };
    }
    const article = b.deliveries[0].positions[0].article;
    b.deliveries[0].positions[0].article = { ...article, name: 'Beta', scannable: false };
    b.deliveries[0].customer = { ...a.deliveries[0].customer, name: 'Kunde B' };
    const { tours, conflicts } = consistentDay([a, b]);
    const firstLine = tours[0].deliveries[0].positions[0];
    expect(firstLine.article).toEqual({ ...article, name: 'Beta', scannable: false });
    expect(tours[0].deliveries[0].customer.name).toBe('Kunde B');
    expect(tours.flatMap((t) => t.deliveries.flatMap((d) => d.positions.map((p) => p.warehouse?.name)))).toEqual(Array(4).fill('Lager B'));
    expect(conflicts.sort()).toEqual(
      [
        `article ${article.articleNumber} is described differently`,
        `customer ${a.deliveries[0].customer.erpCustomerId} is described differently`,
        'warehouse T-HL is described differently',
      ].sort(),
    );
  });

  it('keeps a document listed in two tours in the first one only', () => {
    const [a, b] = [tour(1, 2), tour(2, 1)];
    b.deliveries.push(copy(a.deliveries[1]));
    const { tours, conflicts } = consistentDay([a, b]);
    expect(tours.map((t) => t.deliveries.map((d) => d.belegnummer))).toEqual([
      a.deliveries.map((d) => d.belegnummer),
      [b.deliveries[0].belegnummer],
    ]);
    expect(conflicts).toEqual([`document 20/${a.deliveries[1].belegnummer} is listed more than once; its first listing counts`]);
  });

  it('makes the tours of one driver and date one tour with every document once and the last name', () => {
    const [first, other, second] = [tour(1, 2), tour(2), tour(1, 1)];
    first.name = 'Tour Nord';
    second.name = 'Tour Nord-Ost';
    second.deliveries.push(copy(first.deliveries[0]));
    const { tours, conflicts } = consistentDay([first, other, second]);
    expect(tours.map((t) => [t.driver.personalnummer, t.name])).toEqual([
      [1, 'Tour Nord-Ost'],
      [2, other.name],
    ]);
    expect(tours[0].deliveries.map((d) => d.belegnummer)).toEqual([...first.deliveries, second.deliveries[0]].map((d) => d.belegnummer));
    expect(conflicts).toEqual([
      'the tour of driver 1 on 2026-12-02 is listed more than once; its lists go together',
      `document 20/${first.deliveries[0].belegnummer} is listed more than once; its first listing counts`,
    ]);
  });
});
