// /pools/{id}: live nodes, the pool's join command, jobs, models, members; owner edit and delete.
import { escapeHtml } from '@kitajs/html'
import { Layout, Notice, Table, type PageCtx } from './layout'
import type { Pool } from '../src/pools/model'

export interface PoolPageProps {
  ctx: PageCtx
  pool: Pool
  /** Owner or admin: may invite, edit and delete. */
  canManage: boolean
  isMember: boolean
  allowedVisibilities: string[]
}


function Manage(props: PoolPageProps) {
  const p = props.pool
  const admin = props.ctx.user?.role === 'admin'
  return (
    <>
      <section class="card" aria-labelledby="invite-title">
        <h2 id="invite-title">Invite someone</h2>
        <form id="invite-form" method="post">
          <label for="invite-email">Email address</label>
          <input id="invite-email" name="email" type="email" required maxlength="254" />
          <div class="actions">
            <button type="submit">Send invitation</button>
          </div>
          <Notice id="invite-form-msg" />
        </form>
        <div id="invite-link-box" hidden>
          <label for="invite-link">Invitation link: it works only for the account with the invited address</label>
          <input id="invite-link" type="text" readonly />
          <div class="actions">
            <button type="button" class="small" data-copy="invite-link" data-copy-status="invite-link-msg">Copy link</button>
          </div>
          <Notice id="invite-link-msg" />
        </div>
        <h3>Join requests</h3>
        <div id="requests">
          <p class="empty">Loading…</p>
        </div>
      </section>
      <section class="card" aria-labelledby="edit-title">
        <h2 id="edit-title">Edit pool</h2>
        <form id="edit-form" method="post">
          <label for="edit-name">Name</label>
          <input id="edit-name" name="name" type="text" required maxlength="100" value={escapeHtml(p.name)} />
          <label for="edit-description">Description</label>
          <input id="edit-description" name="description" type="text" maxlength="2000" value={escapeHtml(p.description)} />
          <label for="edit-visibility">Visibility</label>
          <select id="edit-visibility" name="visibility">
            {props.allowedVisibilities.map((v) => (
              <option value={v} selected={v === p.visibility} safe>{v}</option>
            ))}
          </select>
          <label class="check">
            <input type="checkbox" name="open_join" checked={p.open_join} /> Anyone may join (public pools) without approval
          </label>
          {admin ? (
            <>
              <label for="edit-limit">Node limit (empty: unlimited)</label>
              <input id="edit-limit" name="node_limit" type="number" min="0" value={p.node_limit === null ? '' : String(p.node_limit)} />
            </>
          ) : (
            ''
          )}
          <div class="actions">
            <button type="submit">Save changes</button>
          </div>
          <Notice id="edit-msg" />
        </form>
      </section>
      <section class="card" aria-labelledby="delete-title">
        <h2 id="delete-title">Delete pool</h2>
        <p>Deleting the pool removes its memberships and invitations. Attached machines are detached.</p>
        <button type="button" class="danger" id="delete-pool">Delete this pool</button>
        <Notice id="delete-msg" />
      </section>
    </>
  )
}

export function PoolPage(props: PoolPageProps) {
  const p = props.pool
  const canJoinCmd = props.isMember || props.ctx.user?.role === 'admin'
  return (
    <Layout
      ctx={props.ctx}
      title={p.name}
      script={['pool.js', 'pool-manage.js']}
      data={{ 'pool-id': p.id, 'can-manage': props.canManage ? '1' : '0', 'is-member': props.isMember ? '1' : '0', 'user-id': props.ctx.user?.id ?? '' }}
    >
      <p class="muted">
        <a href="/dashboard">Dashboard</a> / Pool
      </p>
      <h1 id="pool-name" safe>{p.name}</h1>
      {p.description ? <p class="lead" id="pool-description" safe>{p.description}</p> : ''}
      <dl class="facts card">
        <dt>Slug</dt>
        <dd class="mono" safe>{p.slug}</dd>
        <dt>Visibility</dt>
        <dd>{p.visibility + (p.visibility === 'public' && p.open_join ? ' (open join)' : '')}</dd>
        <dt>Node limit</dt>
        <dd>{p.node_limit === null ? 'unlimited' : p.node_limit}</dd>
        <dt>Your role</dt>
        <dd>{p.my_role ?? (props.ctx.user?.role === 'admin' ? 'admin (not a member)' : 'not a member')}</dd>
      </dl>
      {!props.isMember && p.visibility === 'public' ? (
        <div class="card">
          <p>You are not a member of this public pool.</p>
          <button type="button" id="join-pool">{p.open_join ? 'Join this pool' : 'Ask to join'}</button>
          <Notice id="join-pool-msg" />
        </div>
      ) : (
        ''
      )}
      <section class="card" aria-labelledby="nodes-title">
        <h2 id="nodes-title">Machines</h2>
        <p id="nodes-summary" class="muted" role="status" aria-live="polite"></p>
        <Table id="nodes-body" caption="Machines in this pool, refreshed every few seconds" cols={['Machine', 'State', 'Status', 'Step', 'Loss', 'GPUs', 'Last seen']} />
      </section>
      {canJoinCmd ? (
        <section class="card" aria-labelledby="join-title" id="join-section">
          <h2 id="join-title">Add a machine</h2>
          <p>
            Create a join command and run it on the new machine. The machine joins this pool and shows up above. For step-by-step help, use the{' '}
            <a href={`/ops/join-v2?pool=${encodeURIComponent(p.id)}`}>guided join</a>.
          </p>
          <div class="actions">
            <button type="button" id="mint-join" class="secondary">Create join command</button>
          </div>
          <div class="cmd">
            <pre id="join-cmd"></pre>
            <button type="button" id="copy-join" data-copy="join-cmd" data-copy-status="join-msg">Copy command</button>
          </div>
          <p id="join-expiry" class="hint"></p>
          <Notice id="join-msg" />
        </section>
      ) : (
        ''
      )}
      <section class="card" aria-labelledby="jobs-title">
        <h2 id="jobs-title">Jobs</h2>
        <Table id="jobs-body" caption="Jobs of this pool" cols={['Name', 'Status', 'Stages', 'Step', 'Loss']} />
      </section>
      <section class="card" aria-labelledby="models-title">
        <h2 id="models-title">Models</h2>
        <div id="models">
          <p class="empty">Loading…</p>
        </div>
      </section>
      <section class="card" aria-labelledby="members-title">
        <h2 id="members-title">Members</h2>
        <Table id="members-body" caption="Members of this pool" cols={['Name', 'Email', 'Role', 'Joined', 'Actions']} />
        <Notice id="members-msg" />
      </section>
      {props.canManage ? <Manage {...props} /> : ''}
    </Layout>
  )
}
