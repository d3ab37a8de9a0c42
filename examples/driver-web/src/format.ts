const money = new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' });
const time = new Intl.DateTimeFormat('de-DE', { hour: '2-digit', minute: '2-digit', second: '2-digit' });

export const euro = (cents: number) => money.format(cents / 100);
export const clock = (at: number) => time.format(new Date(at));

/** `YYYY-MM-DD` of the device's local day, `days` from today. */
export function localDate(days = 0): string {
  const date = new Date();
  date.setDate(date.getDate() + days);
  return `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}-${String(date.getDate()).padStart(2, '0')}`;
}

/** The driver's words for an action, in the status bar's list of refused actions. */
export const actionLabels: Record<string, string> = {
  scan: 'Scan',
  'delivery.hold': 'Zurückstellen',
  'delivery.resume': 'Fortsetzen',
  'delivery.cancel': 'Stornieren',
  'delivery.assignCar': 'Fahrzeug',
  'delivery.complete': 'Abschluss',
  credit: 'Gutschrift',
  payment: 'Kassieren',
  'note.create': 'Notiz',
  'note.update': 'Notiz',
  'note.delete': 'Notiz löschen',
  'note.image': 'Foto-Notiz',
  'service.set': 'Leistung',
  'service.clear': 'Leistung',
};

export const deliveryStates: Record<string, string> = {
  active: 'offen',
  held: 'zurückgestellt',
  canceled: 'storniert',
  completed: 'zugestellt',
};
