// /ops/join-v2 (guided join of a machine) and /ops/inference (a chat box on the OpenAI-compatible
// route). Both need a session; the chip with name, Dashboard link and logout is in the header.
import { Layout, Notice, Table, type PageCtx } from './layout'
import { STRINGS, type Lang } from './i18n'

/** Whether the leader's public URL points at the machine itself: no other machine can reach it. */
export function isLoopbackUrl(url: string): boolean {
  let host: string
  try {
    host = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, '')
  } catch {
    return false
  }
  return host === 'localhost' || host.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1' || host === '0.0.0.0'
}

const LOOPBACK = {
  en: {
    title: 'Other machines cannot reach this leader.',
    text: 'Join commands point at {url}, which is this machine itself. Start the leader with SVC_HOST=0.0.0.0 and SVC_BASE_URL=http://ADDRESS:PORT (an address the GPU machines can reach), as the README describes under "On a LAN".',
  },
  de: {
    title: 'Andere Maschinen erreichen diesen Leader nicht.',
    text: 'Beitrittsbefehle zeigen auf {url}, also auf diese Maschine selbst. Starten Sie den Leader mit SVC_HOST=0.0.0.0 und SVC_BASE_URL=http://ADRESSE:PORT (einer Adresse, die die GPU-Maschinen erreichen), wie es die README unter „On a LAN“ beschreibt.',
  },
} satisfies Record<Lang, unknown>

export function LoopbackWarning(props: { ctx: PageCtx }) {
  if (!isLoopbackUrl(props.ctx.baseUrl)) return <></>
  const t = LOOPBACK[props.ctx.lang]
  return (
    <div class="secret" id="loopback-warning" role="note">
      <p>
        <strong safe>{t.title}</strong>
      </p>
      <p safe>{t.text.replace('{url}', props.ctx.baseUrl)}</p>
    </div>
  )
}

const JOIN = {
  en: {
    title: 'Add a machine',
    lead: 'Four steps take a GPU machine from nothing to online in one of your pools.',
    choose: 'Choose a pool',
    pool: 'Pool',
    loadingPools: 'Loading your pools…',
    poolHint: 'Machines can join pools you belong to. No pool yet?',
    createOne: 'Create one on the dashboard',
    create: 'Create the join command',
    createText: 'The command carries a join token for this pool. It works for 24 hours and for as many machines as the pool allows.',
    mint: 'Create join command',
    copy: 'Copy command',
    noCommand: 'No command yet.',
    run: 'Run it on the machine',
    runText: 'Open a terminal on the machine with the GPUs and paste the command. The machine needs Linux, the NVIDIA driver and a network path to',
    service: 'To keep the agent running after you log out (and start it at boot), add --service at the end of the command: it installs a systemd unit and keeps the join token in a file only root can read.',
    wait: 'Wait for it to come online',
    first: 'Create a join command first.',
  },
  de: {
    title: 'Maschine hinzufügen',
    lead: 'In vier Schritten kommt eine GPU-Maschine online in einen Ihrer Pools.',
    choose: 'Pool wählen',
    pool: 'Pool',
    loadingPools: 'Ihre Pools werden geladen…',
    poolHint: 'Maschinen können Pools beitreten, in denen Sie Mitglied sind. Noch kein Pool?',
    createOne: 'Legen Sie einen in der Übersicht an',
    create: 'Beitrittsbefehl erstellen',
    createText: 'Der Befehl enthält ein Beitrittstoken für diesen Pool. Er gilt 24 Stunden und für so viele Maschinen, wie der Pool erlaubt.',
    mint: 'Beitrittsbefehl erstellen',
    copy: 'Befehl kopieren',
    noCommand: 'Noch kein Befehl.',
    run: 'Auf der Maschine ausführen',
    runText: 'Öffnen Sie ein Terminal auf der Maschine mit den GPUs und fügen Sie den Befehl ein. Die Maschine braucht Linux, den NVIDIA-Treiber und eine Netzwerkverbindung zu',
    service: 'Damit der Agent nach dem Abmelden weiterläuft (und beim Systemstart startet), hängen Sie --service an den Befehl an: Er richtet eine systemd-Unit ein und legt das Beitrittstoken in eine Datei, die nur root lesen kann.',
    wait: 'Warten, bis sie online ist',
    first: 'Erstellen Sie zuerst einen Beitrittsbefehl.',
  },
} satisfies Record<Lang, unknown>

export function JoinPage(props: { ctx: PageCtx }) {
  const t = JOIN[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.title} script="join.js">
      <h1 safe>{t.title}</h1>
      <p class="lead" safe>{t.lead}</p>
      <LoopbackWarning ctx={props.ctx} />
      <ol class="steps">
        <li class="card">
          <h2 safe>{t.choose}</h2>
          <label for="join-pool" safe>{t.pool}</label>
          <select id="join-pool" name="pool" aria-describedby="join-pool-hint">
            <option value="" safe>{t.loadingPools}</option>
          </select>
          <p class="hint" id="join-pool-hint">
            <span safe>{t.poolHint}</span> <a href="/dashboard" safe>{t.createOne}</a>.
          </p>
        </li>
        <li class="card">
          <h2 safe>{t.create}</h2>
          <p safe>{t.createText}</p>
          <div class="actions">
            <button type="button" id="mint-join" safe>{t.mint}</button>
          </div>
          <div class="cmd">
            <pre id="join-cmd" data-empty={t.noCommand}></pre>
            <button type="button" id="copy-join" data-copy="join-cmd" data-copy-status="join-msg" disabled safe>{t.copy}</button>
          </div>
          <p id="join-expiry" class="hint"></p>
          <Notice id="join-msg" />
        </li>
        <li class="card">
          <h2 safe>{t.run}</h2>
          <p>
            <span safe>{t.runText}</span> <code safe>{props.ctx.baseUrl}</code>.
          </p>
          <p class="hint" safe>{t.service}</p>
        </li>
        <li class="card">
          <h2 safe>{t.wait}</h2>
          <p id="wait-status" role="status" aria-live="polite" safe>{t.first}</p>
          <ul id="new-nodes"></ul>
        </li>
      </ol>
    </Layout>
  )
}

const INFER = {
  en: {
    title: 'Inference',
    lead: 'Chat with a model served by the machines of your pools.',
    serving: 'Who serves what',
    servingHint: 'Machines of your pools serving each model now (only while their engine answers its health check), and how many requests each holds against what it takes at once.',
    servingCaption: 'Models and the machines serving them',
    cols: ['Model', 'Machine', 'Load'],
    chat: 'Chat',
    model: 'Model',
    loadingModels: 'Loading the models you can use…',
    tokenSummary: 'Use a personal API token',
    token: 'API token (optional)',
    tokenHint: 'If the chat route asks for an API token, paste one here',
    tokenLink: 'create one on your profile',
    tokenHint2: 'It is kept in this tab only.',
    conversation: 'Conversation',
    noMessages: 'No messages yet.',
    message: 'Message',
    promptHint: 'Ctrl+Enter sends.',
    send: 'Send',
    stop: 'Stop',
    clear: 'Clear conversation',
  },
  de: {
    title: 'Inferenz',
    lead: 'Chatten Sie mit einem Modell, das die Maschinen Ihrer Pools bereitstellen.',
    serving: 'Wer stellt was bereit',
    servingHint: 'Maschinen Ihrer Pools, die jedes Modell gerade bereitstellen (nur solange ihre Engine die Zustandsprüfung besteht), und wie viele Anfragen jede gerade hält, gemessen an dem, was sie gleichzeitig annimmt.',
    servingCaption: 'Modelle und die Maschinen, die sie bereitstellen',
    cols: ['Modell', 'Maschine', 'Last'],
    chat: 'Chat',
    model: 'Modell',
    loadingModels: 'Die Modelle, die Sie nutzen können, werden geladen…',
    tokenSummary: 'Ein persönliches API-Token verwenden',
    token: 'API-Token (optional)',
    tokenHint: 'Falls der Chat ein API-Token verlangt, fügen Sie es hier ein',
    tokenLink: 'auf Ihrem Profil anlegen',
    tokenHint2: 'Es bleibt nur in diesem Tab.',
    conversation: 'Unterhaltung',
    noMessages: 'Noch keine Nachrichten.',
    message: 'Nachricht',
    promptHint: 'Strg+Enter sendet.',
    send: 'Senden',
    stop: 'Stopp',
    clear: 'Unterhaltung leeren',
  },
} satisfies Record<Lang, unknown>

export function InferencePage(props: { ctx: PageCtx }) {
  const t = INFER[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.title} script="inference.js">
      <h1 safe>{t.title}</h1>
      <p class="lead" safe>{t.lead}</p>
      <section class="card" aria-labelledby="serving-title">
        <h2 id="serving-title" safe>{t.serving}</h2>
        <p class="hint" safe>{t.servingHint}</p>
        <Table id="serving-body" caption={t.servingCaption} cols={t.cols} lang={props.ctx.lang} />
      </section>
      <section class="card" aria-labelledby="chat-title">
        <h2 id="chat-title" class="sr-only" safe>{t.chat}</h2>
        <form id="chat-form" method="post">
          <label for="chat-model" safe>{t.model}</label>
          <select id="chat-model" name="model" aria-describedby="model-hint">
            <option value="" safe>{STRINGS[props.ctx.lang].loading}</option>
          </select>
          <p class="hint" id="model-hint" safe>{t.loadingModels}</p>
          <details>
            <summary safe>{t.tokenSummary}</summary>
            <label for="chat-token" safe>{t.token}</label>
            <input id="chat-token" name="token" type="password" autocomplete="off" aria-describedby="token-hint" />
            <p class="hint" id="token-hint">
              <span safe>{t.tokenHint}</span> (<a href="/profile" safe>{t.tokenLink}</a>). <span safe>{t.tokenHint2}</span>
            </p>
          </details>
          <div id="chat-log" class="chat-log" role="log" aria-live="polite" aria-label={t.conversation} tabindex="0">
            <p class="empty" safe>{t.noMessages}</p>
          </div>
          <label for="chat-prompt" safe>{t.message}</label>
          <textarea id="chat-prompt" name="prompt" rows="3" required aria-describedby="prompt-hint"></textarea>
          <p class="hint" id="prompt-hint" safe>{t.promptHint}</p>
          <div class="actions">
            <button type="submit" id="chat-send" safe>{t.send}</button>
            <button type="button" id="chat-stop" class="secondary" disabled safe>{t.stop}</button>
            <button type="button" id="chat-clear" class="secondary" safe>{t.clear}</button>
          </div>
          <Notice id="chat-msg" />
        </form>
      </section>
    </Layout>
  )
}
