// The official TypeScript SDK client against a real `askwpd serve` on the
// test WordPress, over Streamable HTTP with the bearer token. Run by
// cmd/askwpd's TestMCP_OfficialClients, which starts the daemon and sets:
//   ASKWPD_MCP_URL, ASKWPD_MCP_TOKEN  the endpoint and its token
//   ASKWPD_URL, ASKWPD_STATE_DIR      the daemon, and where webhook.secret is
//   ASKWPD_VERSION                    what askwpd --version printed
//   WP_ROOT, SITE_URL                 the test WordPress
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const mcpURL = env('ASKWPD_MCP_URL');
const token = env('ASKWPD_MCP_TOKEN');
const daemonURL = env('ASKWPD_URL');
const secret = readFileSync(join(env('ASKWPD_STATE_DIR'), 'webhook.secret'), 'utf8').trim();
const siteURL = env('SITE_URL');
const wpRoot = env('WP_ROOT');
// The acceptance bound from a webhook to the page leaving resources/read.
const freshnessMs = 1000;

// php runs code inside WordPress, as internal/wptest's Site.PHP does.
function php(code) {
  const host = new URL(siteURL).host;
  const script = `$_SERVER['HTTP_HOST'] = '${host}'; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); ` +
    `require '${wpRoot.replace(/\/$/, '')}/wp-load.php'; ${code}`;
  return execFileSync('php', ['-r', script], { encoding: 'utf8' });
}

// sendEvent signs one webhook event as the shim does and posts it.
let eventN = 0;
async function sendEvent(ev) {
  const body = JSON.stringify({ events: [{ id: `sdk-${Date.now()}-${++eventN}`, ...ev }] });
  const ts = String(Math.floor(Date.now() / 1000));
  const sig = 'sha256=' + createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
  const r = await fetch(`${daemonURL}/v1/events`, {
    method: 'POST', body,
    headers: { 'Content-Type': 'application/json', 'X-Askwpd-Timestamp': ts, 'X-Askwpd-Signature': sig },
  });
  assert.equal(r.status, 202, `event ${ev.type}: ${r.status} ${await r.text()}`);
}

// A made-up word no page holds, letters only (see wptest.Word).
const word = (p) => p + Array.from(randomBytes(8), (b) => String.fromCharCode(97 + (b % 26))).join('');

const client = new Client({ name: 'askwpd-sdk-test', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(mcpURL), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const updates = [];
const waiters = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updates.push({ uri: n.params.uri, at: performance.now() });
  for (const w of waiters.splice(0)) w();
});

// The test post: long enough that extraction keeps its text.
const marker = word('zq');
const lines = [
  `The ${marker} lighthouse keeps a logbook of every ship that passes the northern reef at night.`,
  `Keepers trim the lamp wick at dusk, polish the lens at dawn, and record the oil burnt in each watch.`,
  `In winter storms the ${marker} keeper climbs the tower every hour to check that the light still turns.`,
  `Visitors may tour the gallery on summer afternoons when the weather is calm and the sea is quiet.`,
];
const post = JSON.parse(php(`$id = wp_insert_post(array('post_title' => 'Lighthouse log ${marker}', ` +
  `'post_content' => '${lines.map((l) => `<p>${l}</p>`).join('')}', 'post_status' => 'publish'), true); ` +
  `if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); } ` +
  `echo json_encode(array('id' => $id, 'url' => get_permalink($id)));`).replace(/^[^{]*/, ''));
after(async () => {
  php(`wp_delete_post(${post.id}, true);`);
  await client.close();
});
await sendEvent({ type: 'post_published', post_id: post.id, post_type: 'post', url: post.url, status: 'publish', public: true });

let tools;

test('serverInfo names askwpd and its build version', () => {
  const info = client.getServerVersion();
  assert.equal(info.name, 'askwpd');
  assert.equal(info.version, env('ASKWPD_VERSION'));
  const caps = client.getServerCapabilities();
  assert.ok(caps.tools && caps.prompts && caps.resources?.subscribe, JSON.stringify(caps));
});

test('every tool has a title, read-only annotations and an output schema', async () => {
  ({ tools } = await client.listTools());
  assert.equal(tools.length, 6);
  for (const t of tools) {
    assert.ok(t.title, `${t.name}: no title`);
    assert.equal(t.annotations?.readOnlyHint, true, `${t.name}: readOnlyHint`);
    assert.equal(typeof t.annotations?.idempotentHint, 'boolean', `${t.name}: idempotentHint`);
    assert.equal(t.annotations?.openWorldHint === true, t.name === 'askwp_fetch_live_url', `${t.name}: openWorldHint`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name}: outputSchema`);
  }
});

let hit;

test('search_site: hits link to their pages, structuredContent validates', async () => {
  let res;
  for (let i = 0; i < 50; i++) { // the post was published a moment ago
    res = await client.callTool({ name: 'askwp_search_site', arguments: { query: `${marker} lighthouse` } });
    if (res.structuredContent?.results?.some((r) => r.url === post.url)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(!res.isError, JSON.stringify(res.content));
  hit = res.structuredContent.results[0];
  assert.equal(hit?.url, post.url, `the first hit is not the test post: ${JSON.stringify(res.structuredContent.results.map((r) => r.url))}`);
  const links = res.content.filter((c) => c.type === 'resource_link');
  assert.equal(links[0]?.uri, `askwpd://page/${hit.url}`);
  assert.equal(links[0]?.mimeType, 'text/markdown');
  const search = tools?.find((t) => t.name === 'askwp_search_site');
  assert.ok(search?.outputSchema, 'search_site has no outputSchema');
  const ajv = new Ajv2020({ strict: false });
  const validate = ajv.compile(search.outputSchema);
  assert.ok(validate(res.structuredContent), ajv.errorsText(validate.errors));
});

test("the first hit's page, read as a resource, holds its passage at its offsets", async () => {
  assert.ok(hit, 'no hit');
  const { contents } = await client.readResource({ uri: `askwpd://page/${hit.url}` });
  assert.equal(contents.length, 1);
  const [c] = contents;
  assert.equal(c.mimeType, 'text/markdown');
  // Offsets count code points, as the store's do.
  assert.equal(Array.from(c.text).slice(hit.start, hit.end).join(''), hit.passage);
  const meta = c._meta?.['askwpd/page'];
  assert.equal(meta?.url, hit.url);
  assert.equal(meta?.title, hit.title);
  assert.equal(meta?.modified, hit.modified);
});

test('resources/list pages through every page, the test post among them', async () => {
  const seen = new Set();
  let cursor;
  do {
    const res = await client.listResources(cursor ? { cursor } : {});
    for (const r of res.resources) {
      assert.ok(!seen.has(r.uri), `${r.uri} listed twice`);
      seen.add(r.uri);
      assert.ok(r.name && r.mimeType === 'text/markdown', JSON.stringify(r));
    }
    cursor = res.nextCursor;
  } while (cursor);
  assert.ok(seen.has(`askwpd://page/${post.url}`), 'the test post is not listed');
  for (const uri of seen) assert.ok(!/secret-/.test(uri), `a private page is listed: ${uri}`);
});

test('answer_from_site carries the evidence policy and the question', async () => {
  const { prompts } = await client.listPrompts();
  assert.deepEqual(prompts.map((p) => p.name), ['answer_from_site']);
  const res = await client.getPrompt({ name: 'answer_from_site', arguments: { question: 'Who trims the wick?' } });
  const text = res.messages[0].content.text;
  for (const w of ['Who trims the wick?', 'verbatim', 'askwp_search_site', 'URL']) assert.ok(text.includes(w), `prompt lacks ${w}`);
});

test('a page made private leaves resources/read within the bound, and its subscriber is told', async () => {
  const uri = `askwpd://page/${post.url}`;
  await client.subscribeResource({ uri });
  php(`wp_update_post(array('ID' => ${post.id}, 'post_status' => 'private'));`);
  const notified = new Promise((resolve) => {
    if (updates.some((u) => u.uri === uri)) resolve();
    else waiters.push(resolve);
  });
  const t0 = performance.now();
  await sendEvent({ type: 'post_unpublished', post_id: post.id, post_type: 'post', url: post.url, status: 'private', public: false });
  let goneMs;
  for (;;) {
    try {
      await client.readResource({ uri });
    } catch (e) {
      assert.match(String(e), /Resource not found/);
      goneMs = performance.now() - t0;
      break;
    }
    assert.ok(performance.now() - t0 < freshnessMs + 5000, 'the private page is still readable');
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.race([notified, new Promise((_, rej) => setTimeout(() => rej(new Error('no resources/updated')), freshnessMs + 5000))]);
  const notifiedMs = updates.find((u) => u.uri === uri).at - t0;
  console.log(`# private page: resources/read not found after ${goneMs.toFixed(0)} ms, resources/updated after ${notifiedMs.toFixed(0)} ms`);
  assert.ok(goneMs <= freshnessMs, `read still answered ${goneMs.toFixed(0)} ms after the webhook`);
  assert.ok(notifiedMs <= freshnessMs, `notified ${notifiedMs.toFixed(0)} ms after the webhook`);
  // And it is in no listing or search either.
  const res = await client.callTool({ name: 'askwp_search_site', arguments: { query: `${marker} lighthouse` } });
  assert.ok(!res.structuredContent.results.some((r) => r.url === post.url), 'the private post is still found');
  const page = await client.listResources({});
  assert.ok(!page.resources.some((r) => r.uri === uri), 'the private post is still listed');
});
