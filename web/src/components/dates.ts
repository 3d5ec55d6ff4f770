/** An RFC 3339 time as a Date; undefined when empty or not a time (Ago would throw on it). */
export function dateOf(s: string | undefined): Date | undefined {
  if (!s) return undefined;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? undefined : d;
}
