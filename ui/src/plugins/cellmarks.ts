/**
 * The cell marks plugin: in each open notebook, the agent working in a cell and the agent changes
 * waiting for review (`IMcpReviews`, which the review bar and the commands read). The person's
 * settings turn the marks off (the review goes on: the bar and the panel still show it) or make
 * them compact.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { Signal } from '@lumino/signaling';

import { markAgentCells } from '../cellmarks';
import { McpModel } from '../model';
import { ReviewMarks } from '../reviewmarks';
import { IMcpModel, IMcpReviews } from '../tokens';

const PLUGIN_ID = 'jupyter-mcp-ext:cell-marks';
/** On a notebook panel whose marks the person turned off: the stylesheet hides them. */
export const MARKS_OFF = 'jp-mcp-mod-marksOff';

/** The settings of `schema/cell-marks.json`, as the plugin reads them. */
interface IMarkSettings {
  marks: boolean;
  compact: boolean;
}

class Reviews implements IMcpReviews {
  readonly added: Signal<IMcpReviews, ReviewMarks> = new Signal<IMcpReviews, ReviewMarks>(this);

  get(panel: NotebookPanel | null | undefined): ReviewMarks | undefined {
    return panel ? this._marks.get(panel) : undefined;
  }

  all(): ReviewMarks[] {
    return [...this._marks.values()];
  }

  add(marks: ReviewMarks): void {
    this._marks.set(marks.panel, marks);
    marks.panel.disposed.connect(() => {
      this._marks.delete(marks.panel);
      marks.dispose();
    });
    this.added.emit(marks);
  }

  private _marks = new Map<NotebookPanel, ReviewMarks>();
}

export const cellMarksPlugin: JupyterFrontEndPlugin<IMcpReviews> = {
  id: PLUGIN_ID,
  description: 'Marks in the notebook: where an agent works, and its changes waiting for review.',
  autoStart: true,
  provides: IMcpReviews,
  requires: [IMcpModel, INotebookTracker],
  optional: [ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    model: McpModel,
    notebooks: INotebookTracker,
    registry: ISettingRegistry | null
  ): IMcpReviews => {
    const reviews = new Reviews();
    const settings: IMarkSettings = { marks: true, compact: false };
    const apply = (marks: ReviewMarks) => {
      marks.panel.toggleClass(MARKS_OFF, !settings.marks);
      marks.compact = settings.compact;
    };
    const track = (panel: NotebookPanel) => {
      markAgentCells(panel, model.trans);
      const marks = new ReviewMarks(panel, model);
      apply(marks);
      reviews.add(marks);
    };
    notebooks.widgetAdded.connect((_, panel) => track(panel));
    notebooks.forEach(track);
    if (registry) {
      void registry.load(PLUGIN_ID).then(
        loaded => {
          const read = () => {
            settings.marks = loaded.get('marks').composite !== false;
            settings.compact = loaded.get('compact').composite === true;
            reviews.all().forEach(apply);
          };
          loaded.changed.connect(read);
          read();
        },
        error => console.error(`jupyter-mcp-ext: the cell marks' settings did not load: ${error}`)
      );
    }
    return reviews;
  }
};
