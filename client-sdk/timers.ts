type Timer = ReturnType<typeof setTimeout> | undefined;

/** Clears a timer that may not be set: Hermes refuses `clearTimeout(undefined)`. */
export function clearTimer(timer: Timer): undefined {
  if (timer !== undefined) clearTimeout(timer);
  return undefined;
}
