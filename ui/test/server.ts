/**
 * The server's MCP REST routes (`<base_url>/api/mcp/...`), answered in memory for the model's unit
 * tests: the real `McpApi` and `ServerConnection` make the requests; this answers them as the server
 * does, from its state, and counts them. `hold()` keeps answers back until released, as a slow
 * server would.
 */
import { ServerConnection } from '@jupyterlab/services';

import { IAgent, IApproval, ICredential, IEntry, IInfo, McpApi, PolicyMode } from '../src/api';

export const BASE = 'http://lab.test/';

export class TestServer {
  info: IInfo = {
    url: 'http://lab.test/mcp',
    token_required: true,
    snippets: { claude: 'claude mcp add --transport http jupyter http://lab.test/mcp', codex: 'url = "http://lab.test/mcp"' },
    token_snippets: { codex: 'url = "http://lab.test/mcp"\nbearer = "<TOKEN>"' }
  };
  sessions: IAgent[] = [];
  entries: IEntry[] = [];
  policy: PolicyMode = 'ask';
  approvals: IApproval[] = [];
  agents: ICredential[] = [];
  /** Routes answering an error status, e.g. `{ agents: [403, 'Forbidden'] }`. */
  failures: { [route: string]: [number, string] } = {};
  /** Answers to POSTs by route (revert, stop, ...). */
  answers: { [route: string]: [number, unknown] } = {};
  /** Requests made, as `GET sessions` or `POST revert {"entry":3}`. */
  requests: string[] = [];

  /** How many requests went to a route (`GET sessions`). */
  count(prefix: string): number {
    return this.requests.filter(r => r.startsWith(prefix)).length;
  }

  /** Answers wait until the returned function is called. */
  hold(): () => void {
    let release = () => {};
    this._held = new Promise<void>(resolve => (release = resolve));
    return () => {
      this._held = null;
      release();
    };
  }

  /** A model's `McpApi`, talking to this server. */
  api(): McpApi {
    return new McpApi(
      ServerConnection.makeSettings({ baseUrl: BASE, wsUrl: 'ws://lab.test/', token: 't', fetch: this.fetch })
    );
  }

  readonly fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request ? input : new Request(input, init);
    const url = new URL(request.url);
    const route = url.pathname.replace(/^\/api\/mcp\//, '');
    const body = request.method === 'GET' ? '' : await request.text();
    this.requests.push(`${request.method} ${route}${body ? ' ' + body : ''}`);
    const held = this._held;
    if (held) {
      await held;
    }
    const failure = this.failures[route];
    if (failure) {
      return json(failure[0], { message: failure[1] });
    }
    if (request.method !== 'GET') {
      const [status, answer] = this.answers[route] ?? [200, {}];
      return json(status, answer);
    }
    const lists: { [route: string]: unknown } = {
      info: this.info,
      sessions: { sessions: this.sessions },
      journal: { entries: this.entries },
      policy: { mode: this.policy },
      approvals: { approvals: this.approvals },
      agents: { agents: this.agents }
    };
    return route in lists ? json(200, lists[route]) : json(404, { message: `no route ${route}` });
  };

  private _held: Promise<void> | null = null;
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

/** An approval request as the server lists it. */
export function approval(id: string, code = 'print(1)'): IApproval {
  return {
    id,
    agent: 's1',
    kind: 'run',
    tool: 'execute_cells',
    client: 'Claude Code',
    path: 'a.ipynb',
    code,
    since: '2026-01-01T00:00:00Z'
  };
}

/** A session (a connected agent) as the server lists it. */
export function session(id: string, state: IAgent['state'] = 'idle'): IAgent {
  return {
    id,
    client: { name: 'claude-code', title: 'Claude Code' },
    user: 'person',
    since: '2026-01-01T00:00:00Z',
    state,
    display_name: 'Claude Code',
    username: 'claude',
    initials: 'CC',
    color: '#1f77b4'
  };
}
