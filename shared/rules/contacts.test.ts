import { describe, expect, it } from 'vitest';
import type { Address } from '../schemas/common.js';
import { mergeContacts, type ContactInput } from './contacts.js';

const shop: Address = { street: 'Hauptstraße', houseNumber: '12', postalCode: '10115', city: 'Berlin', country: 'DE', addition: null };
const depot: Address = { ...shop, street: 'Lagerweg', houseNumber: '3' };

const contact = (overrides: Partial<ContactInput>): ContactInput => ({
  role: 'header',
  name1: 'Bäckerei Schulz GmbH',
  address: shop,
  channels: [],
  ...overrides,
});

describe('mergeContacts', () => {
  it('merges records equal in every name field and the address into one entry with all roles', () => {
    const merged = mergeContacts([contact({ role: 'delivery' }), contact({ role: 'header' }), contact({ role: 'billing' })]);
    expect(merged).toHaveLength(1);
    expect(merged[0].roles).toEqual(['header', 'delivery', 'billing']);
    expect(merged[0].role).toBe('header');
    expect(merged[0].position).toBe(1);
  });

  it('keeps the same name at another address as a separate entry', () => {
    const merged = mergeContacts([contact({ role: 'header' }), contact({ role: 'delivery', address: depot })]);
    expect(merged.map((c) => [c.role, c.address?.street])).toEqual([
      ['header', 'Hauptstraße'],
      ['delivery', 'Lagerweg'],
    ]);
  });

  it('keeps records apart that differ in one name field', () => {
    const merged = mergeContacts([contact({ role: 'header' }), contact({ role: 'billing', name2: 'Buchhaltung' })]);
    expect(merged).toHaveLength(2);
  });

  it('treats a missing address as its own value, not as equal to an address', () => {
    const merged = mergeContacts([
      contact({ role: 'contact_person', name1: 'Anna Schulz', address: null }),
      contact({ role: 'customer_master', name1: 'Anna Schulz', address: undefined }),
      contact({ role: 'delivery', name1: 'Anna Schulz' }),
    ]);
    expect(merged.map((c) => c.roles)).toEqual([['contact_person', 'customer_master'], ['delivery']]);
  });

  it('takes an address with neither street nor city as none, as the spec asks', () => {
    const blank = { ...shop, street: ' ', city: '', houseNumber: '', postalCode: '10115' };
    const merged = mergeContacts([
      contact({ role: 'contact_person', address: blank }),
      contact({ role: 'billing', address: null }),
      contact({ role: 'header', address: { ...shop, street: '' } }),
    ]);
    expect(merged.map((c) => [c.roles, c.address?.city ?? null])).toEqual([
      [['billing', 'contact_person'], null],
      [['header'], 'Berlin'],
    ]);
  });

  it('ignores outer spaces and treats empty names like missing ones', () => {
    const merged = mergeContacts([
      contact({ role: 'header', name2: '' }),
      contact({ role: 'delivery', name1: '  Bäckerei Schulz GmbH ', name2: null, address: { ...shop, addition: '  ' } }),
    ]);
    expect(merged).toHaveLength(1);
    expect(merged[0].name2).toBeNull();
  });

  it('merges channels without duplicates and numbers them per kind in ERP order', () => {
    const merged = mergeContacts([
      contact({
        role: 'header',
        channels: [
          { kind: 'phone', position: 2, value: '030 222' },
          { kind: 'phone', position: 1, value: '030 111' },
          { kind: 'email', position: 1, value: 'info@schulz.de' },
        ],
      }),
      contact({
        role: 'delivery',
        channels: [
          { kind: 'phone', position: 1, value: '030111' },
          { kind: 'phone', position: 2, value: '030 333' },
          { kind: 'email', position: 1, value: 'INFO@schulz.de' },
          { kind: 'mobile', position: 1, value: '0171 555' },
        ],
      }),
    ]);
    expect(merged[0].channels).toEqual([
      { kind: 'phone', position: 1, value: '030 111' },
      { kind: 'phone', position: 2, value: '030 222' },
      { kind: 'phone', position: 3, value: '030 333' },
      { kind: 'mobile', position: 1, value: '0171 555' },
      { kind: 'email', position: 1, value: 'info@schulz.de' },
    ]);
  });

  it('orders entries by their first appearance in the ERP list', () => {
    const merged = mergeContacts([
      contact({ role: 'contact_person', name1: 'Anna Schulz', address: null }),
      contact({ role: 'header' }),
      contact({ role: 'delivery' }),
    ]);
    expect(merged.map((c) => [c.position, c.role])).toEqual([
      [1, 'contact_person'],
      [2, 'header'],
    ]);
  });

  it('returns nothing for no contacts', () => {
    expect(mergeContacts([])).toEqual([]);
  });
});
