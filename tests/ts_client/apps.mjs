// The server side of an MCP Apps host, on the TypeScript MCP SDK and the ext-apps SDK: it declares
// the Apps extension as VS Code or Cursor do, finds which tools carry a view (ext-apps'
// getToolUiResourceUri), reads that view's ui:// resource, and calls a tool whose result it would
// hand to the view. What the host would show the model and what it would give the view are printed.
//
//   node apps.mjs <mcp url> <jupyter token> <notebook path> [ui|plain]
//
// One JSON line on stdout; on failure {"error": message} and exit status 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
} from '@modelcontextprotocol/ext-apps/app-bridge';

const EXTENSION_ID = 'io.modelcontextprotocol/ui';
const [url, token, path, kind = 'ui'] = process.argv.slice(2);
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

try {
  const extensions = kind === 'ui' ? { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } : undefined;
  const client = new Client({ name: 'ts-apps-host', version: '1.0.0' }, { capabilities: { extensions } });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `token ${token}` } },
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const views = Object.fromEntries(
    tools.filter((t) => getToolUiResourceUri(t)).map((t) => [t.name, getToolUiResourceUri(t)]),
  );
  const forModel = tools.filter((t) => !isToolVisibilityAppOnly(t)).map((t) => t.name);
  const uri = Object.values(views)[0];
  const page = uri ? (await client.readResource({ uri })).contents[0] : null;
  const result = await client.callTool({ name: 'read_cells', arguments: { path } });
  say({
    views,
    forModel,
    listingBytes: Buffer.byteLength(JSON.stringify(tools)),
    page: page && { uri: page.uri, mimeType: page.mimeType, meta: page._meta, html: page.text },
    result,
  });
  await client.close();
} catch (error) {
  say({ error: String(error && error.stack ? error.stack : error) });
  process.exit(1);
}
