/**
 * Every call the panel makes to the server, in one place (the routes of docs/api.md,
 * under `<base_url>/api/mcp/`). `ServerConnection` adds the token and the XSRF header.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** The schema of the server's activity events on Jupyter's event bus. */
export const ACTIVITY_SCHEMA = 'https://jupyter-mcp-ext.readthedocs.io/events/activity';

export type AgentState = 'idle' | 'editing' | 'running' | 'waiting';
export type PolicyMode = 'off' | 'read-only' | 'ask' | 'full';
export const POLICY_MODES: PolicyMode[] = ['off', 'read-only', 'ask', 'full'];

/** The policies a person can give one agent (the server's policy stays a ceiling over it). */
export type AgentPolicy = 'read-only' | 'ask' | 'full';
export const AGENT_POLICIES: AgentPolicy[] = ['read-only', 'ask', 'full'];

export interface IInfo {
  url: string;
  token_required: boolean;
  /** Each host's set-up with the URL alone: the host signs in (OAuth). */
  snippets: { [name: string]: string };
  /** The file-based set-ups with `Authorization: Bearer <TOKEN>`, for a minted agent token. */
  token_snippets?: { [name: string]: string };
  /** Other extensions routing the same path (answers: theirs is what agents reach). */
  conflicts?: { handler: string; extension: string; answers: boolean; message: string }[];
}

export interface IAgent {
  id: string;
  client: { name: string; version?: string; title?: string };
  user: string;
  /** What people know it by: its credential's name (the one the person approved), the client's own
   * name in brackets when that differs; on the person's own token, the client's name. */
  name?: string;
  since: string;
  last_call?: string;
  path?: string | null;
  cell_id?: string | null;
  state: AgentState;
  display_name: string;
  username: string;
  initials: string;
  color: string;
  /** What it authenticated with: an agent credential of its own, or the person's Jupyter token. */
  credential?: { kind: 'agent'; id: string; name: string; policy: AgentPolicy } | { kind: 'jupyter'; label: string };
}

/** An agent the person let in (signed in, or a minted token), with its live sessions. */
export interface ICredential {
  id: string;
  name: string;
  user: string;
  user_display: string;
  policy: AgentPolicy;
  /** "token" (minted by hand) or the OAuth client's registered name. */
  client: string;
  /** true: its client's metadata document was fetched; false: the client named itself (unverified);
   * null: the person named it. */
  name_verified?: boolean | null;
  created: string;
  last_used: string | null;
  sessions: IAgent[];
}

/** A freshly minted agent token: the only time the panel ever sees it. */
export interface IMinted {
  agent: ICredential;
  token: string;
}

export interface IChange {
  cell_id: string;
  kind: 'insert' | 'update' | 'delete' | 'move' | 'outputs' | 'file';
  before: string | null;
  after: string | null;
  /** A deleted cell's place: the cells just after and before which it was, its index and type. */
  where?: { after: string | null; before: string | null; index: number; type?: string | null };
}

/** A journal entry as its event carries it: what a review mark needs, no texts, no person's name. */
export interface IEntrySummary {
  id: number;
  time: string;
  agent: string;
  client: string;
  tool: string;
  path?: string | null;
  revertible: boolean;
  review: { state: 'pending' | 'kept' | 'undone'; cells: string[] } | null;
  changes: { cell_id: string; kind: IChange['kind']; where?: IChange['where'] }[];
  /** Changes the event left out: the mark reads the journal for them. */
  more_changes: number;
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
  /** A person's review of it (null when it changed nothing); `cells`: cell id (or "*") -> who kept it. */
  review?: {
    state: 'pending' | 'kept' | 'undone';
    by: { user: string; name: string; at?: string } | null;
    cells: { [cell: string]: { user: string; name: string; at?: string } };
  } | null;
}

/** The two sides of a cell's diff: its text without the agents' pending changes, and now. */
export interface ICellDiff {
  path: string;
  cell_id: string;
  original: string;
  current: string;
  /** False when the original is the text before the oldest change (people edited the agent's text). */
  exact: boolean;
  entries: number[];
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

  /** The newest entries on one notebook (the server keeps at most 1,000 per answer). */
  async journalOf(path: string, limit = 1000): Promise<IEntry[]> {
    return (await this._request<{ entries: IEntry[] }>(`journal?limit=${limit}&path=${encodeURIComponent(path)}`))
      .entries;
  }

  /** Keep what agents changed in one cell (`cellId`), or every pending change on the notebook. */
  keep(path: string, cellId?: string): Promise<{ kept?: number[]; message?: string }> {
    return this._request('keep', cellId === undefined ? { path } : { path, cell_id: cellId }, [409]);
  }

  /** Keep these entries whole, all or (when one is settled already) none. */
  keepEntries(ids: number[]): Promise<{ kept?: number[]; message?: string }> {
    return this._request('keep', { entries: ids }, [409]);
  }

  /** Undo the pending agent changes in one cell; a 409 answers why nothing changed. */
  undoCell(path: string, cellId: string): Promise<Partial<IRevertResult> & { message?: string }> {
    return this._request('revert', { path, cell_id: cellId }, [409]);
  }

  /** What the cell held before the agents' changes waiting for review (a 409 says why there is none). */
  reviewDiff(path: string, cellId: string): Promise<ICellDiff & { message?: string }> {
    const query = `path=${encodeURIComponent(path)}&cell_id=${encodeURIComponent(cellId)}`;
    return this._request(`review/diff?${query}`, undefined, [404, 409]);
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

  async agents(): Promise<ICredential[]> {
    return (await this._request<{ agents: ICredential[] }>('agents')).agents;
  }

  mintAgent(name: string, policy: AgentPolicy): Promise<IMinted> {
    return this._request('agents', { name, policy });
  }

  async setAgentPolicy(id: string, policy: AgentPolicy): Promise<ICredential> {
    return (await this._request<{ agent: ICredential }>(`agents/${encodeURIComponent(id)}`, { policy })).agent;
  }

  revokeAgent(id: string): Promise<{ revoked: string; sessions_ended: number }> {
    return this._request(`agents/${encodeURIComponent(id)}`, undefined, [], 'DELETE');
  }

  /** GET, or POST when there is a body; `accept` lists error statuses whose JSON body is the answer. */
  private async _request<T>(route: string, body?: unknown, accept: number[] = [], method?: string): Promise<T> {
    const url = URLExt.join(this.settings.baseUrl, 'api/mcp', route);
    const init: RequestInit =
      body === undefined ? { method: method ?? 'GET' } : { method: method ?? 'POST', body: JSON.stringify(body) };
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
