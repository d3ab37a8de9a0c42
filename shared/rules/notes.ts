const filled = (value: string | null | undefined) => typeof value === 'string' && value.trim().length > 0;

/** A note needs text or an image reference with content after trimming. */
export const noteHasContent = (note: { text?: string | null; imageAttachment?: string | null }) =>
  filled(note.text) || filled(note.imageAttachment);
