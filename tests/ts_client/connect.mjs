// An agent host built on the TypeScript MCP SDK, as small as one can be: it connects to the MCP URL
// given, runs the SDK's OAuth flow (discovery, registration, PKCE) and prints the authorization URL
// as a JSON line; whoever drives the browser gives consent there, and the browser's redirect lands
// on this script's loopback listener. Then it lists the tools, calls one and prints the result.
//
//   node connect.mjs <mcp url> [tool] [arguments as JSON]
//
// Every line on stdout is one JSON object: {"authorize": url}, then {"tools": [...], "result": {...},
// "client": {...}, "tokens": {...}}; on failure {"error": message} and exit status 1.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [url, tool = 'list_files', args = '{}'] = process.argv.slice(2);
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

// The loopback listener: the one place the authorization code arrives.
let answer;
const arrived = new Promise((resolve) => (answer = resolve));
const listener = http.createServer((req, res) => {
  const got = new URL(req.url, 'http://127.0.0.1');
  if (got.pathname !== '/callback') {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/plain' }).end('You may close this tab.');
  answer(got.searchParams);
});
await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
const redirectUrl = `http://127.0.0.1:${listener.address().port}/callback`;

/** What an agent host keeps (here, in memory): its registration, tokens and PKCE verifier. */
class Provider {
  constructor() {
    this.stateValue = randomBytes(16).toString('hex');
    this.kept = {};
  }
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: 'TS SDK Test Host',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    return this.stateValue;
  }
  clientInformation() {
    return this.kept.client;
  }
  saveClientInformation(info) {
    this.kept.client = info;
  }
  tokens() {
    return this.kept.tokens;
  }
  saveTokens(tokens) {
    this.kept.tokens = tokens;
  }
  redirectToAuthorization(authorizationUrl) {
    say({ authorize: authorizationUrl.toString() });
  }
  saveCodeVerifier(verifier) {
    this.kept.verifier = verifier;
  }
  codeVerifier() {
    return this.kept.verifier;
  }
}

const provider = new Provider();
const connect = async (transport) => {
  const client = new Client({ name: 'ts-sdk-test-host', version: '1.0.0' });
  await client.connect(transport);
  return client;
};

try {
  // finishAuth must be called on the transport that met the 401: it alone remembers the resource
  // metadata URL from WWW-Authenticate (behind a JupyterHub, the root well-known paths are the Hub's).
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await connect(first);
    throw new Error('connected without authorization');
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const params = await arrived;
  if (params.get('state') !== provider.stateValue) throw new Error('state came back changed');
  if (!params.get('code')) throw new Error(`no code: ${params.get('error')} ${params.get('error_description')}`);
  await first.finishAuth(params.get('code'));
  const client = await connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
  await client.close();
  const { access_token: access = '', refresh_token: refresh = '' } = provider.kept.tokens;
  say({
    tools,
    result,
    client: provider.kept.client,
    tokens: { access_prefix: access.slice(0, 5), has_refresh: Boolean(refresh) },
  });
} catch (error) {
  say({ error: String(error?.stack || error) });
  process.exitCode = 1;
} finally {
  listener.close();
}
