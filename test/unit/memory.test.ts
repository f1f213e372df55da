// dropStartupCode: a second after the start, JavaScriptCore drops the compiled code of everything
// that ran, so code that ran once at start-up does not stay resident.
import { expect, test } from 'bun:test'
import { numberOfDFGCompiles } from 'bun:jsc'
import { dropStartupCode } from '../../src/memory'
import { until } from '../helpers/until'

/** A function JavaScriptCore has optimized (DFG-compiled). */
async function optimizedFunction() {
  const hot = (n: number) => {
    let s = 0
    for (let i = 0; i < n; i++) s = (s + i * 7) % 1_000_003
    return s
  }
  await until(() => {
    for (let i = 0; i < 200; i++) hot(1000)
    return numberOfDFGCompiles(hot) > 0 ? true : null
  }, 'the function to be optimized', { timeoutMs: 20_000, everyMs: 1 })
  return hot
}

const codeDropped = (f: (...args: never[]) => unknown) =>
  until(() => (numberOfDFGCompiles(f) === 0 ? true : null), 'its optimized code to be dropped', { timeoutMs: 10_000, everyMs: 20 })

test('compiled code is dropped once the process is idle; the function still runs', async () => {
  const hot = await optimizedFunction()
  const expected = hot(1000)
  let released = 0
  dropStartupCode({ everyMs: 50, release: () => released++ })
  await codeDropped(hot)
  expect(released).toBe(1)
  expect(hot(1000)).toBe(expected)
  await Bun.sleep(200) // four more checks' worth: the drop happens once
  expect(released).toBe(1)
})

test('a cancelled drop does nothing, even at a quiet moment', async () => {
  let released = 0
  const cancel = dropStartupCode({ everyMs: 20, release: () => released++ })
  cancel()
  await Bun.sleep(100) // five checks' worth
  expect(released).toBe(0)
})

test('a release that throws does not stop the drop', async () => {
  const hot = await optimizedFunction()
  dropStartupCode({ everyMs: 50, release: () => { throw new Error('state file closed') } })
  await codeDropped(hot)
})
