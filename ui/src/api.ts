/**
 * Every call the panel makes to the server, in one place (the routes of API-CONTRACT.md,
 * under `<base_url>/api/mcp/`). `ServerConnection` adds the token and the XSRF header.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** The schema of the server's activity events on Jupyter's event bus. */
export const ACTIVITY_SCHEMA = 'https://jupyter-mcp-ext.readthedocs.io/events/activity';

export type AgentState = 'idle' | 'editing' | 'running' | 'waiting';
export type PolicyMode = 'off' | 'read-only' | 'ask' | 'full';
export const POLICY_MODES: PolicyMode[] = ['off', 'read-only', 'ask', 'full'];

export interface IInfo {
  url: string;
  token_required: boolean;
  snippets: { [name: string]: string };
}

export interface IAgent {
  id: string;
  client: { name: string; version?: string; title?: string };
  user: string;
  since: string;
  last_call?: string;
  path?: string | null;
  cell_id?: string | null;
  state: AgentState;
  display_name: string;
  username: string;
  initials: string;
  color: string;
}

export interface IChange {
  cell_id: string;
  kind: 'insert' | 'update' | 'delete' | 'move' | 'outputs' | 'file';
  before: string | null;
  after: string | null;
}

export interface IEntry {
  id: number;
  time: string;
  agent: string;
  client: string;
  user: string;
  tool: string;
  path?: string | null;
  cell_ids?: string[];
  outcome: 'ok' | 'error' | 'denied';
  error?: string | null;
  duration_ms?: number | null;
  revertible: boolean;
  reverted: boolean;
  /** Who reverted it (Jupyter's user and display name) and when; null until reverted. */
  reverted_by?: { user: string; name: string; at: string } | null;
  changes?: IChange[];
  note?: string | null;
}

export interface IApproval {
  id: string;
  agent: string;
  client: string;
  tool: string;
  path?: string | null;
  kind: 'run' | 'delete' | 'write';
  code?: string | null;
  change?: string | null;
  /** Whether code, change, path or client name hold invisible or control characters. */
  hidden_controls?: boolean;
  /** What "the rest of this turn" lets through: this many more calls of the tool on the path, for so long. */
  rest_of_turn?: { calls: number; seconds: number };
  since: string;
}

export interface IRevertResult {
  reverted: number[];
  conflicts: { entry: number; cell_id?: string; reason: string }[];
}

export interface IStopResult {
  cancelled: number;
  interrupted: number;
  sessions_ended: number;
}

/** A failed call, with the server's own message when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown = null
  ) {
    super(message);
  }
}

/** The server's MCP API, as the panel uses it. */
export class McpApi {
  constructor(readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  info(): Promise<IInfo> {
    return this._request('info');
  }

  async token(): Promise<string> {
    return (await this._request<{ token: string }>('token')).token;
  }

  async sessions(): Promise<IAgent[]> {
    return (await this._request<{ sessions: IAgent[] }>('sessions')).sessions;
  }

  async journal(limit = 200, agent?: string): Promise<IEntry[]> {
    const query = agent ? `?limit=${limit}&agent=${encodeURIComponent(agent)}` : `?limit=${limit}`;
    return (await this._request<{ entries: IEntry[] }>(`journal${query}`)).entries;
  }

  revertEntry(entry: number): Promise<IRevertResult> {
    return this._request('revert', { entry }, [409]);
  }

  revertSince(agent: string, since: number): Promise<IRevertResult> {
    return this._request('revert', { agent, since }, [409]);
  }

  async policy(): Promise<PolicyMode> {
    return (await this._request<{ mode: PolicyMode }>('policy')).mode;
  }

  async setPolicy(mode: PolicyMode): Promise<PolicyMode> {
    return (await this._request<{ mode: PolicyMode }>('policy', { mode })).mode;
  }

  async approvals(): Promise<IApproval[]> {
    return (await this._request<{ approvals: IApproval[] }>('approvals')).approvals;
  }

  async decide(id: string, decision: 'approve' | 'deny', restOfTurn = false): Promise<void> {
    await this._request(`approvals/${encodeURIComponent(id)}`, { decision, rest_of_turn: restOfTurn });
  }

  stop(): Promise<IStopResult> {
    return this._request('stop', {});
  }

  /** GET, or POST when there is a body; `accept` lists error statuses whose JSON body is the answer. */
  private async _request<T>(route: string, body?: unknown, accept: number[] = []): Promise<T> {
    const url = URLExt.join(this.settings.baseUrl, 'api/mcp', route);
    const init: RequestInit =
      body === undefined ? { method: 'GET' } : { method: 'POST', body: JSON.stringify(body) };
    const response = await ServerConnection.makeRequest(url, init, this.settings);
    const text = await response.text();
    let data: any = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok && !accept.includes(response.status)) {
      const message = (data && (data.message || data.reason)) || `${response.status} ${response.statusText}`;
      throw new ApiError(response.status, `${route}: ${message}`, data);
    }
    return data as T;
  }
}
