import { useState } from 'react';

/** A reason the driver must give, with suggestions to tap, then the action's button. */
export function ReasonForm({ label, suggestions, onSubmit }: { label: string; suggestions: string[]; onSubmit: (reason: string) => void }) {
  const [reason, setReason] = useState('');
  return (
    <form
      className="reason"
      onSubmit={(e) => {
        e.preventDefault();
        if (reason.trim()) onSubmit(reason.trim());
      }}
    >
      <div className="row wrap">
        {suggestions.map((s) => (
          <button key={s} type="button" className="small" onClick={() => setReason(s)}>
            {s}
          </button>
        ))}
      </div>
      <input aria-label={`Grund: ${label}`} placeholder="Grund" value={reason} onChange={(e) => setReason(e.target.value)} />
      <button type="submit" disabled={!reason.trim()}>
        {label}
      </button>
    </form>
  );
}
