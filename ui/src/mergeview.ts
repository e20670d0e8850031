/**
 * The inline diff of a cell an agent changed ("Show diff" on its review mark): the cell's own editor
 * becomes a unified merge view (`@codemirror/merge`) against the cell's text without the agents'
 * pending changes (the server's `review/diff`, which keeps what people typed since on both sides).
 * The person goes on typing in it (what they type outside the agent's chunks goes into both sides, so
 * it is never a chunk to review); Accept on a chunk keeps the agent's text there, Reject puts the
 * original back through the editor, so it reaches the shared document (and the journal) as the
 * person's own edit. It closes when every chunk is settled, or on Keep, Undo or Hide diff.
 */
import { Chunk, getChunks, getOriginalDoc, originalDocChangeEffect, unifiedMergeView } from '@codemirror/merge';
import { ChangeSet, Compartment, EditorState, Extension, Transaction } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { Cell } from '@jupyterlab/cells';
import { CodeMirrorEditor } from '@jupyterlab/codemirror';
import { TranslationBundle } from '@jupyterlab/translation';

import { McpApi } from './api';

/** The merge view's place in each editor: injected once, reconfigured to open and close. */
const SLOTS = new WeakMap<EditorView, Compartment>();

function slotOf(editor: CodeMirrorEditor): Compartment {
  let slot = SLOTS.get(editor.editor);
  if (!slot) {
    slot = new Compartment();
    editor.injectExtension(slot.of([]));
    SLOTS.set(editor.editor, slot);
  }
  return slot;
}

/** A chunk's Accept or Reject, named for a screen reader, working from the keyboard too. */
function control(
  trans: TranslationBundle,
  type: 'accept' | 'reject',
  action: (e: MouseEvent) => void
): HTMLElement {
  const node = document.createElement('button');
  node.type = 'button';
  node.name = type;
  node.className = `jp-mcp-DiffButton jp-mod-${type}`;
  node.textContent = type === 'accept' ? trans.__('Accept') : trans.__('Reject');
  node.setAttribute(
    'aria-label',
    type === 'accept'
      ? trans.__("Accept this chunk: keep the agent's text")
      : trans.__('Reject this chunk: put the text before back')
  );
  node.onmousedown = action; // as the merge view's own buttons: before the editor takes the focus
  node.onkeydown = event => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      action(new MouseEvent('mousedown'));
    }
  };
  return node;
}

/**
 * The person's own typing outside the agent's chunks, made on the original side too: it is theirs, not
 * a change to review. Typing inside a chunk, and edits from others (remote: no user event), stay in
 * the diff. Chunk positions are those before the transaction.
 */
const typingOnBothSides = EditorState.transactionExtender.of(tr => {
  const event = tr.annotation(Transaction.userEvent);
  const chunks = getChunks(tr.startState)?.chunks;
  if (!tr.docChanged || !event || event === 'revert' || event === 'accept' || !chunks) {
    return null;
  }
  const inside = (from: number, to: number) =>
    chunks.some(c => (from < c.endB && to > c.fromB) || (from === to && from > c.fromB && from < c.endB));
  const toA = (pos: number) => {
    let before: Chunk | undefined;
    chunks.forEach(c => (c.endB <= pos ? (before = c) : null));
    return before ? pos - before.endB + before.endA : pos;
  };
  const specs: { from: number; to: number; insert: string }[] = [];
  let touches = false;
  tr.changes.iterChanges((fromB, toB, _from, _to, inserted) => {
    touches ||= inside(fromB, toB);
    specs.push({ from: toA(fromB), to: toA(toB), insert: inserted.toString() });
  });
  if (touches) {
    return null;
  }
  const changes = ChangeSet.of(specs, getOriginalDoc(tr.startState).length, tr.startState.lineBreak);
  return { effects: originalDocChangeEffect(tr.startState, changes) };
});

/** The open merge views of one notebook, by cell id. */
export class CellDiffs {
  constructor(
    readonly api: McpApi,
    readonly path: () => string,
    readonly changed: () => void,
    readonly trans: TranslationBundle
  ) {}

  isOpen(cellId: string): boolean {
    return this._open.has(cellId);
  }

  /** Open the cell's diff, or close it when open; a message when it cannot be shown. */
  async toggle(cell: Cell, cellId: string): Promise<string | null> {
    if (this.isOpen(cellId)) {
      this.close(cellId);
      return null;
    }
    const editor = cell.editor as CodeMirrorEditor | null;
    if (!editor?.editor) {
      return this.trans.__('The cell is not shown yet: scroll to it and try again.');
    }
    let diff;
    try {
      diff = await this.api.reviewDiff(this.path(), cellId);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
    if (diff.message !== undefined || cell.isDisposed) {
      return diff.message ?? null;
    }
    this.close(cellId);
    const view = editor.editor;
    view.dispatch({ effects: slotOf(editor).reconfigure(this._mergeView(cellId, diff.original)) });
    this._open.set(cellId, view);
    this.changed();
    if (!getChunks(view.state)?.chunks.length) {
      this.close(cellId);
      return this.trans.__('No difference left to show: the text is as it was before the agent changed it.');
    }
    return diff.exact ? null : this.trans.__('People edited the agent’s text since: the diff shows their edits too.');
  }

  close(cellId: string): void {
    const view = this._open.get(cellId);
    if (!view) {
      return;
    }
    this._open.delete(cellId);
    const slot = SLOTS.get(view);
    try {
      view.dispatch({ effects: slot!.reconfigure([]) });
    } catch {
      // the cell's editor is gone (the cell deleted or the notebook closed): nothing to close
    }
    this.changed();
  }

  /** Close the diffs of cells no longer waiting for review (kept or undone, here or by someone else). */
  closeAllBut(pending: { has(cellId: string): boolean }): void {
    [...this._open.keys()].filter(id => !pending.has(id)).forEach(id => this.close(id));
  }

  dispose(): void {
    [...this._open.keys()].forEach(id => this.close(id));
  }

  private _mergeView(cellId: string, original: string): Extension {
    return [
      unifiedMergeView({ original, mergeControls: (type, action) => control(this.trans, type, action), gutter: true, syntaxHighlightDeletions: true }),
      typingOnBothSides,
      EditorView.editorAttributes.of({ class: 'jp-mcp-mod-diffOpen' }),
      EditorView.updateListener.of(update => {
        // every chunk accepted or rejected: nothing left to review here, so the editor is itself again
        if (this._open.get(cellId) === update.view && !getChunks(update.state)?.chunks.length) {
          setTimeout(() => this._open.get(cellId) === update.view && this.close(cellId));
        }
      })
    ];
  }

  private _open = new Map<string, EditorView>();
}
