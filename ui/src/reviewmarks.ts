/**
 * The review marks of a notebook: a cell an agent changed that nobody kept or undid yet shows the
 * agent's colour at its edge and "<agent> changed this · <when> · Undo · Keep"; a review bar over the
 * notebook counts them, with Keep all / Undo all. The server's journal is the truth, shared by every
 * person: each journal event carries the entry it names, so marks follow agents and other people live
 * without a fetch; the journal is read when the notebook opens and when an event was missed. Cells an
 * agent deleted leave a placeholder where they were (`placeholders.ts`).
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { BoxLayout, Widget } from '@lumino/widgets';

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
interface ICellReview {
  /** By name: two sessions of one client are one agent to the person. */
  agents: Map<string, { name: string; color: string }>;
  /** added (an insert), changed (an edit), ran (outputs only). */
  how: 'added' | 'changed' | 'ran';
  newest: string;
}

/** `Claude Code and Cursor`: the agents of a cell, as a person reads them. */
function names(agents: Iterable<{ name: string }>): string {
  const all = [...agents].map(a => visibleText(a.name));
  return all.length > 1 ? `${all.slice(0, -1).join(', ')} and ${all[all.length - 1]}` : all[0] ?? 'an agent';
}

/** The review marks of one notebook: each pending agent change in its cell, and the review bar on top. */
export class ReviewMarks {
  constructor(
    readonly panel: NotebookPanel,
    readonly model: McpModel
  ) {
    this.deleted = new DeletedCells(panel, model, entry => this._agentOf(entry), () => this.refresh());
    this.bar.addClass('jp-mcp-ReviewBar');
    this.bar.node.setAttribute('role', 'region');
    this.bar.node.setAttribute('aria-label', 'Agent changes to review');
    this.bar.hide();
    const layout = panel.layout as BoxLayout;
    layout.insertWidget(1, this.bar); // under the notebook's toolbar
    BoxLayout.setStretch(this.bar, 0);
    model.journalChanged.connect(this.refresh, this);
    model.journalEntry.connect(this._onEntry, this);
    model.changed.connect(this.render, this); // an agent's name and colour come with the sessions
    panel.content.model?.cells.changed.connect(this.render, this);
    void panel.context.ready.then(() => this.refresh());
  }

  /** The cells waiting for review, by cell id, in notebook order. */
  pending = new Map<string, ICellReview>();

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
    const some = result?.reverted?.length ? `Undid ${result.reverted.length}, not the rest: ` : 'Not undone: ';
    this._say(cellId, refused ? `${some}${refused}` : null);
  }

  /** Keep every pending change on the notebook, or those of the agent so named. */
  async keepAll(agent?: string): Promise<void> {
    const { api } = this.model;
    const ids = this._entries.filter(e => e.review?.state === 'pending' && this._agentOf(e).name === agent);
    const result = await this._call(() =>
      agent === undefined ? api.keep(this.panel.context.path) : api.keepEntries(ids.map(e => e.id))
    );
    this._sayBar(result?.kept ? null : result?.message ?? null);
  }

  /** Undo every pending change on the notebook (or one agent's), newest first, to the first refused. */
  async undoAll(agent?: string): Promise<void> {
    const todo = this._entries.filter(
      e => e.review?.state === 'pending' && e.revertible && (agent === undefined || this._agentOf(e).name === agent)
    );
    let undone = 0;
    let refused: string | null = null;
    for (const entry of todo) {
      const result = await this._call(() => this.model.api.revertEntry(entry.id));
      if (!result?.reverted?.length) {
        refused = result?.conflicts?.[0]?.reason ?? 'the server refused it';
        break;
      }
      undone += 1;
    }
    this._sayBar(refused ? `Undid ${undone}; stopped at a change it cannot undo: ${refused}` : null);
    await this.refresh();
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
      const key = review ? JSON.stringify([[...review.agents.values()], review.how, review.newest, message, diff]) : '';
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
    this._renderBar();
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
    const mark = document.createElement('div');
    mark.className = REVIEW;
    mark.dataset.key = key;
    mark.dataset.how = review.how;
    mark.setAttribute('role', 'group');
    const who = names(review.agents.values());
    mark.setAttribute('aria-label', `Agent change to review: ${who} ${review.how} this`);
    const text = document.createElement('span');
    text.className = 'jp-mcp-ReviewText';
    text.textContent = review.how === 'changed' ? `${who} changed this` : `${review.how} by ${who}`;
    const when = document.createElement('span');
    when.textContent = ` · ${hhmm(review.newest)} · `;
    mark.append(text, when);
    if (review.how !== 'ran') {
      const open = this.diffs.isOpen(id);
      const label = open ? 'Hide the diff of this cell' : 'Show the agent change in this cell as a diff';
      const diff = reviewButton(open ? 'Hide diff' : 'Show diff', label, () => void this.showDiff(id));
      diff.setAttribute('aria-pressed', String(open));
      mark.append(diff, ' · ');
      mark.append(reviewButton('Undo', 'Undo the agent change in this cell', () => void this.undo(id)), ' · ');
    }
    mark.append(reviewButton('Keep', 'Keep the agent change in this cell', () => void this.keep(id)));
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

  private _renderBar(): void {
    const pending = this._entries.filter(e => e.review?.state === 'pending');
    const agents = new Set<string>(); // the agents of the changes the marks show, by name
    this.pending.forEach(review => review.agents.forEach(agent => agents.add(agent.name)));
    this.deleted.agents.forEach(name => agents.add(name));
    const deleted = this.deleted.count;
    const since = pending.map(e => e.time).sort()[0];
    const key = JSON.stringify([this.pending.size, deleted, [...agents], since, this._barMessage]);
    if (this.bar.node.dataset.key === key) {
      return; // unchanged: keep the buttons (and their focus)
    }
    const node = this.bar.node;
    node.dataset.key = key;
    node.textContent = '';
    const waiting = this.pending.size > 0 || deleted > 0;
    this.bar.setHidden(!waiting && !this._barMessage);
    const count = document.createElement('span');
    count.className = 'jp-mcp-ReviewCount';
    const cells = (n: number) => (n === 1 ? '1 cell' : `${n} cells`);
    const what = [
      ...(this.pending.size ? [`${cells(this.pending.size)} changed`] : []),
      ...(deleted ? [`${cells(deleted)} deleted`] : [])
    ].join(', ');
    const who = names([...agents].map(name => ({ name })));
    count.textContent = waiting ? `${what} by ${who} since ${hhmm(since ?? '')}` : '';
    node.append(count);
    if (waiting) {
      node.append(
        reviewButton('Keep all', 'Keep all agent changes in this notebook', () => void this.keepAll()),
        reviewButton('Undo all', 'Undo all agent changes in this notebook', () => void this.undoAll())
      );
    }
    if (agents.size > 1) {
      agents.forEach(name => {
        const group = document.createElement('span');
        group.className = 'jp-mcp-ReviewAgent';
        group.setAttribute('role', 'group');
        group.setAttribute('aria-label', `Changes by ${visibleText(name)}`);
        group.append(
          `${visibleText(name)}: `,
          reviewButton('Keep', `Keep the changes of ${visibleText(name)}`, () => void this.keepAll(name)),
          reviewButton('Undo', `Undo the changes of ${visibleText(name)}`, () => void this.undoAll(name))
        );
        node.append(group);
      });
    }
    if (this._barMessage) {
      const alert = document.createElement('span');
      alert.className = 'jp-mcp-ReviewRefused';
      alert.setAttribute('role', 'alert');
      alert.textContent = this._barMessage;
      node.append(alert);
    }
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

  private _sayBar(message: string | null): void {
    this._barMessage = message;
    void this.refresh();
  }

  readonly bar = new Widget();
  /** The placeholders of cells agents deleted. */
  readonly deleted: DeletedCells;
  readonly diffs = new CellDiffs(
    this.model.api,
    () => this.panel.context.path,
    () => this.render()
  );
  private _entries: IEntry[] = [];
  private _messages = new Map<string, string>();
  private _barMessage: string | null = null;
  private _fetching = false;
  private _again = false;
}
