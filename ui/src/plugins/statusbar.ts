/**
 * The status bar plugin: the agents connected, and a mark while one runs or waits; a click opens the
 * panel. Jupyter Notebook 7 has no status bar: there it does nothing.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IStatusBar } from '@jupyterlab/statusbar';

import { McpModel } from '../model';
import { PANEL_ID } from '../panel';
import { McpStatus } from '../statusbar';
import { IMcpModel } from '../tokens';

export const statusBarPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-mcp-ext:status-bar',
  description: 'The MCP status bar item: agents connected, running or waiting for approval.',
  autoStart: true,
  requires: [IMcpModel],
  optional: [IStatusBar],
  activate: (app: JupyterFrontEnd, model: McpModel, statusBar: IStatusBar | null) => {
    statusBar?.registerStatusItem('jupyter-mcp-ext:status', {
      item: new McpStatus(model, () => app.shell.activateById(PANEL_ID)),
      align: 'left',
      rank: 50
    });
  }
};
