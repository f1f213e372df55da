// The page routes (./paths.ts, with their policies), answered by ./handlers.tsx, which loads with
// the first page asked for (./load.ts). The JSON API does the real work; pages render its shell.
import type { AppBase } from '../http/base'
import type { Ctx } from '../context'
import type { PageRequestOf } from './handlers'
import { pagesModule } from './load'
import { PAGES, type PagePath } from './paths'

export function pageRoutes(app: AppBase, ctx: Ctx): void {
  let handlers: ReturnType<typeof import('./handlers').pageHandlers> | null = null
  const answer = async (path: PagePath, r: PageRequestOf) => {
    handlers ??= (await pagesModule()).pageHandlers(ctx)
    // Elysia has checked the route: its params are the path's.
    return (handlers[path] as (r: PageRequestOf) => unknown)(r)
  }
  for (const [path, policy] of PAGES) app.get(path, (r) => answer(path, r as unknown as PageRequestOf), { policy })
}
