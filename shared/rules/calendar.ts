const berlinDay = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Berlin', year: 'numeric', month: '2-digit', day: '2-digit' });

/** The Europe/Berlin calendar day of an instant, `YYYY-MM-DD`. */
export function berlinDate(instant: Date): string {
  return berlinDay.format(instant);
}

/** A calendar day moved by whole days (`2026-03-31` + 1 = `2026-04-01`). */
export function addDays(isoDate: string, days: number): string {
  const [y, m, d] = isoDate.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}
