/**
 * Cells an agent deleted that nobody kept or restored yet: a collapsed placeholder where they were,
 * "<n> cell(s) deleted by <agent> · <when> · Restore · Keep". It is a node of the page only, inside
 * the cell next to the place (never a cell: it must not reach the shared document or the file, and
 * the notebook's windowed layout counts its children); the journal on the server is the truth, so
 * every person sees the same placeholders, and a reload or a restart keeps them.
 *
 * The place is the one the journal recorded (`where`): after the cell that preceded the deleted one,
 * else before the one that followed it, following deleted neighbours along; else its old index.
 */
import { NotebookPanel } from '@jupyterlab/notebook';

import { IChange, IEntry } from './api';
import { McpModel } from './model';
import { hhmm, reviewButton } from './views/format';
import { visibleText } from './views/visible';

const PLACEHOLDER = 'jp-mcp-DeletedCells';

type Agent = { name: string; color: string };

/** One placeholder: the cells one entry deleted from one place. */
interface IGroup {
  entry: IEntry;
  cells: IChange[];
  /** The live cell it sits in, and on which side of it; null: an empty notebook. */
  anchor: string | null;
  side: 'after' | 'before';
}

/** The placeholders of one notebook, redrawn from the journal entries the review marks hold. */
export class DeletedCells {
  constructor(
    readonly panel: NotebookPanel,
    readonly model: McpModel,
    readonly agentOf: (entry: IEntry) => Agent,
    readonly refresh: () => Promise<void>
  ) {}

  /** How many deleted cells wait for review, and the agents (by name) that deleted them. */
  count = 0;
  agents = new Set<string>();

  render(entries: IEntry[]): void {
    const live = new Map<string, number>();
    this.panel.content.widgets.forEach((cell, i) => live.set(cell.model.id, i));
    const groups = this._groups(entries, live);
    this.count = groups.reduce((n, g) => n + g.cells.length, 0);
    this.agents = new Set(groups.map(g => this.agentOf(g.entry).name));
    const wanted = new Map(groups.map(g => [this._key(g), g]));
    const root = this.panel.content.node;
    root.querySelectorAll(`.${PLACEHOLDER}`).forEach(node => {
      const key = (node as HTMLElement).dataset.key ?? '';
      const where = (node as HTMLElement).dataset.where ?? '';
      const group = wanted.get(key);
      if (group && where === this._where(group) && node.isConnected) {
        wanted.delete(key); // unchanged and in place: kept (and a button's focus with it)
      } else {
        node.remove();
      }
    });
    wanted.forEach((group, key) => this._place(this._node(group, key), group));
  }

  /** Pending deletions, oldest first, grouped by entry and place. */
  private _groups(entries: IEntry[], live: Map<string, number>): IGroup[] {
    const deleted = new Map<string, IChange>();
    const pending: [IEntry, IChange][] = [];
    for (const entry of [...entries].reverse()) {
      const review = entry.review;
      for (const change of entry.changes ?? []) {
        if (change.kind !== 'delete' || !change.where || !change.cell_id) {
          continue;
        }
        deleted.set(change.cell_id, change);
        const settled = review?.state !== 'pending' || review.cells['*'] || review.cells[change.cell_id];
        if (!settled && !live.has(change.cell_id)) {
          pending.push([entry, change]);
        }
      }
    }
    const groups = new Map<string, IGroup>();
    for (const [entry, change] of pending) {
      const { anchor, side } = this._anchor(change, deleted, live);
      const key = `${entry.id}|${anchor}|${side}`;
      const group = groups.get(key) ?? { entry, cells: [], anchor, side };
      group.cells.push(change);
      groups.set(key, group);
    }
    return [...groups.values()];
  }

  /** The live cell a deleted one sits by: its neighbour, or the neighbour's (if deleted too), or by index. */
  private _anchor(
    change: IChange,
    deleted: Map<string, IChange>,
    live: Map<string, number>
  ): { anchor: string | null; side: 'after' | 'before' } {
    for (const side of ['after', 'before'] as const) {
      const seen = new Set<string>();
      let id = change.where?.[side] ?? null;
      while (id && !live.has(id) && deleted.has(id) && !seen.has(id)) {
        seen.add(id);
        id = deleted.get(id)?.where?.[side] ?? null;
      }
      if (id && live.has(id)) {
        return { anchor: id, side };
      }
    }
    const cells = this.panel.content.widgets;
    if (!cells.length) {
      return { anchor: null, side: 'before' };
    }
    const index = Math.max(0, change.where?.index ?? cells.length);
    return index < cells.length
      ? { anchor: cells[index].model.id, side: 'before' }
      : { anchor: cells[cells.length - 1].model.id, side: 'after' };
  }

  private _key(group: IGroup): string {
    const cells = group.cells.map(c => c.cell_id).join(',');
    return JSON.stringify([group.entry.id, cells, this._messages.get(group.entry.id) ?? '']);
  }

  private _where(group: IGroup): string {
    return `${group.anchor}|${group.side}`;
  }

  private _place(node: HTMLElement, group: IGroup): void {
    const cell = this.panel.content.widgets.find(c => c.model.id === group.anchor);
    if (!cell) {
      this.panel.content.node.prepend(node); // no cell left: on top of the notebook
    } else if (group.side === 'after') {
      cell.node.append(node);
    } else {
      cell.node.prepend(node);
    }
  }

  private _node(group: IGroup, key: string): HTMLElement {
    const agent = this.agentOf(group.entry);
    const who = visibleText(agent.name);
    const node = document.createElement('div');
    node.className = PLACEHOLDER;
    node.dataset.key = key;
    node.dataset.where = this._where(group);
    node.dataset.side = group.side;
    node.style.setProperty('--jp-mcp-review-color', agent.color);
    node.setAttribute('role', 'group');
    const { trans } = this.model;
    const said = trans._n('A cell deleted by %2', '%1 cells deleted by %2', group.cells.length, who);
    node.setAttribute('aria-label', trans.__('%1, to review', said));
    const text = document.createElement('span');
    text.className = 'jp-mcp-ReviewText';
    text.textContent = said;
    const preview = group.cells.map(c => (c.before ?? '').split('\n')[0]).filter(Boolean);
    if (preview.length) {
      text.title = preview.join('\n'); // each cell's first line, once the journal was read
    }
    const when = document.createElement('span');
    when.textContent = ` · ${hhmm(group.entry.time)} · `;
    node.append(text, when);
    if (group.entry.revertible) {
      node.append(reviewButton(trans.__('Restore'), trans.__('Restore the deleted cells here'), () => void this.restore(group)), ' · ');
    }
    node.append(reviewButton(trans.__('Keep'), trans.__('Keep the cells deleted'), () => void this.keep(group)));
    const message = this._messages.get(group.entry.id);
    if (message) {
      const alert = document.createElement('span');
      alert.className = 'jp-mcp-ReviewRefused';
      alert.setAttribute('role', 'alert');
      alert.textContent = message;
      node.append(alert);
    }
    return node;
  }

  /** The entry's three-way revert: the cells come back where the journal says they were. */
  async restore(group: IGroup): Promise<void> {
    let refused: string | null = null;
    try {
      const result = await this.model.api.revertEntry(group.entry.id);
      refused = result.reverted.length ? null : result.conflicts[0]?.reason ?? this.model.trans.__('the server refused it');
    } catch (error) {
      refused = error instanceof Error ? error.message : String(error);
    }
    this._say(group.entry.id, refused ? this.model.trans.__('Not restored: %1', refused) : null);
  }

  /** Keep the deletion: the placeholder goes, for everyone. */
  async keep(group: IGroup): Promise<void> {
    const path = this.panel.context.path;
    let refused: string | null = null;
    for (const change of group.cells) {
      try {
        const result = await this.model.api.keep(path, change.cell_id);
        refused = result.kept ? refused : result.message ?? refused;
      } catch (error) {
        refused = error instanceof Error ? error.message : String(error);
      }
    }
    this._say(group.entry.id, refused);
  }

  private _say(entry: number, message: string | null): void {
    if (message) {
      this._messages.set(entry, message);
    } else {
      this._messages.delete(entry);
    }
    void this.refresh();
  }

  private _messages = new Map<number, string>();
}
