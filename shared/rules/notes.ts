const filled = (value: string | null | undefined) => typeof value === 'string' && value.trim().length > 0;

/** A note needs text or an image reference with content after trimming. */
export const noteHasContent = (note: { text?: string | null; imageAttachment?: string | null }) =>
  filled(note.text) || filled(note.imageAttachment);

/** The longest note text, in UTF-16 units as the schemas count. */
export const NOTE_TEXT_MAX = 5000;

/** A note's text as stored: blank means none; otherwise kept as written. */
export const noteText = (text: string | null | undefined): string | null => (text?.trim() ? text : null);

/** A note's image reference as stored: trimmed; blank means none. */
export const noteImageReference = (reference: string | null | undefined): string | null => reference?.trim() || null;

/**
 * Unremoving a line takes its credit back, and the credit note that gave the reason for the
 * credit goes with it.
 */
export const goesWithUnremove = (note: { creditDeliveryItemId?: string | null }, deliveryItemId: string): boolean =>
  note.creditDeliveryItemId === deliveryItemId;

/** The longest internal note of a completion, in characters as people count them (an emoji is one). */
export const INTERNAL_NOTE_MAX = 2000;

/** The internal note as a completion keeps it: trimmed, blank means none; undefined when it is too long. */
export function internalNote(value: string | null | undefined): string | null | undefined {
  const trimmed = value?.trim() ?? '';
  if (!trimmed) return null;
  return [...trimmed].length > INTERNAL_NOTE_MAX ? undefined : trimmed;
}
