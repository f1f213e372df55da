// /dashboard: live pools with the plan quota, invitations, join requests to the caller's pools,
// the create-pool flow and shortcut tiles.
import { Layout, Notice, type PageCtx } from './layout'
import { STRINGS, type Lang } from './i18n'

const TEXT = {
  en: {
    title: 'Dashboard',
    welcome: 'Welcome,',
    shortcuts: 'Shortcuts',
    tiles: [
      ['/ops/join-v2', 'Training Console', 'Add machines to a pool and follow their training.'],
      ['/ops/inference', 'Inference', 'Chat with a model trained on your pools.'],
      ['/profile', 'Profile', 'Your account, password and API tokens.'],
    ],
    pools: 'Pools',
    planLoading: 'Loading your plan…',
    poolsCaption: 'Pools you can see',
    cols: ['Name', 'Visibility', 'Your role', 'Machines', 'Members'],
    requests: 'Join requests to your pools',
    fleet: 'Your fleet over the last day',
    fleetIntro: 'Per pool: machines online and free VRAM.',
    invitations: 'Invitations',
    linkIntro: 'You opened an invitation link to a pool. Accept it to join; the pool then appears in your list.',
    accept: 'Accept the invitation',
    create: 'Create a pool',
    name: 'Name',
    description: 'Description (optional)',
    visibility: 'Visibility',
    private: 'Private: members only',
    visibilityHint: 'Public pools are listed to every logged-in user; people can ask to join them.',
    openJoin: 'Anyone may join a public pool without approval',
    createButton: 'Create pool',
  },
  de: {
    title: 'Übersicht',
    welcome: 'Willkommen,',
    shortcuts: 'Schnellzugriff',
    tiles: [
      ['/ops/join-v2', 'Trainingskonsole', 'Maschinen zu einem Pool hinzufügen und ihr Training verfolgen.'],
      ['/ops/inference', 'Inferenz', 'Mit einem Modell chatten, das auf Ihren Pools trainiert wurde.'],
      ['/profile', 'Profil', 'Ihr Konto, Ihr Passwort und Ihre API-Tokens.'],
    ],
    pools: 'Pools',
    planLoading: 'Ihr Tarif wird geladen…',
    poolsCaption: 'Pools, die Sie sehen können',
    cols: ['Name', 'Sichtbarkeit', 'Ihre Rolle', 'Maschinen', 'Mitglieder'],
    requests: 'Beitrittsanfragen an Ihre Pools',
    fleet: 'Ihre Maschinen am letzten Tag',
    fleetIntro: 'Je Pool: Maschinen online und freier VRAM.',
    invitations: 'Einladungen',
    linkIntro: 'Sie haben einen Einladungslink zu einem Pool geöffnet. Nehmen Sie ihn an, um beizutreten; der Pool erscheint dann in Ihrer Liste.',
    accept: 'Einladung annehmen',
    create: 'Pool anlegen',
    name: 'Name',
    description: 'Beschreibung (optional)',
    visibility: 'Sichtbarkeit',
    private: 'Privat: nur Mitglieder',
    visibilityHint: 'Öffentliche Pools sehen alle angemeldeten Personen; sie können um Beitritt bitten.',
    openJoin: 'Jede Person darf einem öffentlichen Pool ohne Freigabe beitreten',
    createButton: 'Pool anlegen',
  },
} satisfies Record<Lang, unknown>

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
  const t = TEXT[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.title} script={['uplot.js', 'console.js', 'dashboard.js']}>
      <h1>
        <span safe>{t.welcome}</span> <span safe>{u.name}</span>
      </h1>
      <nav aria-label={t.shortcuts}>
        <ul class="tiles plain">
          {t.tiles.map(([href, title, text]) => (
            <Tile href={href!} title={title!} text={text!} />
          ))}
        </ul>
      </nav>
      <section class="card" aria-labelledby="pools-title">
        <h2 id="pools-title" safe>{t.pools}</h2>
        <p id="plan" class="muted" aria-live="polite" safe>{t.planLoading}</p>
        <div class="table-wrap">
          <table>
            <caption class="sr-only" safe>{t.poolsCaption}</caption>
            <thead>
              <tr>
                {t.cols.map((c) => (
                  <th scope="col" safe>{c}</th>
                ))}
              </tr>
            </thead>
            <tbody id="pools-body">
              <tr>
                <td colspan="5" class="empty" safe>{STRINGS[props.ctx.lang].loading}</td>
              </tr>
            </tbody>
          </table>
        </div>
      </section>
      <section class="card" aria-labelledby="fleet-title" id="fleet-card" hidden>
        <h2 id="fleet-title" safe>{t.fleet}</h2>
        <p class="muted" safe>{t.fleetIntro}</p>
        <ul class="plain fleet-list" id="fleet-list"></ul>
      </section>
      <section class="card" aria-labelledby="requests-title" id="requests-card" hidden>
        <h2 id="requests-title" safe>{t.requests}</h2>
        <div id="owner-requests"></div>
        <Notice id="requests-msg" />
      </section>
      <section class="card" aria-labelledby="invites-title">
        <h2 id="invites-title" safe>{t.invitations}</h2>
        <div id="invite-link-card" hidden>
          <p safe>{t.linkIntro}</p>
          <div class="actions">
            <button type="button" id="accept-link-invite" safe>{t.accept}</button>
          </div>
        </div>
        <div id="invites">
          <p class="empty" safe>{STRINGS[props.ctx.lang].loading}</p>
        </div>
        <Notice id="invite-msg" />
      </section>
      <section class="card" aria-labelledby="create-title">
        <h2 id="create-title" safe>{t.create}</h2>
        <form id="create-pool" method="post">
          <label for="pool-name" safe>{t.name}</label>
          <input id="pool-name" name="name" type="text" required maxlength="100" />
          <label for="pool-description" safe>{t.description}</label>
          <input id="pool-description" name="description" type="text" maxlength="2000" />
          <label for="pool-visibility" safe>{t.visibility}</label>
          <select id="pool-visibility" name="visibility" aria-describedby="visibility-hint">
            <option value="private" safe>{t.private}</option>
          </select>
          <p class="hint" id="visibility-hint" safe>{t.visibilityHint}</p>
          <label class="check" id="open-join-row" hidden>
            <input type="checkbox" name="open_join" id="pool-open-join" /> <span safe>{t.openJoin}</span>
          </label>
          <div class="actions">
            <button type="submit" id="create-pool-submit" safe>{t.createButton}</button>
          </div>
          <Notice id="create-msg" />
        </form>
      </section>
    </Layout>
  )
}
