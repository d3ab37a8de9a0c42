import { useState } from 'react';
import type { DeliveryDetails } from '@tourline/client';
import { useTourlineClient } from '@tourline/client/react';

/** The stop's notes, and a new one: text, a photo from the camera, or both. */
export function Notes({ delivery }: { delivery: DeliveryDetails }) {
  const client = useTourlineClient();
  const [text, setText] = useState('');
  const [photo, setPhoto] = useState<File | null>(null);
  const [input, setInput] = useState(0); // a new file input after saving, so the same photo can be taken again

  const save = async () => {
    if (photo)
      await client.createImageNote(delivery.id, { image: photo, contentType: photo.type || 'image/jpeg', text: text.trim() || null });
    else if (text.trim()) await client.createNote(delivery.id, { text: text.trim() });
    setText('');
    setPhoto(null);
    setInput(input + 1);
  };

  return (
    <section className="notes">
      <h2>Notizen</h2>
      <ul className="list">
        {delivery.notes.map((n) => (
          <li key={n.id} className="note">
            <span className="text">{n.text ?? ''}</span>
            {n.imageAttachment ? <span className="badge">Foto</span> : null}
            {delivery.state === 'active' && !n.isAmountCreditNote && (
              <button type="button" className="small" onClick={() => void client.deleteNote(delivery.id, n.id)}>
                Löschen
              </button>
            )}
          </li>
        ))}
      </ul>
      {(delivery.state === 'active' || delivery.state === 'held') && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <textarea aria-label="Notiz" placeholder="Notiz" rows={2} value={text} onChange={(e) => setText(e.target.value)} />
          <label className="file">
            {photo ? `Foto: ${photo.name}` : 'Foto aufnehmen'}
            <input key={input} type="file" accept="image/*" capture="environment" onChange={(e) => setPhoto(e.target.files?.[0] ?? null)} />
          </label>
          <button type="submit" disabled={!photo && !text.trim()}>
            Notiz speichern
          </button>
        </form>
      )}
    </section>
  );
}
