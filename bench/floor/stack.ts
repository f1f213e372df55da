// The stack's own floor for start-up and idle memory: Elysia with TypeBox schemas, a policy macro
// and a derive, drizzle over bun:sqlite, as many routes as the leader has (FLOOR_ROUTES), each with
// params or a query or a body and a response schema, and nothing behind them. Compiled with
// `bun build --compile --bytecode` like dist/svc. What the leader costs above this is its own.
import { Database } from 'bun:sqlite'
import { Elysia, t } from 'elysia'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { eq } from 'drizzle-orm'
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

const routes = Number(process.env.FLOOR_ROUTES ?? 137)
const sqlite = new Database(process.env.FLOOR_DB!, { create: true, strict: true })
sqlite.exec('PRAGMA journal_mode = WAL')
sqlite.exec('PRAGMA synchronous = NORMAL')

// About the leader's state file: 22 tables of 6-10 columns.
const tables = Array.from({ length: 22 }, (_, i) =>
  sqliteTable(`t${i}`, {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    owner: text('owner_id').notNull(),
    state: text('state', { enum: ['a', 'b', 'c'] }).notNull(),
    count: integer('count').notNull().default(0),
    flag: integer('flag', { mode: 'boolean' }).notNull().default(false),
    note: text('note'),
    createdAt: integer('created_at').notNull(),
  }),
)
for (const [i] of tables.entries()) sqlite.exec(`CREATE TABLE IF NOT EXISTS t${i} (id TEXT PRIMARY KEY, name TEXT NOT NULL, owner_id TEXT NOT NULL, state TEXT NOT NULL, count INTEGER NOT NULL DEFAULT 0, flag INTEGER NOT NULL DEFAULT 0, note TEXT, created_at INTEGER NOT NULL)`)
const db = drizzle(sqlite)
const first = tables[0]!

// Shared models, as the leader's route modules keep theirs.
const Id = t.String({ minLength: 1, maxLength: 64 })
const Item = t.Object({ id: Id, name: t.String(), state: t.Union([t.Literal('a'), t.Literal('b'), t.Literal('c')]), count: t.Integer({ minimum: 0 }), note: t.Nullable(t.String()), created_at: t.Integer() })
const List = t.Object({ items: t.Array(Item), next_cursor: t.Nullable(t.String()) })
const Params = t.Object({ id: Id })
const Query = t.Object({ limit: t.Optional(t.Integer({ minimum: 1, maximum: 500 })), cursor: t.Optional(t.String()), q: t.Optional(t.String({ maxLength: 200 })) })
const Body = t.Object({ name: t.String({ minLength: 1, maxLength: 100 }), note: t.Optional(t.Nullable(t.String({ maxLength: 2000 }))), flag: t.Optional(t.Boolean()), tags: t.Optional(t.Array(t.String(), { maxItems: 20 })) })

const app = new Elysia({ normalize: false })
  .derive({ as: 'global' }, ({ headers }) => ({ caller: headers.authorization ?? null }))
  .macro({ policy: (cls: string) => ({ beforeHandle: ({ caller }: { caller: string | null }) => (cls === 'public' || caller ? undefined : new Response(null, { status: 401 })) }) })

const item = (id: string) => ({ id, name: 'x', state: 'a' as const, count: 0, note: null, created_at: 0 })
for (let i = 0; i < routes; i++) {
  const path = `/api/v1/r${i}`
  switch (i % 4) {
    case 0:
      app.get(path, ({ query }) => ({ items: [], next_cursor: query.cursor ?? null }), { policy: 'session', query: Query, response: { 200: List } })
      break
    case 1:
      app.get(`${path}/:id`, ({ params }) => item(params.id), { policy: 'session', params: Params, response: { 200: Item } })
      break
    case 2:
      app.post(path, ({ body }) => item(body.name), { policy: 'session', body: Body, response: { 201: Item } })
      break
    default:
      app.patch(`${path}/:id`, ({ params }) => item(params.id), { policy: 'session', params: Params, body: t.Partial(Body), response: { 200: Item } })
  }
}

app
  .get('/ready', () => {
    db.select().from(first).where(eq(first.id, 'x')).all()
    return 'ready'
  }, { policy: 'public' })
  .listen({ hostname: '127.0.0.1', port: Number(process.env.FLOOR_PORT) })
