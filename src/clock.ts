// Time as a dependency: loops, windows, lockouts and liveness read the clock they are given,
// so tests move a fake clock instead of sleeping.
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

export class FakeClock implements Clock {
  constructor(private t = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t
  }
  advance(ms: number): void {
    this.t += ms
  }
  set(ms: number): void {
    this.t = ms
  }
}
