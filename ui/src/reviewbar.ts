/**
 * The review bar over a notebook: how many cells agents changed or deleted that nobody reviewed yet,
 * by whom, since when, with Keep all / Undo all (and per agent when several). It follows the
 * notebook's review (`reviewmarks.ts`), so it shows whether or not the cell marks do.
 */
import { BoxLayout, Widget } from '@lumino/widgets';

import { names, ReviewMarks } from './reviewmarks';
import { hhmm, reviewButton } from './views/format';
import { visibleText } from './views/visible';

export class ReviewBar extends Widget {
  constructor(readonly marks: ReviewMarks) {
    super();
    const { trans } = marks.model;
    this.addClass('jp-mcp-ReviewBar');
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', trans.__('Agent changes to review'));
    this.hide();
    const layout = marks.panel.layout as BoxLayout;
    layout.insertWidget(1, this); // under the notebook's toolbar
    BoxLayout.setStretch(this, 0);
    marks.rendered.connect(this.render, this);
    marks.panel.disposed.connect(() => this.dispose());
    this.render();
  }

  render(): void {
    if (this.isDisposed) {
      return;
    }
    const { marks } = this;
    const { trans } = marks.model;
    const agents = new Set<string>(); // the agents of the changes the marks show, by name
    marks.pending.forEach(review => review.agents.forEach(agent => agents.add(agent.name)));
    marks.deleted.agents.forEach(name => agents.add(name));
    const deleted = marks.deleted.count;
    const since = marks.pendingEntries.map(e => e.time).sort()[0];
    const key = JSON.stringify([marks.pending.size, deleted, [...agents], since, this._message]);
    if (this.node.dataset.key === key) {
      return; // unchanged: keep the buttons (and their focus)
    }
    const node = this.node;
    node.dataset.key = key;
    node.textContent = '';
    const waiting = marks.pending.size > 0 || deleted > 0;
    this.setHidden(!waiting && !this._message);
    const count = document.createElement('span');
    count.className = 'jp-mcp-ReviewCount';
    const what = [
      ...(marks.pending.size ? [trans._n('%1 cell changed', '%1 cells changed', marks.pending.size)] : []),
      ...(deleted ? [trans._n('%1 cell deleted', '%1 cells deleted', deleted)] : [])
    ].join(', ');
    const who = names(trans, [...agents].map(name => ({ name })));
    count.textContent = waiting ? trans.__('%1 by %2 since %3', what, who, hhmm(since ?? '')) : '';
    node.append(count);
    if (waiting) {
      node.append(
        reviewButton(trans.__('Keep all'), trans.__('Keep all agent changes in this notebook'), () =>
          this._say(marks.keepAll())
        ),
        reviewButton(trans.__('Undo all'), trans.__('Undo all agent changes in this notebook'), () =>
          this._say(marks.undoAll())
        )
      );
    }
    if (agents.size > 1) {
      agents.forEach(name => {
        const shown = visibleText(name);
        const group = document.createElement('span');
        group.className = 'jp-mcp-ReviewAgent';
        group.setAttribute('role', 'group');
        group.setAttribute('aria-label', trans.__('Changes by %1', shown));
        group.append(
          `${shown}: `,
          reviewButton(trans.__('Keep'), trans.__('Keep the changes of %1', shown), () =>
            this._say(marks.keepAll(name))
          ),
          reviewButton(trans.__('Undo'), trans.__('Undo the changes of %1', shown), () =>
            this._say(marks.undoAll(name))
          )
        );
        node.append(group);
      });
    }
    if (this._message) {
      const alert = document.createElement('span');
      alert.className = 'jp-mcp-ReviewRefused';
      alert.setAttribute('role', 'alert');
      alert.textContent = this._message;
      node.append(alert);
    }
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.marks.rendered.disconnect(this.render, this);
    }
    super.dispose();
  }

  /** Shows why a Keep all or Undo all was refused (or clears it once one goes through). */
  private _say(done: Promise<string | null>): void {
    void done.then(message => {
      this._message = message;
      this.render();
    });
  }

  private _message: string | null = null;
}
