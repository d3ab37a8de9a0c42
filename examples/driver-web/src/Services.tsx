import type { DeliveryDetails, Service } from '@tourline/client';
import { useTourlineClient } from '@tourline/client/react';

/** "Leistungen": the service values of a stop (yes/no, or a number within the service's bounds). */
export function Services({ delivery }: { delivery: DeliveryDetails }) {
  const client = useTourlineClient();
  const services = Object.values(client.state.master.services)
    .filter((s) => s.active)
    .sort((a, b) => (a.sortOrder ?? 0) - (b.sortOrder ?? 0) || a.name.localeCompare(b.name));
  if (services.length === 0) return null;
  const valueOf = (s: Service) => delivery.serviceValues.find((v) => v.serviceId === s.id);
  return (
    <section className="services">
      <h2>Leistungen</h2>
      {services.map((s) =>
        s.kind === 'boolean' ? (
          <label key={s.id} className="check">
            <input
              type="checkbox"
              checked={valueOf(s)?.boolValue ?? false}
              onChange={(e) => void client.setServiceValue(delivery.id, s.id, { boolValue: e.target.checked })}
            />
            {s.name}
          </label>
        ) : (
          <label key={s.id} className="number">
            {s.name}
            <input
              type="number"
              inputMode="numeric"
              min={s.minValue ?? undefined}
              max={s.maxValue ?? undefined}
              defaultValue={valueOf(s)?.numericValue ?? ''}
              onBlur={(e) => {
                const value = e.target.value === '' ? null : Number(e.target.value);
                if (value === (valueOf(s)?.numericValue ?? null)) return;
                void (value === null
                  ? client.clearServiceValue(delivery.id, s.id)
                  : client.setServiceValue(delivery.id, s.id, { numericValue: value }));
              }}
            />
          </label>
        ),
      )}
    </section>
  );
}
