import type { Address, ContactKind, ContactRole } from '../schemas/common.js';
import { contactRoles } from '../schemas/common.js';

export interface ContactInput {
  role: ContactRole;
  anrede?: string | null;
  titel?: string | null;
  name1?: string | null;
  name2?: string | null;
  name3?: string | null;
  abteilung?: string | null;
  funktion?: string | null;
  address?: Address | null;
  channels?: { kind: ContactKind; position: number; value: string }[];
}

export interface MergedChannel {
  kind: ContactKind;
  position: number;
  value: string;
}

export interface MergedContact {
  role: ContactRole;
  roles: ContactRole[];
  /** 1-based order of the entry's first appearance in the ERP's list. */
  position: number;
  anrede: string | null;
  titel: string | null;
  name1: string | null;
  name2: string | null;
  name3: string | null;
  abteilung: string | null;
  funktion: string | null;
  address: Address | null;
  channels: MergedChannel[];
}

const nameFields = ['anrede', 'titel', 'name1', 'name2', 'name3', 'abteilung', 'funktion'] as const;
const kindOrder: ContactKind[] = ['phone', 'mobile', 'email', 'web'];

const text = (value: string | null | undefined) => (value?.trim() ? value.trim() : null);

/** Trimmed; none when the record holds neither street nor city (a pure contact person). */
function normalAddress(address: Address | null | undefined): Address | null {
  if (!address || (!address.street.trim() && !address.city.trim())) return null;
  return {
    street: address.street.trim(),
    houseNumber: address.houseNumber.trim(),
    postalCode: address.postalCode.trim(),
    city: address.city.trim(),
    country: address.country.trim(),
    addition: text(address.addition),
  };
}

// Formatting differences ("030 1234" vs "0301234", upper-case mail) do not make another channel.
function channelKey(kind: ContactKind, value: string) {
  const compact = value.replace(/\s+/g, '');
  return `${kind}:${kind === 'email' || kind === 'web' ? compact.toLowerCase() : compact}`;
}

/**
 * The contract's merge rule: ERP address records equal in every name field and in the address
 * are one contact that keeps all the roles it stood for; the same name at another address stays
 * separate. Channels are merged without duplicates and numbered per kind in ERP order.
 */
export function mergeContacts(contacts: ContactInput[]): MergedContact[] {
  const entries = new Map<string, { contact: MergedContact; seen: Set<string>; channels: MergedChannel[] }>();
  for (const contact of contacts) {
    const names = Object.fromEntries(nameFields.map((f) => [f, text(contact[f])])) as Record<(typeof nameFields)[number], string | null>;
    const address = normalAddress(contact.address);
    const key = JSON.stringify([...nameFields.map((f) => names[f]), address && Object.values(address)]);
    let entry = entries.get(key);
    if (!entry) {
      entry = {
        contact: { role: contact.role, roles: [], position: entries.size + 1, ...names, address, channels: [] },
        seen: new Set(),
        channels: [],
      };
      entries.set(key, entry);
    }
    if (!entry.contact.roles.includes(contact.role)) entry.contact.roles.push(contact.role);
    const ordered = [...(contact.channels ?? [])].sort((a, b) => a.position - b.position);
    for (const channel of ordered) {
      const value = channel.value.trim();
      const k = channelKey(channel.kind, value);
      if (!value || entry.seen.has(k)) continue;
      entry.seen.add(k);
      entry.channels.push({ kind: channel.kind, position: 0, value });
    }
  }
  return [...entries.values()].map(({ contact, channels }) => {
    const roles = contactRoles.filter((r) => contact.roles.includes(r));
    const numbered = kindOrder.flatMap((kind) => channels.filter((c) => c.kind === kind).map((c, i) => ({ ...c, position: i + 1 })));
    return { ...contact, roles, role: roles[0], channels: numbered };
  });
}
