// The public landing page, in English at / and in German at /de (the body follows the URL).
import { Layout, type PageCtx } from './layout'
import type { Lang } from './i18n'

const TEXT = {
  en: {
    title: 'Pool your GPUs',
    lead: 'The svc leader is a small, self-hosted control plane for GPU machines. Add your machines to a pool with one command, share them with people you invite, train models across them and serve the results.',
    start: 'Create an account',
    login: 'Log in',
    featuresTitle: 'What it does',
    features: [
      ['Pools', 'Group machines into pools, private or public, with per-plan quotas, invites and join requests.'],
      ['One-line join', 'Each pool hands out a join command: paste it on a machine and it shows up online within seconds.'],
      ['Training', 'Jobs run as pipelines across the machines of one pool, with live step and loss.'],
      ['Inference', 'Trained models are served through an OpenAI-compatible chat endpoint.'],
    ],
    selfHosted: 'One executable, one database file, no external services. Your data stays on your machine.',
  },
  de: {
    title: 'GPUs gemeinsam nutzen',
    lead: 'Der svc leader ist eine kleine, selbst betriebene Steuerzentrale für GPU-Rechner. Fügen Sie Ihre Rechner mit einem Befehl zu einem Pool hinzu, teilen Sie sie mit eingeladenen Personen, trainieren Sie Modelle darauf und stellen Sie die Ergebnisse bereit.',
    start: 'Konto anlegen',
    login: 'Anmelden',
    featuresTitle: 'Was er kann',
    features: [
      ['Pools', 'Rechner in private oder öffentliche Pools gruppieren, mit Kontingenten je Tarif, Einladungen und Beitrittsanfragen.'],
      ['Beitritt mit einer Zeile', 'Jeder Pool gibt einen Beitrittsbefehl aus: auf einem Rechner einfügen, und er ist nach Sekunden online.'],
      ['Training', 'Aufträge laufen als Pipeline über die Rechner eines Pools, mit Schritt und Loss in Echtzeit.'],
      ['Inferenz', 'Trainierte Modelle antworten über einen OpenAI-kompatiblen Chat-Endpunkt.'],
    ],
    selfHosted: 'Eine ausführbare Datei, eine Datenbankdatei, keine externen Dienste. Ihre Daten bleiben auf Ihrem Rechner.',
  },
} satisfies Record<Lang, unknown>

export function LandingPage(props: { ctx: PageCtx; bodyLang: Lang }) {
  const t = TEXT[props.bodyLang]
  const base = props.ctx.baseUrl
  return (
    <Layout
      ctx={props.ctx}
      title={t.title}
      bodyLang={props.bodyLang}
      head={
        <>
          <link rel="alternate" hreflang="en" href={`${base}/`} />
          <link rel="alternate" hreflang="de" href={`${base}/de`} />
          <link rel="alternate" hreflang="x-default" href={`${base}/`} />
          <meta name="description" content={t.lead} />
        </>
      }
    >
      <section class="hero" aria-labelledby="hero-title">
        <h1 id="hero-title" safe>{t.title}</h1>
        <p class="lead" safe>{t.lead}</p>
        <div class="actions">
          <a class="btn" href="/register" safe>{t.start}</a>
          <a class="btn secondary" href="/login" safe>{t.login}</a>
        </div>
      </section>
      <section aria-labelledby="features-title">
        <h2 id="features-title" safe>{t.featuresTitle}</h2>
        <div class="grid">
          {t.features.map(([name, text]) => (
            <div class="card">
              <h3 safe>{name}</h3>
              <p safe>{text}</p>
            </div>
          ))}
        </div>
        <p class="muted" safe>{t.selfHosted}</p>
      </section>
    </Layout>
  )
}

const NOT_FOUND = {
  en: {
    title: 'Not found',
    nothing: 'There is nothing at this address.',
    pool: 'There is no pool here, or it is not visible to you.',
    job: 'There is no job here, or it is not visible to you.',
    fellow: 'There is no machine here, or it is not visible to you.',
    language: 'This language is not available. Choose English or Deutsch.',
    back: 'Back to the start page',
  },
  de: {
    title: 'Nicht gefunden',
    nothing: 'Unter dieser Adresse gibt es nichts.',
    pool: 'Hier gibt es keinen Pool, oder er ist für Sie nicht sichtbar.',
    job: 'Hier gibt es keinen Auftrag, oder er ist für Sie nicht sichtbar.',
    fellow: 'Hier gibt es keine Maschine, oder sie ist für Sie nicht sichtbar.',
    language: 'Diese Sprache gibt es nicht. Wählen Sie English oder Deutsch.',
    back: 'Zurück zur Startseite',
  },
} satisfies Record<Lang, unknown>

export type NotFoundWhat = 'pool' | 'job' | 'fellow' | 'language'

export function NotFoundPage(props: { ctx: PageCtx; what?: NotFoundWhat }) {
  const t = NOT_FOUND[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.title}>
      <div class="card legal">
        <h1 safe>{t.title}</h1>
        <p safe>{props.what ? t[props.what] : t.nothing}</p>
        <p>
          <a href={props.ctx.user ? '/dashboard' : '/'} safe>{t.back}</a>
        </p>
      </div>
    </Layout>
  )
}
