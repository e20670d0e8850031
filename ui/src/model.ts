/**
 * The panel's state: what the server says about agents, their journal, the policy and pending
 * approvals. It refetches one list when the server's event names it (never polls), and tells the
 * views through `changed`.
 */
import { Event } from '@jupyterlab/services';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import {
  ACTIVITY_SCHEMA,
  AgentPolicy,
  ApiError,
  IAgent,
  IApproval,
  IEntry,
  IEntrySummary,
  ICredential,
  IInfo,
  IMinted,
  IRevertResult,
  IStopResult,
  McpApi,
  PolicyMode
} from './api';

/**
 * The lists the server's activity events name (`kind` in the event's data); `agent` (the
 * credentials) is refetched with `session`, which the server emits when one changes.
 */
export type ListKind = 'session' | 'journal' | 'policy' | 'approval' | 'agent';
const LISTS: ListKind[] = ['session', 'journal', 'policy', 'approval', 'agent'];

/** The set-ups that can carry a header (Claude Code's is a command line: it never gets a token). */
export const TOKEN_HOSTS = ['codex', 'cursor', 'vscode', 'json'];

/** How long the feed waits after an event before it refetches (a burst of events: one fetch). */
const FEED_DELAY_MS = 150;

/** How many journal entries the feed shows. */
export const FEED_LIMIT = 200;

/** The domain of the extension's strings in JupyterLab's language packs. */
export const TRANSLATION_DOMAIN = 'jupyter-mcp-ext';

export class McpModel {
  constructor(
    readonly api: McpApi,
    events: ISignal<unknown, Event.Emission> | null,
    /** Every string a person reads goes through it (the views read it from the model). */
    readonly trans: TranslationBundle = nullTranslator.load(TRANSLATION_DOMAIN)
  ) {
    events?.connect(this._onEvent, this);
  }

  info: IInfo | null = null;
  sessions: IAgent[] = [];
  /** The agents the person let in (credentials), each with its live sessions. */
  agents: ICredential[] = [];
  /** The agent token minted last, shown until the person dismisses it; never fetched again. */
  minted: IMinted | null = null;
  entries: IEntry[] = [];
  policy: PolicyMode | null = null;
  approvals: IApproval[] = [];
  /** The last failure or result worth telling the person (a revert conflict, a stop). */
  message: { text: string; level: 'info' | 'error' } | null = null;

  /** Emitted after any state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted once per approval request the panel had not seen before. */
  get approvalRequested(): ISignal<this, IApproval> {
    return this._approvalRequested;
  }

  /** Emitted with the id of an approval that is no longer pending. */
  get approvalSettled(): ISignal<this, string> {
    return this._approvalSettled;
  }

  /** Emitted when the server says the journal or its review changed (an edit, a Keep, an Undo, a checkpoint). */
  get journalChanged(): ISignal<this, void> {
    return this._journalChanged;
  }

  /** Emitted with each journal entry an event carries (added, kept or undone): marks follow it without a fetch. */
  get journalEntry(): ISignal<this, IEntrySummary> {
    return this._journalEntry;
  }

  /** Agents whose id the feed can name. */
  agent(id: string): IAgent | undefined {
    return this.sessions.find(a => a.id === id);
  }

  /** Number of agents connected, and whether any runs code or waits for approval. */
  get activity(): { agents: number; running: boolean; waiting: boolean } {
    return {
      agents: this.sessions.length,
      running: this.sessions.some(a => a.state === 'running'),
      waiting: this.approvals.length > 0 || this.sessions.some(a => a.state === 'waiting')
    };
  }

  /** Fetch everything once (on start, and when the person asks). */
  async refreshAll(): Promise<void> {
    await Promise.all([this._loadInfo(), ...LISTS.map(kind => this.refresh(kind))]);
  }

  /**
   * Refetch one list. Calls that arrive while one is in flight are folded into one more fetch
   * after it, so a burst of events costs two requests, not one per event.
   */
  async refresh(kind: ListKind): Promise<void> {
    const state = this._fetching.get(kind);
    if (state) {
      state.again = true;
      return state.done;
    }
    const entry = { again: false, done: Promise.resolve() };
    entry.done = (async () => {
      try {
        do {
          entry.again = false;
          await this._load(kind);
        } while (entry.again);
      } finally {
        this._fetching.delete(kind);
      }
    })();
    this._fetching.set(kind, entry);
    return entry.done;
  }

  /**
   * The set-up text for `name`: the URL alone (the host signs in), or, while a minted agent token
   * is on screen, a file-based set-up with `Authorization: Bearer <that token>`.
   */
  snippet(name: string): string {
    const withToken = this.info?.token_snippets?.[name];
    if (this.minted !== null && TOKEN_HOSTS.includes(name) && withToken !== undefined) {
      return withToken.split('<TOKEN>').join(this.minted.token);
    }
    return this.info?.snippets[name] ?? '';
  }

  /** Mint a named agent token; it is shown once (`minted`), only its hash stays on the server. */
  async mint(name: string, policy: AgentPolicy): Promise<IMinted | null> {
    const minted = await this._guard(() => this.api.mintAgent(name, policy), null);
    if (minted) {
      this.minted = minted;
      this._changed.emit();
      await this.refresh('agent');
    }
    return minted;
  }

  /** Forget the minted token (the person has copied it): the set-ups go back to the URL alone. */
  dismissMinted(): void {
    this.minted = null;
    this._changed.emit();
  }

  async setAgentPolicy(id: string, policy: AgentPolicy): Promise<void> {
    await this._guard(() => this.api.setAgentPolicy(id, policy), null);
    await this.refresh('agent');
  }

  async revokeAgent(id: string): Promise<void> {
    const result = await this._guard(() => this.api.revokeAgent(id), null);
    if (result) {
      this._say(
        this.trans.__('Revoked: its token is refused from now on; %1 session(s) ended.', result.sessions_ended),
        'info'
      );
    }
    await Promise.all([this.refresh('agent'), this.refresh('session')]);
  }

  async setPolicy(mode: PolicyMode): Promise<void> {
    const set = await this._guard(() => this.api.setPolicy(mode), null);
    if (set) {
      this.policy = set;
      this._changed.emit();
    }
  }

  async decide(id: string, decision: 'approve' | 'deny', restOfTurn = false): Promise<void> {
    await this._guard(() => this.api.decide(id, decision, restOfTurn), null);
    await this.refresh('approval');
  }

  async revertEntry(entry: number): Promise<IRevertResult | null> {
    return this._reverted(await this._guard(() => this.api.revertEntry(entry), null));
  }

  async revertSince(agent: string, since: number): Promise<IRevertResult | null> {
    return this._reverted(await this._guard(() => this.api.revertSince(agent, since), null));
  }

  async stop(): Promise<IStopResult | null> {
    const result = await this._guard(() => this.api.stop(), null);
    if (result) {
      this._say(
        this.trans.__(
          'Stopped: %1 call(s) cancelled, %2 run(s) interrupted, %3 session(s) ended.',
          result.cancelled,
          result.interrupted,
          result.sessions_ended
        ),
        'info'
      );
    }
    await Promise.all([this.refresh('session'), this.refresh('approval')]);
    return result;
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private _onEvent(_: unknown, event: Event.Emission): void {
    if (event.schema_id !== ACTIVITY_SCHEMA) {
      return;
    }
    const { kind, seq, entry } = event as { kind?: string; seq?: number; entry?: IEntrySummary };
    // A count skipped (an event lost) or gone back (the server restarted): the marks read the journal.
    const gap = typeof seq === 'number' && this._seq !== null && seq !== this._seq + 1;
    this._seq = typeof seq === 'number' ? seq : this._seq;
    if (kind === 'journal' && entry && !gap) {
      this._journalEntry.emit(entry);
    } else if (kind === 'journal' || kind === 'checkpoint' || kind === 'stop' || gap) {
      this._journalChanged.emit();
    }
    if (kind === 'stop') {
      LISTS.filter(list => list !== 'policy').forEach(list => void this.refresh(list));
    } else if (kind === 'journal') {
      this._feedSoon();
    } else if (kind === 'session' || kind === 'policy' || kind === 'approval') {
      void this.refresh(kind);
      if (kind === 'session') {
        // An agent's state decides the feed's colours and names, and its journal may have grown;
        // a credential's policy or revocation is announced as a session change too.
        this._feedSoon();
        void this.refresh('agent');
      }
    }
  }

  /**
   * Refetch the feed a little later, once for a burst of events: an agent's call announces itself
   * (editing), its entry and its end (idle), and the review marks, which follow the entry's event
   * itself, must not wait behind the page handling three feeds.
   */
  private _feedSoon(): void {
    if (this._feedTimer === null) {
      this._feedTimer = setTimeout(() => {
        this._feedTimer = null;
        void this.refresh('journal');
      }, FEED_DELAY_MS);
    }
  }

  private async _loadInfo(): Promise<void> {
    this.info = await this._guard(() => this.api.info(), this.info);
    this._changed.emit();
  }

  private async _load(kind: ListKind): Promise<void> {
    switch (kind) {
      case 'session':
        this.sessions = await this._guard(() => this.api.sessions(), this.sessions);
        break;
      case 'journal':
        this.entries = await this._guard(() => this.api.journal(FEED_LIMIT), this.entries);
        break;
      case 'policy':
        this.policy = await this._guard(() => this.api.policy(), this.policy);
        break;
      case 'agent':
        // A person who may not run code may not manage agents (403): an empty list, not an error.
        this.agents = await this._guard(
          () =>
            this.api.agents().catch(error =>
              error instanceof ApiError && error.status === 403 ? [] : Promise.reject(error)
            ),
          this.agents
        );
        break;
      case 'approval': {
        const approvals = await this._guard(() => this.api.approvals(), this.approvals);
        const now = new Set(approvals.map(a => a.id));
        const before = new Set(this.approvals.map(a => a.id));
        this.approvals = approvals;
        this._changed.emit();
        approvals.filter(a => !before.has(a.id)).forEach(a => this._approvalRequested.emit(a));
        [...before].filter(id => !now.has(id)).forEach(id => this._approvalSettled.emit(id));
        return;
      }
    }
    this._changed.emit();
  }

  private async _reverted(result: IRevertResult | null): Promise<IRevertResult | null> {
    if (result) {
      const conflicts = result.conflicts.map(c => `#${c.entry}: ${c.reason}`).join('; ');
      if (result.reverted.length === 0) {
        this._say(this.trans.__('Nothing reverted. %1', conflicts), 'error');
      } else {
        const reverted = this.trans.__('Reverted %1 change(s).', result.reverted.length);
        const refused = conflicts ? ' ' + this.trans.__('Not reverted: %1', conflicts) : '';
        this._say(reverted + refused, conflicts ? 'error' : 'info');
      }
      await this.refresh('journal');
    }
    return result;
  }

  /** Runs a call; on failure keeps `fallback` and shows the error instead of throwing. */
  private async _guard<T>(call: () => Promise<T>, fallback: T): Promise<T> {
    try {
      return await call();
    } catch (error) {
      this._say(error instanceof Error ? error.message : String(error), 'error');
      return fallback;
    }
  }

  private _say(text: string, level: 'info' | 'error'): void {
    this.message = { text, level };
    this._changed.emit();
  }

  private _changed = new Signal<this, void>(this);
  private _approvalRequested = new Signal<this, IApproval>(this);
  private _approvalSettled = new Signal<this, string>(this);
  private _journalChanged = new Signal<this, void>(this);
  private _journalEntry = new Signal<this, IEntrySummary>(this);
  private _seq: number | null = null;
  private _feedTimer: ReturnType<typeof setTimeout> | null = null;
  private _fetching = new Map<ListKind, { again: boolean; done: Promise<void> }>();
}
