// Imprint, privacy, the accessibility statement and Leichte Sprache. The imprint/privacy/statement
// fragments come from files the operator configured: they are the operator's own HTML and are
// inserted as they are (trusted configuration, like the binary itself), never user input.
import { Layout, type PageCtx } from './layout'
import { STRINGS, type Strings } from './i18n'

const EMAIL = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/

const LEGAL_TEXT = {
  imprint: {
    en: ['Imprint', 'The operator of this deployment has not configured an imprint yet.'],
    de: ['Impressum', 'Der Betreiber dieser Installation hat noch kein Impressum hinterlegt.'],
  },
  privacy: {
    en: ['Privacy policy', 'The operator of this deployment has not configured a privacy policy yet.'],
    de: ['Datenschutzerklärung', 'Der Betreiber dieser Installation hat noch keine Datenschutzerklärung hinterlegt.'],
  },
} as const

export function LegalDocPage(props: { ctx: PageCtx; kind: 'imprint' | 'privacy'; legalLang: string; fragment: string | null }) {
  const de = props.legalLang.toLowerCase().split('-')[0] === 'de'
  const [title, missing] = LEGAL_TEXT[props.kind][de ? 'de' : 'en']
  const variable = props.kind === 'imprint' ? 'SVC_IMPRINT_FILE' : 'SVC_PRIVACY_FILE'
  const safeFragment = props.fragment
  return (
    <Layout ctx={props.ctx} title={title} bodyLang={props.legalLang}>
      <article class="card legal">
        {safeFragment !== null ? (
          safeFragment
        ) : (
          // The placeholder is English or German; say which when the declared legal language is another.
          <div class="placeholder" data-placeholder={props.kind} lang={de || props.legalLang.toLowerCase().startsWith('en') ? undefined : 'en'}>
            <h1>{title}</h1>
            <p class="secret">{missing}</p>
            <p class="muted">
              <code>{variable}</code>
            </p>
          </div>
        )}
      </article>
    </Layout>
  )
}

function Contact(props: { s: Strings; contact: string | null }) {
  const c = props.contact
  if (c === null) return <p data-a11y-contact="none" safe>{props.s.a11yNoContact}</p>
  if (EMAIL.test(c.replace(/^mailto:/i, ''))) {
    const address = c.replace(/^mailto:/i, '')
    return (
      <p data-a11y-contact="email">
        <span safe>{props.s.a11yContactLead}</span> <a href={`mailto:${address}`} safe>{address}</a>
      </p>
    )
  }
  // Only web and phone links become links: a javascript: URL from a typo'd config must not.
  if (/^(https?:\/\/|tel:)/i.test(c)) {
    return (
      <p data-a11y-contact="link">
        <span safe>{props.s.a11yContactLead}</span> <a href={c} safe>{c}</a>
      </p>
    )
  }
  return (
    <p data-a11y-contact="text">
      <span safe>{props.s.a11yContactLead}</span> <span safe>{c}</span>
    </p>
  )
}

function SignVideo(props: { s: Strings; url: string | null }) {
  return (
    <section aria-labelledby="dgs-title">
      <h2 id="dgs-title" safe>{props.s.a11yVideoTitle}</h2>
      {props.url === null ? (
        <p data-dgs="missing" safe>{props.s.a11yVideoMissing}</p>
      ) : (
        <video controls src={props.url} data-dgs="video" width="640">
          <a href={props.url} safe>{props.s.videoFallback}</a>
        </video>
      )}
    </section>
  )
}

export interface A11yProps {
  ctx: PageCtx
  contact: string | null
  videoUrl: string | null
  fragment: string | null
}

export function AccessibilityPage(props: A11yProps) {
  const s = STRINGS[props.ctx.lang]
  const safeFragment = props.fragment
  return (
    <Layout ctx={props.ctx} title={s.a11yTitle} bodyLang={props.ctx.lang}>
      <article class="card legal">
        <h1 safe>{s.a11yTitle}</h1>
        {safeFragment !== null ? (
          <div data-a11y-body="file">{safeFragment}</div>
        ) : (
          <div data-a11y-body="builtin">
            <p safe>{s.a11yIntro}</p>
            <h2 safe>{s.a11yStatus}</h2>
            <p safe>{s.a11yLimits}</p>
          </div>
        )}
        <h2 safe>{s.a11yContactTitle}</h2>
        <Contact s={s} contact={props.contact} />
        <SignVideo s={s} url={props.videoUrl} />
        <p>
          <a href="/legal/leichte-sprache" lang="de" safe>{s.a11yPlainLink}</a>
        </p>
      </article>
    </Layout>
  )
}

/** Always German, in Leichte Sprache: short sentences, one idea each, hard words explained. */
export function PlainLanguagePage(props: Omit<A11yProps, 'fragment'>) {
  const s = STRINGS.de
  return (
    <Layout ctx={props.ctx} title="Leichte Sprache" bodyLang="de">
      <article class="card legal">
        <h1>Informationen in Leichter Sprache</h1>
        <h2>Was ist diese Internet-Seite?</h2>
        <p>Diese Seite gehört zu einem Computer-Programm.</p>
        <p>Das Programm heißt: svc leader.</p>
        <p>Mit dem Programm kann man viele Computer zusammen-schalten.</p>
        <p>Die Computer haben besondere Teile zum Rechnen.</p>
        <p>Diese Teile heißen: Grafik-Karten.</p>
        <p>Die Computer rechnen dann zusammen.</p>
        <p>So können sie zum Beispiel lernen, Texte zu schreiben.</p>
        <h2>Was können Sie hier machen?</h2>
        <ul>
          <li>Sie können ein Konto anlegen.</li>
          <li>Sie können Ihre Computer zu einer Gruppe hinzufügen. Die Gruppe heißt: Pool.</li>
          <li>Sie können andere Menschen in Ihren Pool einladen.</li>
          <li>Sie können sehen, ob Ihre Computer gerade arbeiten.</li>
        </ul>
        <h2>Wie bedienen Sie die Seite?</h2>
        <p>Sie können die Seite mit der Maus bedienen.</p>
        <p>Sie können die Seite auch nur mit der Tastatur bedienen.</p>
        <p>Mit der Tab-Taste kommen Sie zum nächsten Feld.</p>
        <p>Unten auf der Seite können Sie die Sprache ändern.</p>
        <h2>Gibt es Probleme auf der Seite?</h2>
        <p>Vielleicht können Sie etwas auf der Seite nicht benutzen.</p>
        <p>Dann sagen Sie es uns bitte.</p>
        <Contact s={s} contact={props.contact} />
        <SignVideo s={s} url={props.videoUrl} />
        <p>
          <a href="/legal/accessibility">Erklärung zur Barrierefreiheit</a>
        </p>
      </article>
    </Layout>
  )
}
