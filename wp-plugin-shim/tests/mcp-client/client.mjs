// The shim suite's MCP client (test-9-mcp.php runs it): the official TypeScript SDK over
// Streamable HTTP, against WordPress's MCP Adapter, authenticated with an application
// password. It prints one JSON object, the transcript, and exits 0; an error exits 1 with
// the error in the transcript. The SDK checks each result against the tool's outputSchema
// by itself, so a result that breaks the schema is an error here.
//
//   node client.mjs SITE_URL USER APP_PASSWORD QUERY
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [site, user, password, query] = process.argv.slice(2);
const auth = "Basic " + Buffer.from(`${user}:${password}`).toString("base64");
const out = { default_server: {}, askwpd_server: {} };

async function connect(path) {
  const client = new Client({ name: "askwpd-shim-test", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(site + path), {
    requestInit: { headers: { Authorization: auth } },
  });
  await client.connect(transport);
  return { client, transport };
}

// The result of a call that returns JSON: its structured content.
function structured(res, what) {
  if (res.isError) {
    throw new Error(`${what}: ${JSON.stringify(res.content)}`);
  }
  return res.structuredContent;
}

async function defaultServer() {
  const o = out.default_server;
  const { client, transport } = await connect("/wp-json/mcp/mcp-adapter-default-server");
  o.session = transport.sessionId ? "yes" : "no";
  o.tools = (await client.listTools()).tools.map((t) => t.name);
  const found = structured(await client.callTool({ name: "mcp-adapter-discover-abilities", arguments: {} }), "discover");
  o.discovered = (found.abilities || []).map((a) => a.name).filter((n) => n.startsWith("askwpd/"));
  const info = structured(await client.callTool({ name: "mcp-adapter-get-ability-info", arguments: { ability_name: "askwpd/search-site" } }), "info");
  o.info = { name: info.name, label: info.label, has_output_schema: !!info.output_schema };
  const run = structured(await client.callTool({
    name: "mcp-adapter-execute-ability",
    arguments: { ability_name: "askwpd/search-site", parameters: { query } },
  }), "execute");
  o.execute = { success: run.success, results: (run.data?.results || []).map((r) => r.url) };
  await client.close();
}

async function askwpdServer() {
  const o = out.askwpd_server;
  const { client, transport } = await connect("/wp-json/askwpd/mcp");
  o.session = transport.sessionId ? "yes" : "no";
  o.server = client.getServerVersion();
  const tools = (await client.listTools()).tools;
  o.tools = tools.map((t) => ({ name: t.name, title: t.title, annotations: t.annotations, output_schema: !!t.outputSchema }));
  const res = structured(await client.callTool({ name: "askwpd-search-site", arguments: { query } }), "search");
  o.search = { action: res.action, evidence: res.evidence, results: [] };
  for (const hit of res.results.slice(0, 3)) {
    const q = structured(await client.callTool({ name: "askwpd-verify-quote", arguments: { url: hit.url, quote: hit.passage } }), "verify");
    o.search.results.push({
      url: hit.url, title: hit.title, start: hit.start, end: hit.end, passage: hit.passage.slice(0, 80),
      verified: { found: q.found, match: q.match, start: q.start, end: q.end },
    });
  }
  const bad = await client.callTool({ name: "askwpd-search-site", arguments: { query: "" } });
  o.bad_input = { isError: !!bad.isError, text: bad.content?.[0]?.text || "" };
  await client.close();
}

try {
  await defaultServer();
  await askwpdServer();
  console.log(JSON.stringify(out));
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
  console.log(JSON.stringify(out));
  process.exit(1);
}
