// Interface language: the chrome (header, nav, footer) and every page body follow it, except the
// landing pages (their URL fixes the language), Leichte Sprache and the operator's legal texts.
// Page texts live beside each page (pages/*.tsx) and, for page scripts, in pages/client-strings.ts.
// Order: cookie svc_lang, then Accept-Language, then English (SPEC.md, Pages).
export const LANGS = ['en', 'de'] as const
export type Lang = (typeof LANGS)[number]
export const LANG_COOKIE = 'svc_lang'

export const isLang = (v: unknown): v is Lang => typeof v === 'string' && (LANGS as readonly string[]).includes(v)

/** The first supported primary subtag by q-value; ties keep header order. Malformed parts are skipped. */
export function fromAcceptLanguage(header: string | null): Lang | null {
  if (header === null || header.length > 1000) return null
  const ranked = header
    .split(',')
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().split(';')
      const q = params.map((p) => /^\s*q=([01](?:\.\d{0,3})?)\s*$/.exec(p)).find((m) => m)?.[1]
      return { primary: tag.trim().toLowerCase().split('-')[0] ?? '', q: q === undefined ? 1 : Number(q), i }
    })
    .filter((r) => r.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i)
  return ranked.map((r) => r.primary).find(isLang) ?? null
}

export function pickLang(cookie: string | undefined, acceptLanguage: string | null): Lang {
  if (isLang(cookie)) return cookie
  return fromAcceptLanguage(acceptLanguage) ?? 'en'
}

const en = {
  skip: 'Skip to main content',
  brand: 'svc leader',
  mainNav: 'Main',
  footerNav: 'Legal and language',
  login: 'Log in',
  register: 'Register',
  logout: 'Log out',
  dashboard: 'Dashboard',
  join: 'Add a machine',
  inference: 'Inference',
  profile: 'Profile',
  adminUsers: 'Users',
  adminPools: 'All pools',
  adminAudit: 'Audit log',
  menu: 'Menu',
  loading: 'Loading…',
  noScript: 'This console needs JavaScript: turn it on for this site. Without it nothing on this page loads and its forms and buttons do not work.',
  pending: 'pending approval',
  signedInAs: 'Signed in as',
  imprint: 'Imprint',
  privacy: 'Privacy',
  accessibility: 'Accessibility',
  plainLanguage: 'Leichte Sprache',
  language: 'Language',
  langName: { en: 'English', de: 'Deutsch' },
  // Accessibility statement (rendered in the interface language).
  a11yTitle: 'Accessibility statement',
  a11yIntro:
    'We want everyone to be able to use this service. The pages are built to be usable with a keyboard alone and with screen readers, with visible focus, labelled form fields, text alternatives and sufficient contrast.',
  a11yStatus: 'Known limitations',
  a11yLimits:
    'Live tables refresh every few seconds; screen readers announce changes politely. The charts (training loss and throughput, machines over time, GPU temperature and memory) are pictures for sighted readers that screen readers skip: each has a summary beside it and a "Show the data as a table" button that lists every value as text. If something does not work for you, please tell us.',
  a11yContactTitle: 'Report a barrier',
  a11yContactLead: 'You can report barriers to:',
  a11yNoContact: 'This deployment has not configured a contact for reporting barriers.',
  a11yVideoTitle: 'Sign language (DGS)',
  a11yVideoMissing: 'A sign-language video has not been provided for this deployment yet.',
  a11yPlainLink: 'Information in plain German (Leichte Sprache)',
  videoFallback: 'Your browser cannot play this video. Open the video file',
}
export type Strings = typeof en

const de: Strings = {
  skip: 'Zum Inhalt springen',
  brand: 'svc leader',
  mainNav: 'Hauptnavigation',
  footerNav: 'Rechtliches und Sprache',
  login: 'Anmelden',
  register: 'Registrieren',
  logout: 'Abmelden',
  dashboard: 'Übersicht',
  join: 'Maschine hinzufügen',
  inference: 'Inferenz',
  profile: 'Profil',
  adminUsers: 'Benutzer',
  adminPools: 'Alle Pools',
  adminAudit: 'Protokoll',
  menu: 'Menü',
  loading: 'Wird geladen…',
  noScript: 'Diese Konsole braucht JavaScript: Schalten Sie es für diese Seite ein. Ohne JavaScript lädt auf dieser Seite nichts, und ihre Formulare und Knöpfe funktionieren nicht.',
  pending: 'warten auf Freigabe',
  signedInAs: 'Angemeldet als',
  imprint: 'Impressum',
  privacy: 'Datenschutz',
  accessibility: 'Barrierefreiheit',
  plainLanguage: 'Leichte Sprache',
  language: 'Sprache',
  langName: { en: 'English', de: 'Deutsch' },
  a11yTitle: 'Erklärung zur Barrierefreiheit',
  a11yIntro:
    'Alle Menschen sollen diesen Dienst nutzen können. Die Seiten sind mit der Tastatur allein und mit Screenreadern bedienbar, mit sichtbarem Fokus, beschrifteten Formularfeldern, Textalternativen und ausreichendem Kontrast.',
  a11yStatus: 'Bekannte Einschränkungen',
  a11yLimits:
    'Live-Tabellen aktualisieren sich alle paar Sekunden; Screenreader kündigen Änderungen zurückhaltend an. Die Diagramme (Loss und Durchsatz des Trainings, Maschinen im Verlauf, GPU-Temperatur und -Speicher) sind Bilder für Sehende, die Screenreader überspringen: Zu jedem gibt es eine Zusammenfassung und die Schaltfläche „Daten als Tabelle zeigen“, die jeden Wert als Text auflistet. Wenn etwas für Sie nicht funktioniert, sagen Sie es uns bitte.',
  a11yContactTitle: 'Barriere melden',
  a11yContactLead: 'Barrieren können Sie hier melden:',
  a11yNoContact: 'Für diese Installation ist kein Kontakt zum Melden von Barrieren eingerichtet.',
  a11yVideoTitle: 'Deutsche Gebärdensprache (DGS)',
  a11yVideoMissing: 'Für diese Installation gibt es noch kein Video in Gebärdensprache.',
  a11yPlainLink: 'Informationen in Leichter Sprache',
  videoFallback: 'Ihr Browser kann dieses Video nicht abspielen. Videodatei öffnen',
}

export const STRINGS: Record<Lang, Strings> = { en, de }

/** Picks the plural form for `n` (Intl.PluralRules) and fills {n}. */
export function plural(lang: Lang, n: number, forms: { one: string; other: string }): string {
  const form = new Intl.PluralRules(lang).select(n) === 'one' ? forms.one : forms.other
  return form.replace('{n}', n.toLocaleString(lang))
}
