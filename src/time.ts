export const iso = (ms: number): string => new Date(ms).toISOString()
export const isoOrNull = (ms: number | null | undefined): string | null => (ms == null ? null : iso(ms))
export const HOUR_MS = 3_600_000
export const DAY_MS = 24 * HOUR_MS
