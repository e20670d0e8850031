/**
 * The review marks of a notebook: a cell an agent changed that nobody kept or undid yet shows the
 * agent's colour at its edge and "<agent> changed this · <when> · Undo · Keep"; a review bar over the
 * notebook counts them, with Keep all / Undo all (`reviewbar.ts`). The server's journal is the truth, shared by every
 * person: each journal event carries the entry it names, so marks follow agents and other people live
 * without a fetch; the journal is read when the notebook opens and when an event was missed. Cells an
 * agent deleted leave a placeholder where they were (`placeholders.ts`).
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { ISignal, Signal } from '@lumino/signaling';

import { TranslationBundle } from '@jupyterlab/translation';

import { IEntry, IEntrySummary } from './api';
import { CellDiffs } from './mergeview';
import { McpModel } from './model';
import { DeletedCells } from './placeholders';
import { agentName, hhmm, reviewButton } from './views/format';
import { visibleText } from './views/visible';

const REVIEWED = 'jp-mcp-mod-reviewCell';
/** Entries of the notebook held for its marks: what one read of its journal answers. */
const ENTRIES_KEPT = 1000;
const REVIEW = 'jp-mcp-ReviewMark';
/** Agents' names and colours by session id, as their sessions said while alive. */
const SEEN = new Map<string, { name: string; color: string }>();

/** What waits for review in one cell: who changed it, how, since when. */
export interface ICellReview {
  /** By name: two sessions of one client are one agent to the person. */
  agents: Map<string, { name: string; color: string }>;
  /** added (an insert), changed (an edit), ran (outputs only). */
  how: 'added' | 'changed' | 'ran';
  newest: string;
}

/** `Claude Code and Cursor`: the agents of a cell, as a person reads them. */
export function names(trans: TranslationBundle, agents: Iterable<{ name: string }>): string {
  const all = [...agents].map(a => visibleText(a.name));
  return all.length > 1
    ? trans.__('%1 and %2', all.slice(0, -1).join(', '), all[all.length - 1])
    : all[0] ?? trans.__('an agent');
}

/** The review marks of one notebook: each pending agent change in its cell, and the review bar on top. */
export class ReviewMarks {
  constructor(
    readonly panel: NotebookPanel,
    readonly model: McpModel
  ) {
    this.deleted = new DeletedCells(panel, model, entry => this._agentOf(entry), () => this.refresh());
    model.journalChanged.connect(this.refresh, this);
    model.journalEntry.connect(this._onEntry, this);
    model.changed.connect(this.render, this); // an agent's name and colour come with the sessions
    panel.content.model?.cells.changed.connect(this.render, this);
    void panel.context.ready.then(() => this.refresh());
  }

  /** The cells waiting for review, by cell id, in notebook order. */
  pending = new Map<string, ICellReview>();

  /** Emitted after each render: what waits for review may have changed (the review bar follows it). */
  get rendered(): ISignal<this, void> {
    return this._rendered;
  }

  /** The journal entries on this notebook that wait for review, newest first. */
  get pendingEntries(): IEntry[] {
    return this._entries.filter(e => e.review?.state === 'pending');
  }

  /** Marks of one line: the agent and the buttons, without "changed this" and the time. */
  get compact(): boolean {
    return this._compact;
  }

  set compact(value: boolean) {
    if (value !== this._compact) {
      this._compact = value;
      this.render();
    }
  }

  /** Refetch this notebook's journal (a burst of events folds into one more fetch). */
  async refresh(): Promise<void> {
    if (this._fetching) {
      this._again = true;
      return;
    }
    this._fetching = true;
    try {
      do {
        this._again = false;
        try {
          this._entries = await this.model.api.journalOf(this.panel.context.path);
        } catch {
          // keep the last marks; the panel shows the server's errors
        }
      } while (this._again && !this.panel.isDisposed);
    } finally {
      this._fetching = false;
    }
    this.render();
  }

  async keep(cellId: string): Promise<void> {
    this.diffs.close(cellId);
    const result = await this._call(() => this.model.api.keep(this.panel.context.path, cellId));
    this._say(cellId, result?.kept ? null : result?.message ?? null);
  }

  async undo(cellId: string): Promise<void> {
    this.diffs.close(cellId);
    const result = await this._call(() => this.model.api.undoCell(this.panel.context.path, cellId));
    const conflict = result?.conflicts?.[0]?.reason;
    const refused = conflict ?? (result && !result.reverted?.length ? result.message : null);
    const { trans } = this.model;
    const said = result?.reverted?.length
      ? trans.__('Undid %1, not the rest: %2', result.reverted.length, refused ?? '')
      : trans.__('Not undone: %1', refused ?? '');
    this._say(cellId, refused ? said : null);
  }

  /** Keep every pending change on the notebook, or those of the agent so named; why not, if refused. */
  async keepAll(agent?: string): Promise<string | null> {
    const { api } = this.model;
    const ids = this._entries.filter(e => e.review?.state === 'pending' && this._agentOf(e).name === agent);
    const result = await this._call(() =>
      agent === undefined ? api.keep(this.panel.context.path) : api.keepEntries(ids.map(e => e.id))
    );
    void this.refresh();
    return result?.kept ? null : result?.message ?? null;
  }

  /**
   * Undo every pending change on the notebook (or one agent's), newest first, to the first refused;
   * what stopped it, if anything did.
   */
  async undoAll(agent?: string): Promise<string | null> {
    const todo = this._entries.filter(
      e => e.review?.state === 'pending' && e.revertible && (agent === undefined || this._agentOf(e).name === agent)
    );
    let undone = 0;
    let refused: string | null = null;
    for (const entry of todo) {
      const result = await this._call(() => this.model.api.revertEntry(entry.id));
      if (!result?.reverted?.length) {
        refused = result?.conflicts?.[0]?.reason ?? this.model.trans.__('the server refused it');
        break;
      }
      undone += 1;
    }
    await this.refresh();
    return refused ? this.model.trans.__('Undid %1; stopped at a change it cannot undo: %2', undone, refused) : null;
  }

  /** Make the next cell waiting for review (after the active one) active, and show it. */
  async next(): Promise<void> {
    const cells = this.panel.content.widgets;
    const start = this.panel.content.activeCellIndex;
    for (let step = 1; step <= cells.length; step++) {
      const index = (start + step) % cells.length;
      if (this.pending.has(cells[index].model.id)) {
        this.panel.content.activeCellIndex = index;
        await this.panel.content.scrollToCell(cells[index], 'center');
        return;
      }
    }
  }

  dispose(): void {
    this.model.journalChanged.disconnect(this.refresh, this);
    this.model.journalEntry.disconnect(this._onEntry, this);
    this.model.changed.disconnect(this.render, this);
    this.diffs.dispose();
    Signal.clearData(this);
  }

  /** Open or close the inline diff of a cell (`mergeview.ts`). */
  async showDiff(cellId: string): Promise<void> {
    const cell = this.panel.content.widgets.find(c => c.model.id === cellId);
    const message = cell ? await this.diffs.toggle(cell, cellId) : null;
    this._say(cellId, message);
  }

  render(): void {
    if (this.panel.isDisposed) {
      return;
    }
    this.pending = this._pendingByCell();
    this.diffs.closeAllBut(this.pending);
    for (const cell of this.panel.content.widgets) {
      const id = cell.model.id;
      const review = this.pending.get(id);
      const old = cell.node.querySelector(`:scope > .${REVIEW}`);
      const message = this._messages.get(id);
      const diff = this.diffs.isOpen(id);
      const key = review
        ? JSON.stringify([[...review.agents.values()], review.how, review.newest, message, diff, this._compact])
        : '';
      if ((old as HTMLElement | null)?.dataset.key === key && !!old === !!review) {
        continue; // unchanged: keep the node (and a button's focus)
      }
      old?.remove();
      cell.toggleClass(REVIEWED, !!review);
      if (!review) {
        cell.node.style.removeProperty('--jp-mcp-review-color');
        this._messages.delete(id);
        continue;
      }
      cell.node.style.setProperty('--jp-mcp-review-color', [...review.agents.values()][0].color);
      // Under the cell's source, over its outputs: an agent's cursor label sits above its caret's line.
      const input = cell.node.querySelector(':scope > .jp-Cell-inputWrapper');
      cell.node.insertBefore(this._cellMark(id, review, key), input?.nextSibling ?? null);
    }
    this.deleted.render(this._entries);
    this._rendered.emit();
  }

  /** An entry from the journal's event: merged into the marks at once (its texts, if read, kept). */
  private _onEntry(_: McpModel, summary: IEntrySummary): void {
    if (summary.path !== this.panel.context.path || this.panel.isDisposed) {
      return;
    }
    if (summary.more_changes > 0) {
      void this.refresh(); // too many changes for an event: read them
      return;
    }
    const at = this._entries.findIndex(e => e.id <= summary.id);
    const old = this._entries[at]?.id === summary.id ? this._entries[at] : undefined;
    const texts = new Map((old?.changes ?? []).map(c => [`${c.kind}|${c.cell_id}`, c]));
    const cells: { [cell: string]: { user: string; name: string } } = {};
    summary.review?.cells.forEach(cell => (cells[cell] = old?.review?.cells[cell] ?? { user: '', name: '' }));
    const entry: IEntry = {
      ...old,
      id: summary.id,
      time: summary.time,
      agent: summary.agent,
      client: summary.client,
      user: old?.user ?? '',
      tool: summary.tool,
      path: summary.path,
      outcome: old?.outcome ?? 'ok',
      revertible: summary.revertible,
      reverted: summary.review?.state === 'undone',
      review: summary.review && { state: summary.review.state, by: old?.review?.by ?? null, cells },
      changes: summary.changes.map(c => {
        const read = texts.get(`${c.kind}|${c.cell_id}`);
        return { ...c, before: read?.before ?? null, after: read?.after ?? null };
      })
    };
    // newest first, as the journal route answers, and as many as it answers
    this._entries.splice(at < 0 ? this._entries.length : at, old ? 1 : 0, entry);
    this._entries.length = Math.min(this._entries.length, ENTRIES_KEPT);
    this.render();
  }

  private _cellMark(id: string, review: ICellReview, key: string): HTMLElement {
    const { trans } = this.model;
    const mark = document.createElement('div');
    mark.className = REVIEW;
    mark.classList.toggle('jp-mcp-mod-compact', this._compact);
    mark.dataset.key = key;
    mark.dataset.how = review.how;
    mark.setAttribute('role', 'group');
    const who = names(trans, review.agents.values());
    const said = {
      added: trans.__('added by %1', who),
      changed: trans.__('%1 changed this', who),
      ran: trans.__('ran by %1', who)
    }[review.how];
    const label = {
      added: trans.__('Agent change to review: %1 added this', who),
      changed: trans.__('Agent change to review: %1 changed this', who),
      ran: trans.__('Agent change to review: %1 ran this', who)
    }[review.how];
    mark.setAttribute('aria-label', label);
    const text = document.createElement('span');
    text.className = 'jp-mcp-ReviewText';
    // compact: the agent alone (its colour at the cell's edge says the rest); the label keeps it all
    text.textContent = this._compact ? who : said;
    text.title = this._compact ? `${said} · ${hhmm(review.newest)}` : '';
    const sep = this._compact ? ' ' : ' · ';
    mark.append(text);
    if (!this._compact) {
      const when = document.createElement('span');
      when.textContent = ` · ${hhmm(review.newest)}`;
      mark.append(when);
    }
    mark.append(sep);
    if (review.how !== 'ran') {
      const open = this.diffs.isOpen(id);
      const caption = open ? trans.__('Hide the diff of this cell') : trans.__('Show the agent change in this cell as a diff');
      const diff = reviewButton(open ? trans.__('Hide diff') : trans.__('Show diff'), caption, () => void this.showDiff(id));
      diff.setAttribute('aria-pressed', String(open));
      mark.append(diff, sep);
      mark.append(reviewButton(trans.__('Undo'), trans.__('Undo the agent change in this cell'), () => void this.undo(id)), sep);
    }
    mark.append(reviewButton(trans.__('Keep'), trans.__('Keep the agent change in this cell'), () => void this.keep(id)));
    const message = this._messages.get(id);
    if (message) {
      const alert = document.createElement('span');
      alert.className = 'jp-mcp-ReviewRefused';
      alert.setAttribute('role', 'alert');
      alert.textContent = message;
      mark.append(alert);
    }
    return mark;
  }

  /** Every cell with a change no person kept or undid yet. */
  private _pendingByCell(): Map<string, ICellReview> {
    const cells = new Map<string, ICellReview>();
    for (const entry of [...this._entries].reverse()) {
      // oldest first: agents are named in the order they changed the cell
      const review = entry.review;
      if (review?.state !== 'pending') {
        continue;
      }
      const agent = this._agentOf(entry);
      for (const change of entry.changes ?? []) {
        const id = change.cell_id;
        if (!id || change.kind === 'delete' || change.kind === 'file' || review.cells[id] || review.cells['*']) {
          continue;
        }
        const cell = cells.get(id) ?? { agents: new Map(), how: 'ran', newest: entry.time };
        cell.agents.set(agent.name, cell.agents.get(agent.name) ?? agent);
        const how = change.kind === 'insert' ? 'added' : change.kind === 'outputs' ? 'ran' : 'changed';
        if (how === 'added' || (how === 'changed' && cell.how === 'ran')) {
          cell.how = how;
        }
        cell.newest = entry.time;
        cells.set(id, cell);
      }
    }
    return cells;
  }

  /** Who made a change, as the person knows it: the session's client title or name, and its colour. */
  private _agentOf(entry: IEntry): { name: string; color: string } {
    const session = this.model.agent(entry.agent);
    if (session) {
      // remembered for when it has gone: its marks keep the name and colour the person saw
      if (SEEN.size > 1000) {
        SEEN.clear();
      }
      SEEN.set(entry.agent, { name: agentName(session), color: session.color || 'var(--jp-brand-color1)' });
    }
    return SEEN.get(entry.agent) ?? { name: entry.client || entry.agent, color: 'var(--jp-brand-color1)' };
  }

  /** A call from a button: a failure is a message, not a throw; the marks follow the server's event. */
  private async _call<T>(call: () => Promise<T>): Promise<(T & { message?: string }) | null> {
    try {
      return (await call()) as T & { message?: string };
    } catch (error) {
      return { message: error instanceof Error ? error.message : String(error) } as T & { message?: string };
    }
  }

  private _say(cellId: string, message: string | null): void {
    if (message) {
      this._messages.set(cellId, message);
    } else {
      this._messages.delete(cellId);
    }
    void this.refresh();
  }

  /** The placeholders of cells agents deleted. */
  readonly deleted: DeletedCells;
  readonly diffs = new CellDiffs(
    this.model.api,
    () => this.panel.context.path,
    () => this.render(),
    this.model.trans
  );
  private _entries: IEntry[] = [];
  private _messages = new Map<string, string>();
  private _compact = false;
  private _rendered = new Signal<this, void>(this);
  private _fetching = false;
  private _again = false;
}
