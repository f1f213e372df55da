// /admin/users and /admin/pools. The lists are fetched and paged by admin-users.js / admin-pools.js.
import { Layout, Notice, type PageCtx } from './layout'

function Select(props: { id: string; name: string; label: string; options: [string, string][] }) {
  return (
    <div>
      <label for={props.id} safe>{props.label}</label>
      <select id={props.id} name={props.name}>
        {props.options.map(([v, text]) => (
          <option value={v} safe>{text}</option>
        ))}
      </select>
    </div>
  )
}

export function AdminUsersPage(props: { ctx: PageCtx }) {
  return (
    <Layout ctx={props.ctx} title="Users" script="admin-users.js">
      <h1>
        Users{' '}
        <span id="pending-badge" class="badge" hidden={props.ctx.pendingCount === 0}>
          {props.ctx.pendingCount} pending approval
        </span>
      </h1>
      <section class="card" aria-labelledby="mail-title">
        <h2 id="mail-title">Email</h2>
        <p id="mail-status">Loading mail status…</p>
        <button type="button" id="mail-test" class="secondary">Send test email</button>
        <Notice id="mail-msg" />
      </section>
      <section class="card" aria-labelledby="users-title">
        <h2 id="users-title">Accounts</h2>
        <form id="user-filters" class="filters" role="search" aria-label="Filter users">
          <div>
            <label for="f-q">Search</label>
            <input id="f-q" name="q" type="search" placeholder="email or name" maxlength="200" />
          </div>
          <Select id="f-status" name="status" label="Status" options={[['', 'Any status'], ['pending_approval', 'Pending approval'], ['unverified', 'Unverified'], ['active', 'Active'], ['disabled', 'Disabled']]} />
          <Select id="f-role" name="role" label="Role" options={[['', 'Any role'], ['user', 'User'], ['admin', 'Admin']]} />
          <Select
            id="f-sort"
            name="sort"
            label="Sort by"
            options={[['created_at', 'Registered'], ['last_login_at', 'Last login'], ['email', 'Email'], ['display_name', 'Name'], ['pool_count', 'Pools'], ['node_count', 'Nodes']]}
          />
          <Select id="f-order" name="order" label="Order" options={[['desc', 'Descending'], ['asc', 'Ascending']]} />
          <Select id="f-size" name="page_size" label="Per page" options={[['25', '25'], ['10', '10'], ['50', '50'], ['100', '100']]} />
          <div>
            <button type="submit">Apply</button>
          </div>
        </form>
        <div class="table-wrap">
          <table>
            <caption class="sr-only">User accounts</caption>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Registered</th>
                <th scope="col">Last login</th>
                <th scope="col">Pools</th>
                <th scope="col">Nodes</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody id="users-body">
              <tr>
                <td colspan="9" class="empty">Loading…</td>
              </tr>
            </tbody>
          </table>
        </div>
        <div class="pager">
          <button type="button" class="secondary small" id="page-prev" disabled>Previous page</button>
          <span id="page-info" aria-live="polite"></span>
          <button type="button" class="secondary small" id="page-next" disabled>Next page</button>
        </div>
        <Notice id="users-msg" />
        <div id="reset-once" class="secret" hidden>
          <p>
            <strong>One-time password reset link.</strong> Send it to the user over a channel you trust; it works once, for 24 hours.
          </p>
          <div class="cmd">
            <pre id="reset-link"></pre>
            <button type="button" data-copy="reset-link" data-copy-status="users-msg">Copy link</button>
          </div>
        </div>
      </section>
    </Layout>
  )
}

function PoolFields(props: { prefix: string }) {
  const p = props.prefix
  return (
    <>
      <label for={`${p}-name`}>Name</label>
      <input id={`${p}-name`} name="name" type="text" required maxlength="100" />
      <label for={`${p}-description`}>Description</label>
      <input id={`${p}-description`} name="description" type="text" maxlength="2000" />
      <label for={`${p}-visibility`}>Visibility</label>
      <select id={`${p}-visibility`} name="visibility">
        <option value="private">private</option>
        <option value="public">public</option>
      </select>
      <label for={`${p}-limit`}>Node limit (empty: unlimited)</label>
      <input id={`${p}-limit`} name="node_limit" type="number" min="0" />
      <label class="check">
        <input type="checkbox" name="open_join" id={`${p}-open`} /> Open join (public pools)
      </label>
    </>
  )
}

export function AdminPoolsPage(props: { ctx: PageCtx }) {
  return (
    <Layout ctx={props.ctx} title="All pools" script="admin-pools.js">
      <h1>All pools</h1>
      <section class="card" aria-labelledby="list-title">
        <h2 id="list-title">Pools</h2>
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Every pool on this leader</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Slug</th>
                <th scope="col">Visibility</th>
                <th scope="col">Nodes</th>
                <th scope="col">Members</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody id="pools-body">
              <tr>
                <td colspan="7" class="empty">Loading…</td>
              </tr>
            </tbody>
          </table>
        </div>
        <Notice id="pools-msg" />
      </section>
      <section class="card" aria-labelledby="edit-title" id="edit-section" hidden>
        <h2 id="edit-title">Edit pool</h2>
        <form id="edit-form" method="post">
          <PoolFields prefix="edit" />
          <div class="actions">
            <button type="submit">Save changes</button>
            <button type="button" class="secondary" id="edit-cancel">Cancel</button>
          </div>
          <Notice id="edit-msg" />
        </form>
      </section>
      <section class="card" aria-labelledby="create-title">
        <h2 id="create-title">Create a pool</h2>
        <form id="create-form" method="post">
          <PoolFields prefix="create" />
          <label for="create-slug">Slug (optional, fixed once created)</label>
          <input id="create-slug" name="slug" type="text" maxlength="48" pattern="[a-z0-9](?:[a-z0-9\-]{0,46}[a-z0-9])?" />
          <div class="actions">
            <button type="submit">Create pool</button>
          </div>
          <Notice id="create-msg" />
        </form>
      </section>
    </Layout>
  )
}
