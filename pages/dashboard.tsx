// /dashboard: live pools with the plan quota, invitations, the create-pool flow and shortcut tiles.
import { Layout, Notice, type PageCtx } from './layout'

function Tile(props: { href: string; title: string; text: string }) {
  return (
    <li>
      <a class="tile" href={props.href}>
        <strong safe>{props.title}</strong>
        <span class="muted" safe>{props.text}</span>
      </a>
    </li>
  )
}

export function DashboardPage(props: { ctx: PageCtx }) {
  const u = props.ctx.user!
  return (
    <Layout ctx={props.ctx} title="Dashboard" script="dashboard.js">
      <h1>
        Welcome, <span safe>{u.name}</span>
      </h1>
      <nav aria-label="Shortcuts">
        <ul class="tiles plain">
          <Tile href="/ops/join-v2" title="Training Console" text="Add machines to a pool and follow their training." />
          <Tile href="/ops/inference" title="Inference" text="Chat with a model trained on your pools." />
          <Tile href="/profile" title="Profile" text="Your account, password and API tokens." />
        </ul>
      </nav>
      <section class="card" aria-labelledby="pools-title">
        <h2 id="pools-title">Pools</h2>
        <p id="plan" class="muted" aria-live="polite">Loading your plan…</p>
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Pools you can see</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Visibility</th>
                <th scope="col">Your role</th>
                <th scope="col">Nodes</th>
                <th scope="col">Members</th>
              </tr>
            </thead>
            <tbody id="pools-body">
              <tr>
                <td colspan="5" class="empty">Loading…</td>
              </tr>
            </tbody>
          </table>
        </div>
      </section>
      <section class="card" aria-labelledby="invites-title">
        <h2 id="invites-title">Invitations</h2>
        <div id="invite-link-card" hidden>
          <p>You opened an invitation link. Accept it to join the pool it names.</p>
          <div class="actions">
            <button type="button" id="accept-link-invite">Accept the invitation</button>
          </div>
        </div>
        <div id="invites">
          <p class="empty">Loading…</p>
        </div>
        <Notice id="invite-msg" />
      </section>
      <section class="card" aria-labelledby="create-title">
        <h2 id="create-title">Create a pool</h2>
        <form id="create-pool" method="post">
          <label for="pool-name">Name</label>
          <input id="pool-name" name="name" type="text" required maxlength="100" />
          <label for="pool-description">Description (optional)</label>
          <input id="pool-description" name="description" type="text" maxlength="2000" />
          <label for="pool-visibility">Visibility</label>
          <select id="pool-visibility" name="visibility" aria-describedby="visibility-hint">
            <option value="private">Private: members only</option>
          </select>
          <p class="hint" id="visibility-hint">Public pools are listed to every logged-in user; people can ask to join them.</p>
          <label class="check" id="open-join-row" hidden>
            <input type="checkbox" name="open_join" id="pool-open-join" /> Anyone may join a public pool without approval
          </label>
          <div class="actions">
            <button type="submit" id="create-pool-submit">Create pool</button>
          </div>
          <Notice id="create-msg" />
        </form>
      </section>
    </Layout>
  )
}
