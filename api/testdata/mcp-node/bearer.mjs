// Supplies the bearer token on every request to the server under test, the
// way a client configured with a token does: the conformance suite has no
// option for one. Node's fetch and undici's request both go through the
// global dispatcher set here. Only requests to ASKWPD_MCP_URL's origin get
// the header.
import { Agent, setGlobalDispatcher } from 'undici';

const token = process.env.ASKWPD_MCP_TOKEN;
const origin = new URL(process.env.ASKWPD_MCP_URL).origin;
if (!token) throw new Error('bearer.mjs: ASKWPD_MCP_TOKEN is not set');

function withToken(headers) {
  const auth = `Bearer ${token}`;
  if (headers == null) return { authorization: auth };
  if (Array.isArray(headers)) {
    const out = [];
    for (let i = 0; i < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() !== 'authorization') out.push(headers[i], headers[i + 1]);
    }
    return [...out, 'authorization', auth];
  }
  const out = {};
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== 'authorization') out[k] = v;
  out.authorization = auth;
  return out;
}

class BearerAgent extends Agent {
  dispatch(opts, handler) {
    if (new URL(String(opts.origin)).origin === origin) opts = { ...opts, headers: withToken(opts.headers) };
    return super.dispatch(opts, handler);
  }
}

setGlobalDispatcher(new BearerAgent());
