// The audit log: auth events and admin actions, each with the caller's client IP.
import { auditLog } from '../db/schema'
import { newId } from '../crypto'
import type { Db } from '../db/client'
import type { Clock } from '../clock'

export interface AuditEntry {
  kind: string
  actorUserId?: string | null
  clientIp?: string | null
  targetType?: string | null
  targetId?: string | null
  detail?: Record<string, unknown>
}

export function recordAudit(db: Db, clock: Clock, e: AuditEntry): void {
  db.insert(auditLog)
    .values({
      id: newId(),
      ts: clock.now(),
      kind: e.kind,
      actorUserId: e.actorUserId ?? null,
      clientIp: e.clientIp ?? null,
      targetType: e.targetType ?? null,
      targetId: e.targetId ?? null,
      detail: e.detail === undefined ? null : JSON.stringify(e.detail),
    })
    .run()
}
