// /ops/join-v2 (guided join of a machine) and /ops/inference (a chat box on the OpenAI-compatible
// route). Both need a session; the chip with name, Dashboard link and logout is in the header.
import { Layout, Notice, Table, type PageCtx } from './layout'

export function JoinPage(props: { ctx: PageCtx }) {
  return (
    <Layout ctx={props.ctx} title="Add a machine" script="join.js">
      <h1>Add a machine</h1>
      <p class="lead">Four steps take a GPU machine from nothing to online in one of your pools.</p>
      <ol class="steps">
        <li class="card">
          <h2>Choose a pool</h2>
          <label for="join-pool">Pool</label>
          <select id="join-pool" name="pool" aria-describedby="join-pool-hint">
            <option value="">Loading your pools…</option>
          </select>
          <p class="hint" id="join-pool-hint">
            Machines can join pools you belong to. No pool yet? <a href="/dashboard">Create one on the dashboard</a>.
          </p>
        </li>
        <li class="card">
          <h2>Create the join command</h2>
          <p>The command carries a join token for this pool. It works for 24 hours and for as many machines as the pool allows.</p>
          <div class="actions">
            <button type="button" id="mint-join">Create join command</button>
          </div>
          <div class="cmd">
            <pre id="join-cmd"></pre>
            <button type="button" id="copy-join" data-copy="join-cmd" data-copy-status="join-msg" disabled>Copy command</button>
          </div>
          <p id="join-expiry" class="hint"></p>
          <Notice id="join-msg" />
        </li>
        <li class="card">
          <h2>Run it on the machine</h2>
          <p>
            Open a terminal on the machine with the GPUs and paste the command. The machine needs Linux, the NVIDIA driver and a network path to{' '}
            <code safe>{props.ctx.baseUrl}</code>.
          </p>
        </li>
        <li class="card">
          <h2>Wait for it to come online</h2>
          <p id="wait-status" role="status" aria-live="polite">
            Create a join command first.
          </p>
          <ul id="new-nodes"></ul>
        </li>
      </ol>
    </Layout>
  )
}

export function InferencePage(props: { ctx: PageCtx }) {
  return (
    <Layout ctx={props.ctx} title="Inference" script="inference.js">
      <h1>Inference</h1>
      <p class="lead">Chat with a model served by the machines of your pools.</p>
      <section class="card" aria-labelledby="serving-title">
        <h2 id="serving-title">Who serves what</h2>
        <p class="hint">Machines of your pools serving each model now (only while their engine answers its health check), and how many requests each holds against what it takes at once.</p>
        <Table id="serving-body" caption="Models and the machines serving them" cols={['Model', 'Machine', 'Load']} />
      </section>
      <section class="card" aria-labelledby="chat-title">
        <h2 id="chat-title" class="sr-only">Chat</h2>
        <form id="chat-form" method="post">
          <label for="chat-model">Model</label>
          <input id="chat-model" name="model" type="text" list="model-list" required aria-describedby="model-hint" autocomplete="off" />
          <datalist id="model-list"></datalist>
          <p class="hint" id="model-hint">
            Loading the models you can use…
          </p>
          <details>
            <summary>Use a personal API token</summary>
            <label for="chat-token">API token (optional)</label>
            <input id="chat-token" name="token" type="password" autocomplete="off" aria-describedby="token-hint" />
            <p class="hint" id="token-hint">
              If the chat route asks for an API token, paste one here (<a href="/profile">create one on your profile</a>). It is kept in this tab only.
            </p>
          </details>
          <div id="chat-log" class="chat-log" role="log" aria-live="polite" aria-label="Conversation" tabindex="0">
            <p class="empty">No messages yet.</p>
          </div>
          <label for="chat-prompt">Message</label>
          <textarea id="chat-prompt" name="prompt" rows="3" required aria-describedby="prompt-hint"></textarea>
          <p class="hint" id="prompt-hint">Ctrl+Enter sends.</p>
          <div class="actions">
            <button type="submit" id="chat-send">Send</button>
            <button type="button" id="chat-stop" class="secondary" disabled>Stop</button>
            <button type="button" id="chat-clear" class="secondary">Clear conversation</button>
          </div>
          <Notice id="chat-msg" />
        </form>
      </section>
    </Layout>
  )
}
