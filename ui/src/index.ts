/**
 * jupyter-mcp-ext's JupyterLab plugins, one per job: the model (shared as `IMcpModel`), the panel,
 * the cell marks (sharing each notebook's review as `IMcpReviews`), the review bar, the status bar,
 * the commands and the approval notifications. State lives in `model.ts`, server calls in `api.ts`,
 * rendering in the views. Each works in JupyterLab and in Jupyter Notebook 7.
 */
import { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { cellMarksPlugin } from './plugins/cellmarks';
import { commandsPlugin } from './plugins/commands';
import { modelPlugin } from './plugins/model';
import { notificationsPlugin } from './plugins/notifications';
import { panelPlugin } from './plugins/panel';
import { reviewBarPlugin } from './plugins/reviewbar';
import { statusBarPlugin } from './plugins/statusbar';

export { IMcpModel, IMcpReviews } from './tokens';

const plugins: JupyterFrontEndPlugin<any>[] = [
  modelPlugin,
  panelPlugin,
  cellMarksPlugin,
  reviewBarPlugin,
  statusBarPlugin,
  commandsPlugin,
  notificationsPlugin
];

export default plugins;
